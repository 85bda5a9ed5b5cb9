"""The mapping modules import no Batch SDK (nor azure-core, nor anything of azure.cli beyond what importing the
extension's package itself does), so a `--scheduler processes` service never pays for them."""
import subprocess
import sys

MODULES = ['errors', 'names', 'pools', 'priority', 'images', 'vm_sizes', 'quota', 'tasks', 'node_wrapper', 'states']


def test_importing_the_mapping_imports_no_sdk():
    code = ('import sys\nimport azext_batchai_sweep.localservice.schedulers.scheduler\nbefore = set(sys.modules)\n' +
            ''.join('import azext_batchai_sweep.localservice.schedulers.azurebatch.{}\n'.format(m) for m in MODULES) +
            'print(sorted(m for m in set(sys.modules) - before if not m.startswith("azext_batchai_sweep")))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    added = eval(out)  # pylint: disable=eval-used  # a list of module names printed by the child
    assert not [m for m in added if m.startswith(('azure', 'msrest', 'knack', 'requests'))], added
