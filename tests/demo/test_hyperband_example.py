"""examples/demo/hyperband.yaml through the real az on the local service (issue 27, item 4): a job Hyperband promotes
reads its parent's checkpoint from BATCHAI_SWEEP_PARENT_OUTPUT_MODEL and trains on from the next epoch; `run` warns
(at --plan-only too) when the sweep's outputs are where a promoted job on another node could not read them."""
import os
import shutil
import uuid

import pytest

from tests.fixtures_az import REPO_ROOT, service_az

pytestmark = [pytest.mark.az]

DEMO = os.path.join(REPO_ROOT, 'examples', 'demo')


def copy_example(directory, replace=None):
    """The example's sweep file and job, with its text replacements (a smaller Hyperband for a test)."""
    for name in ('hyperband.yaml', 'hyperband-job.json'):
        with open(os.path.join(DEMO, name), encoding='utf-8') as f:
            text = f.read()
        for old, new in (replace or {}).get(name, {}).items():
            assert old in text, (name, old)
            text = text.replace(old, new)
        with open(os.path.join(directory, name), 'w', encoding='utf-8') as f:
            f.write(text)
    return os.path.join(directory, 'hyperband.yaml')


@pytest.mark.service
def test_a_promoted_job_resumes_from_its_parents_checkpoint(local_service, tmp_path):
    share = os.path.join(local_service.data_dir, 'storage', 'demostorage', 'shares', 'scripts', 'moons')
    os.makedirs(share, exist_ok=True)
    shutil.copy(os.path.join(DEMO, 'train.py'), share)
    # The shipped example, with EPOCHS 1 and 3 only (maxResource 3): one promotion, in seconds.
    spec = copy_example(str(tmp_path), {'hyperband.yaml': {'maxResource: 9': 'maxResource: 3'}})
    az = service_az(local_service, str(tmp_path))
    target = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'hb-' + uuid.uuid4().hex[:6],
              '-n', 'hb']
    run = az('batchai', 'sweep', 'run', *target, '--spec', spec, '-c', local_service.cluster, '--storage-account-name',
             'demostorage', '--poll-interval', '0.2', '-o', 'json')
    assert run.exit_code == 0, run.stderr
    assert run.json()['decisions'].get('promoted', 0) >= 1
    assert 'not on a mounted volume' not in run.stderr and 'no outputDirectories' not in run.stderr
    status = az('batchai', 'sweep', 'status', *target, '-o', 'json').json()
    children = [row for row in status['jobs'] if (row.get('tuning') or {}).get('parent')]
    assert children
    for child in children:
        parent = child['tuning']['parent']
        tail = az('batchai', 'sweep', 'status', *target, '--job', child['name'], '--tail', '40', '-o', 'tsv')
        lines = tail.stdout.splitlines()
        resumed = next(line for line in lines if line.startswith('resumed from epoch '))
        epoch = int(resumed.split()[3])
        assert resumed.startswith('resumed from epoch {} of {} ('.format(epoch, parent)) and epoch >= 1
        epochs = [line.split()[0] for line in lines if line.startswith('epoch=')]
        assert epochs[0] == 'epoch={}'.format(epoch + 1) and epochs[-1] == 'epoch=3', lines


@pytest.mark.service
def test_the_tours_command_runs_the_hyperband_example_with_its_code(local_service, tmp_path):
    """The README's tour says examples/demo/hyperband.yaml shows Hyperband's promotions: run as the tour runs
    adaptive.yaml (`--code examples/demo`, a storage account with no `scripts` share), its jobs find train.py in the
    code snapshot rather than exit 2 on a missing script (issue 42, item 10)."""
    spec = copy_example(str(tmp_path), {'hyperband.yaml': {'maxResource: 9': 'maxResource: 3'}})
    code = tmp_path / 'code'
    code.mkdir()
    shutil.copy(os.path.join(DEMO, 'train.py'), str(code))
    account = 'hbcode' + uuid.uuid4().hex[:6]  # no scripts share: the code snapshot is the only train.py
    az = service_az(local_service, str(tmp_path))
    target = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'hb-' + uuid.uuid4().hex[:6],
              '-n', 'hbcode']
    run = az('batchai', 'sweep', 'run', *target, '--spec', spec, '-c', local_service.cluster, '--storage-account-name',
             account, '--code', str(code), '--poll-interval', '0.2', '-o', 'json')
    assert run.exit_code == 0, run.stderr
    assert run.json()['counts'] == {'succeeded': run.json()['jobs']} and run.json()['decisions'].get('promoted', 0) >= 1
    assert not os.path.exists(os.path.join(local_service.data_dir, 'storage', account, 'shares', 'scripts', 'moons'))


@pytest.mark.parametrize('path, warned', [
    ('$AZ_BATCHAI_JOB_MOUNT_ROOT/logs', None),                 # the mounted share `logs`
    ('$AZ_BATCHAI_MOUNT_ROOT/outputs', None),                  # the cluster's mounts
    ('/tmp/checkpoints', 'outputDirectories MODEL (/tmp/checkpoints) is not on a mounted volume'),
    ('$AZ_BATCHAI_JOB_MOUNT_ROOT/scratch', 'outputDirectories MODEL ($AZ_BATCHAI_JOB_MOUNT_ROOT/scratch) is not on a '
                                           'mounted volume'),
])
def test_run_warns_when_a_promoted_job_could_not_read_the_checkpoint(az, tmp_path, path, warned):
    spec = copy_example(str(tmp_path), {'hyperband-job.json': {
        '"pathPrefix": "$AZ_BATCHAI_JOB_MOUNT_ROOT/logs"\n': '"pathPrefix": "{}"\n'.format(path)}})
    result = az('batchai', 'sweep', 'run', '-g', 'g', '-w', 'w', '-e', 'e', '-n', 'hb', '--spec', spec, '-c', 'local',
                '--storage-account-name', 'demostorage', '--plan-only')
    assert result.exit_code == 0, result.stderr
    if warned:
        assert warned in result.stderr and 'mounted: logs, scripts' in result.stderr
        assert 'docs/sweep-run.md' in result.stderr
    else:
        assert 'mounted volume' not in result.stderr


def test_run_warns_when_the_job_has_no_output_directory(az, tmp_path):
    spec = copy_example(str(tmp_path))
    with open(os.path.join(str(tmp_path), 'hyperband-job.json'), encoding='utf-8') as f:
        text = f.read()
    start = text.index('        "outputDirectories"')
    text = text[:start].rstrip().rstrip(',') + '\n' + text[text.index(']', start) + 1:].lstrip(',\n')
    with open(os.path.join(str(tmp_path), 'hyperband-job.json'), 'w', encoding='utf-8') as f:
        f.write(text)
    result = az('batchai', 'sweep', 'run', '-g', 'g', '-w', 'w', '-e', 'e', '-n', 'hb', '--spec', spec, '-c', 'local',
                '--storage-account-name', 'demostorage', '--plan-only')
    assert result.exit_code == 0, result.stderr
    assert 'the job has no outputDirectories: a promoted job gets no BATCHAI_SWEEP_PARENT_OUTPUT_<ID>' in result.stderr
