"""A sweep that sends a code folder (--code), shared by the e2e tests of every scheduler.

Each job writes what it sees into the `logs` share of account `codeacct`: the folder it runs from, the code dir
variable, the code's version.txt, every file it was given and the folder its own jobPreparation ran from; job X=1
fails until the file $FIXED exists (for resubmit).
"""
import json
import os

ACCOUNT = 'codeacct'
JOB_COMMAND = ('out=$AZ_BATCHAI_JOB_MOUNT_ROOT/logs/$AZ_BATCHAI_JOB_NAME.json; '
               'printf \'{"pwd": "%s", "dir": "%s", "version": "%s", "prep": "%s", "files": "%s"}\' "$(pwd)" '
               '"$AZ_BATCHAI_SWEEP_CODE_DIR" "$(cat version.txt)" "$(cat prep.txt)" '
               '"$(find . -type f ! -name prep.txt | sort | tr \'\\n\' \' \')" > "$out"; '
               'test "{{X}}" != 1 || test -e "$FIXED"')
PREPARATION = 'pwd > prep.txt'


def write_code(root, version='v1'):
    """The code folder: two kept files, files .gitignore and .sweepignore leave out, a .git folder."""
    files = {
        'run.sh': 'echo run\n', 'version.txt': version, '.gitignore': 'secret.txt\n*.log\n',
        '.sweepignore': 'data/\n', 'secret.txt': 'ignored', 'train.log': 'ignored', 'data/big.bin': 'ignored',
        '.git/HEAD': 'ref: refs/heads/main\n', 'lib/util.py': 'X = 1\n',
    }
    for relative, content in files.items():
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as f:
            f.write(content)
    return root


KEPT = ['./.gitignore', './.sweepignore', './lib/util.py', './run.sh', './version.txt']


def write_sweep(directory, fixed, values=(0, 1, 2), extra='', mount_root='$AZ_BATCHAI_JOB_MOUNT_ROOT'):
    job = {
        'nodeCount': 1,
        'stdOutErrPathPrefix': mount_root + '/logs',
        'mountVolumes': {'azureFileShares': [{
            'azureFileUrl': 'https://<AZURE_BATCHAI_STORAGE_ACCOUNT>.file.core.windows.net/logs',
            'relativeMountPath': 'logs'}]},
        'jobPreparation': {'commandLine': PREPARATION},
        'customToolkitSettings': {'commandLine': JOB_COMMAND},
        'environmentVariables': [{'name': 'FIXED', 'value': fixed}],
    }
    text = ('jobNamePrefix: code\nparameters:\n  - {{name: X, type: discrete, values: {}}}\njob: {}\n{}'
            .format(json.dumps(list(values)), json.dumps(job), extra))
    path = os.path.join(directory, 'sweep.yaml')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    return path


def seen_by_jobs(logs_dir):
    """{job name: what it wrote} of the jobs that wrote into the logs share."""
    seen = {}
    for name in sorted(os.listdir(logs_dir)):
        if name.endswith('.json'):
            with open(os.path.join(logs_dir, name), encoding='utf-8') as f:
                seen[name[:-len('.json')]] = json.load(f)
    return seen


def share_dir(data_dir, share):
    return os.path.join(data_dir, 'storage', ACCOUNT, 'shares', share)
