"""The tests' az runs forked from tests/az_fork.py's server answer as the `az` executable does.

Each test here runs the same command both ways (the executable as a user starts it, and AzRunner, which forks) and
compares what a script sees: the exit code, stdout and stderr, byte for byte once decoded.
"""
import os
import subprocess
import time

import pytest

from tests.fixtures_az import AZ, AzRunner, base_env, fork_server, service_az, service_env

pytestmark = [pytest.mark.az]

SWEEP = '''jobNamePrefix: fork
parameters:
  - {{name: X, type: discrete, values: {values}}}
job: {{"nodeCount": 1, "stdOutErrPathPrefix": "$AZ_BATCHAI_MOUNT_ROOT/logs",
      "customToolkitSettings": {{"commandLine": "{command}"}}}}
'''


def executable(runner, *args, cwd=None, env=None):
    """`az ARGS` as the executable, with the runner's config dir and environment."""
    proc = subprocess.run([AZ, *args], capture_output=True, text=True, check=False, timeout=300,
                          env=base_env(runner.config_dir, {**runner.env, **(env or {})}), cwd=cwd or runner.cwd)
    return proc.returncode, proc.stdout, proc.stderr


def forked(runner, *args, cwd=None, env=None):
    result = runner(*args, cwd=cwd, env=env)
    return result.exit_code, result.stdout, result.stderr


def write_sweep(directory, values, command='echo x={{X}}'):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, 'sweep.yaml'), 'w', encoding='utf-8') as f:
        f.write(SWEEP.format(values=list(values), command=command))


@pytest.fixture
def runner(local_service, tmp_path):
    assert fork_server() is not None, 'the az fork server did not start (see the test output)'
    return service_az(local_service, str(tmp_path))


def target(service, experiment, name):
    return ['-g', service.resource_group, '-w', service.workspace, '-e', experiment, '-n', name]


@pytest.mark.parametrize('args', [
    ('batchai', 'sweep', 'status', '--query', 'jobs[].name'),        # exit 3: no such sweep, an error on stderr
    ('batchai', 'sweep', 'status', '--no-such-option'),             # exit 2: argparse's error and usage
    ('batchai', 'sweep', 'run', '--spec', 'sweep.yaml', '-c', 'local', '--plan-only', '-o', 'table'),  # exit 0
    ('batchai', 'sweep', 'run', '--spec', 'missing.yaml', '-c', 'local', '--plan-only'),   # exit 6, bad input
])
def test_a_forked_run_answers_as_the_executable(runner, local_service, args):
    write_sweep(runner.cwd, (1, 2, 3))
    full = (*args[:3], *target(local_service, 'fork', 'same'), *args[3:])
    assert forked(runner, *full) == executable(runner, *full)


def test_each_run_has_its_own_environment_and_directory(runner, local_service, tmp_path):
    write_sweep(str(tmp_path / 'a'), (1, 2))
    write_sweep(str(tmp_path / 'b'), (7, 8, 9))
    plan = ('batchai', 'sweep', 'run', *target(local_service, 'fork', 'dirs'), '--spec', 'sweep.yaml', '-c', 'local',
            '--plan-only')
    in_b = runner(*plan, '--query', 'length(firstJobs)', cwd=str(tmp_path / 'b'))
    in_a = runner(*plan, '--query', 'length(firstJobs)', cwd=str(tmp_path / 'a'))
    assert (in_a.exit_code, in_b.exit_code) == (0, 0), in_a.stderr + in_b.stderr
    assert (in_a.json(), in_b.json()) == (2, 3)  # each run read the sweep file of its own directory
    # An environment variable of one run is not in the next one's (az reads its output format from it).
    as_yaml = runner(*plan, cwd=str(tmp_path / 'a'), env={'AZURE_CORE_OUTPUT': 'yaml'})
    again = runner(*plan, cwd=str(tmp_path / 'a'))
    assert as_yaml.stdout.startswith('earlyTermination: ') and again.stdout.startswith('{')


def test_a_run_past_its_timeout_is_killed(runner, local_service):
    write_sweep(runner.cwd, (1,), command='sleep 120')
    args = ('batchai', 'sweep', 'run', *target(local_service, 'fork', 'slow'), '--spec', 'sweep.yaml', '-c', 'local',
            '--poll-interval', '0.5')
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        runner(*args, timeout=8)
    assert time.monotonic() - started < 60
    with pytest.raises(ProcessLookupError):  # killed and reaped, as subprocess.run leaves a timed-out child
        os.kill(fork_server().last_pid, 0)
    runner('batchai', 'sweep', 'stop', *target(local_service, 'fork', 'slow'), '--yes')


def test_what_python_reads_at_start_up_goes_to_the_executable(local_service, tmp_path):
    server = fork_server()
    assert server is not None
    config = str(tmp_path / 'config')
    os.makedirs(config)
    env = base_env(config, service_env(local_service))
    from tests import az_fork
    from tests.fixtures_az import VENV_BIN
    plain = az_fork.executable_env(env, VENV_BIN)
    assert server.can_run(plain)  # a test's own config dir, service, extension source: forked
    assert server.can_run({**plain, 'AZURE_CORE_OUTPUT': 'tsv', 'AZURE_EXTENSION_DIR': str(tmp_path)})
    for name in server.kept:  # what a preloaded library read while imported (HOME, for knack's default dir)
        assert not server.can_run({**plain, name: str(tmp_path)}), name
    for name, value in (('PYTHONHASHSEED', '7'), ('PYTHONIOENCODING', 'latin-1'), ('LC_ALL', 'C'), ('TZ', 'UTC+5'),
                        ('PYTHONPATH', str(tmp_path))):
        assert not server.can_run({**plain, name: value}), name
    # And such a run still works, through the executable: its encoding is the one asked for.
    runner = AzRunner(config, env={**service_env(local_service), 'PYTHONIOENCODING': 'ascii:backslashreplace'},
                      cwd=str(tmp_path))
    result = runner('batchai', 'sweep', 'status', *target(local_service, 'fork', 'caf\u00e9'))
    assert result.exit_code == 6 and 'caf\\xe9' in result.stderr, result.stderr


def test_what_a_library_reads_while_imported_is_known(tmp_path, monkeypatch):
    """The server's list of variables its imports read: a module keeping AZURE_CONFIG_DIR at import is seen."""
    from tests import az_fork
    (tmp_path / 'keeps_config_dir.py').write_text("import os\nDIR = os.environ.get('AZURE_CONFIG_DIR')\n")
    (tmp_path / 'reads_nothing.py').write_text('X = 1\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(az_fork, 'PRELOAD', ('reads_nothing',))
    assert az_fork._preload() == []  # pylint: disable=protected-access
    monkeypatch.setattr(az_fork, 'PRELOAD', ('keeps_config_dir', 'PSUTIL_DEBUG_is_not_a_module'))
    assert az_fork._preload() == ['AZURE_CONFIG_DIR']  # pylint: disable=protected-access
