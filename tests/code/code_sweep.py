"""A sweep that sends a code folder (--code), shared by the e2e tests of every scheduler.

Each job writes what it sees into the `logs` share of account `codeacct`: the folder it runs from, the code dir
variable, the code's version.txt, every file it was given and the folder its own jobPreparation ran from; job X=1
fails until the file $FIXED exists (for resubmit). Each prints `loss=X`, which the report reads.
"""
import json
import os
import uuid

from azext_batchai_sweep._submission import fill_mount_credentials
from azext_batchai_sweep.core.code.snapshot import take_snapshot
from tests.fixtures_az import service_az
from tests.spec_conformance import validate

ACCOUNT = 'codeacct'
JOB_COMMAND = ('echo loss={{X}}; out=$AZ_BATCHAI_JOB_MOUNT_ROOT/logs/$AZ_BATCHAI_JOB_NAME.json; '
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


def plan_header(path):
    with open(path, encoding='utf-8') as f:
        return json.loads(f.readline())


def plan_jobs(path):
    with open(path, encoding='utf-8') as f:
        return [json.loads(line) for line in f.readlines()[1:]]


def create_submit_resubmit(service, directory):
    """The whole --code scenario on `service` (a ServiceInfo of any scheduler), working in `directory`."""
    az = service_az(service, directory)
    code = write_code(os.path.join(directory, 'src'))
    fixed = os.path.join(directory, 'fixed')
    write_sweep(directory, fixed)
    experiment = 'code-' + uuid.uuid4().hex[:8]
    args = ['-g', service.resource_group, '-w', service.workspace, '-e', experiment, '-n', 'code']
    common = ['--spec', 'sweep.yaml', '-c', service.cluster, '--storage-account-name', ACCOUNT]
    digest = take_snapshot(code).digest
    archive = os.path.join(share_dir(service.data_dir, 'sweep-code'), digest + '.tar.gz')

    planned = az('batchai', 'sweep', 'create', *args, *common, '--code', 'src', '--plan-only', '-o', 'json')
    assert planned.exit_code == 0, planned.stderr
    assert 'Would upload code snapshot {}'.format(digest[:12]) in planned.stderr
    assert 'nothing is uploaded' in planned.stderr and not os.path.exists(archive)
    header = plan_header(os.path.join(directory, 'code.plan.jsonl'))
    assert header['code']['hash'] == digest and header['code']['files'] == len(KEPT)
    assert planned.json()['code']['hash'] == digest
    for record in plan_jobs(os.path.join(directory, 'code.plan.jsonl')):
        # What submit sends (the key filled in as submit fills it) is a valid Batch AI 2018-05-01 job.
        fill_mount_credentials(record['job'], 'a2V5')
        validate('JobCreateParameters', record['job'])
        props = record['job']['properties']
        assert {'name': 'AZ_BATCHAI_SWEEP_CODE', 'value': digest} in props['environmentVariables']
        assert props['jobPreparation']['commandLine'].endswith('; pwd > prep.txt')

    # submit from that plan: the snapshot is not on the share yet, so it goes now (the folder still packs to it)
    submitted = az('batchai', 'sweep', 'submit', *args, '-o', 'json')
    assert submitted.exit_code == 0, submitted.stderr
    assert 'Uploaded code snapshot {}'.format(digest[:12]) in submitted.stderr
    assert os.path.isfile(archive)
    uploaded_at = os.stat(archive).st_mtime_ns
    # The folder changes while the sweep runs: its jobs still run the planned snapshot.
    write_code(code, version='v2')
    os.unlink(os.path.join(code, 'lib', 'util.py'))

    waited = az('batchai', 'sweep', 'status', *args, '--wait', '--interval', '0.2', '-o', 'json')
    assert waited.exit_code == 4, waited.stderr  # X=1 failed until $FIXED exists
    rows = waited.json()['jobs']
    assert len(rows) == 3 and {row['code'] for row in rows} == {digest}
    names = {row['name'] for row in rows}
    seen = {name: job for name, job in seen_by_jobs(share_dir(service.data_dir, 'logs')).items() if name in names}
    assert len(seen) == 3
    for job in seen.values():
        assert job['version'] == 'v1' and job['files'].split() == KEPT  # no secret.txt, train.log, data/, .git
        assert job['pwd'] == job['dir'] == job['prep'] and job['dir'].endswith('/sweep-code')

    # A re-plan with the changed folder would change the sweep: refused, naming the code.
    replanned = az('batchai', 'sweep', 'submit', *args, *common, '--code', 'src')
    assert replanned.exit_code != 0
    assert 'the code snapshot: {} -> '.format(digest[:12]) in replanned.stderr

    # resubmit runs the failed job again on the same snapshot, not on the folder as it is now.
    open(fixed, 'w').close()
    resubmitted = az('batchai', 'sweep', 'resubmit', *args, '--plan-file', 'code.plan.jsonl', '--wait', '--interval',
                     '0.2', '-o', 'json')
    assert resubmitted.exit_code == 0, resubmitted.stderr
    assert len(resubmitted.json()['resubmitted']) == 1
    again = {name: job for name, job in seen_by_jobs(share_dir(service.data_dir, 'logs')).items() if name in names}
    assert len(again) == 3
    assert {job['version'] for job in again.values()} == {'v1'}
    assert all(job['files'].split() == KEPT for job in again.values())
    # The report shows the snapshot the sweep ran.
    reported = az('batchai', 'sweep', 'report', *args, '--metric', 'loss', '-f', 'code-report.html', '-o', 'json')
    assert reported.exit_code == 0, reported.stderr
    assert reported.json()['summary']['code'] == [digest]
    with open(os.path.join(directory, 'code-report.html'), encoding='utf-8') as f:
        assert '<code title="{}">{}</code>'.format(digest, digest[:12]) in f.read()

    # The unchanged folder (back to v1) is not uploaded again: the share is asked by name first.
    write_code(code, version='v1')
    same = az('batchai', 'sweep', 'create', *args, *common, '--code', 'src', '-o', 'json')
    assert same.exit_code == 0, same.stderr
    assert 'is already in share sweep-code of storage account {}: not uploaded again'.format(ACCOUNT) in same.stderr
    assert same.json()['code']['uploaded'] is False
    assert os.stat(archive).st_mtime_ns == uploaded_at
