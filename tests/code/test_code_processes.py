"""--code on the processes scheduler, through the real az against the session's local service: the folder is
packed once per content and uploaded to the share sweep-code (an unchanged folder is not uploaded again, --plan-only
uploads nothing), every job unpacks the planned snapshot and runs from it (ignored files never reach it), a changed
folder does not change a submitted sweep's jobs, a re-plan with it is refused, and resubmit runs the same snapshot."""
import os
import subprocess
import time
import uuid

import pytest

from azext_batchai_sweep.core.code.snapshot import take_snapshot
from tests.code.code_sweep import (ACCOUNT, create_submit_resubmit, plan_jobs, seen_by_jobs, share_dir, write_code,
                                   write_sweep)
from tests.fixtures_az import AZ, base_env, service_az

pytestmark = [pytest.mark.az, pytest.mark.service]


def test_create_submit_status_resubmit_with_code(local_service, tmp_path):
    create_submit_resubmit(local_service, str(tmp_path))


def test_sweep_file_code_relative_to_the_sweep_file_and_a_job_without_code(local_service, tmp_path):
    """`code: ./src` in the sweep file is read relative to the sweep file, from any working directory; a sweep
    without code gets jobs with no preparation or mount added."""
    directory = str(tmp_path / 'project')
    os.makedirs(directory)
    az = service_az(local_service, str(tmp_path))
    write_code(os.path.join(directory, 'src'))
    write_sweep(directory, '/nonexistent', values=(0,), extra='code: ./src\n')
    args = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'c-' + uuid.uuid4().hex[:8],
            '-n', 'code']
    common = ['--spec', os.path.join('project', 'sweep.yaml'), '-c', local_service.cluster,
              '--storage-account-name', ACCOUNT]
    planned = az('batchai', 'sweep', 'create', *args, *common, '--plan-only', '-o', 'json')
    assert planned.exit_code == 0, planned.stderr
    assert planned.json()['code']['hash'] == take_snapshot(os.path.join(directory, 'src')).digest

    write_sweep(directory, '/nonexistent', values=(0,))
    plain = az('batchai', 'sweep', 'create', *args, *common, '--plan-only', '--plan-file', 'plain.jsonl', '-o', 'json')
    assert plain.exit_code == 0, plain.stderr
    assert 'code' not in plain.json()
    props = plan_jobs(os.path.join(str(tmp_path), 'plain.jsonl'))[0]['job']['properties']
    assert props['jobPreparation'] == {'commandLine': 'pwd > prep.txt'}
    assert [m['relativeMountPath'] for m in props['mountVolumes']['azureFileShares']] == ['logs']


@pytest.mark.parametrize('case', ['over the limit', 'no such folder'])
def test_bad_code_folder_is_a_clear_error_before_any_request(local_service, tmp_path, case):
    directory = str(tmp_path)
    az = service_az(local_service, directory)
    code = write_code(os.path.join(directory, 'src'))
    with open(os.path.join(code, 'weights.bin'), 'wb') as f:
        f.write(b'\0' * 200 * 1024)
    write_sweep(directory, '/nonexistent')
    folder, extra = ('src', ['--code-size-limit', '0.1']) if case == 'over the limit' else ('nope', [])
    result = az('batchai', 'sweep', 'submit', '-g', local_service.resource_group, '-w', local_service.workspace,
                '-e', 'never-made', '-n', 'code', '--spec', 'sweep.yaml', '-c', local_service.cluster,
                '--storage-account-name', ACCOUNT, '--code', folder, *extra)
    assert result.exit_code != 0 and 'Traceback' not in result.stderr
    assert ('weights.bin (200.0 KiB)' if case == 'over the limit' else 'is not a folder') in result.stderr
    assert not os.path.exists(os.path.join(directory, 'code.plan.jsonl'))


def test_run_jobs_see_one_snapshot_while_the_folder_changes(local_service, tmp_path):
    """`sweep run` one job at a time; the folder changes after the first job ran: the later ones see the first
    snapshot too, and key-like files are named before the upload."""
    directory = str(tmp_path)
    code = write_code(os.path.join(directory, 'src'))
    with open(os.path.join(code, '.env'), 'w', encoding='utf-8') as f:
        f.write('TOKEN=x\n')
    write_sweep(directory, '/nonexistent', values=(0, 2, 3, 4), extra='limits: {maxConcurrentJobs: 1}\n')
    config = os.path.join(directory, 'azure-config')
    os.makedirs(config)
    from tests.fixtures_az import service_env
    env = base_env(config, service_env(local_service))
    experiment = 'run-' + uuid.uuid4().hex[:8]
    logs = share_dir(local_service.data_dir, 'logs')
    before = set(seen_by_jobs(logs)) if os.path.isdir(logs) else set()
    proc = subprocess.Popen([AZ, 'batchai', 'sweep', 'run', '-g', local_service.resource_group, '-w',
                             local_service.workspace, '-e', experiment, '-n', 'coderun', '--spec', 'sweep.yaml',
                             '-c', local_service.cluster, '--storage-account-name', ACCOUNT, '--code', 'src',
                             '--poll-interval', '0.2', '-o', 'json'], cwd=directory, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not set(seen_by_jobs(logs) if os.path.isdir(logs) else ()) - before:
        time.sleep(0.1)
    write_code(code, version='v2')  # after the first job ran, before the last ones start
    assert proc.poll() is None  # mid-run
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert 'files named like keys, sent with every job: .env' in err
    ours = {name: job for name, job in seen_by_jobs(logs).items() if name not in before}
    assert len(ours) == 4, (out, err)
    assert {job['version'] for job in ours.values()} == {'v1'}
    assert all('./.env' in job['files'].split() for job in ours.values())
    # Resuming the sweep with the changed folder would mix snapshots in one sweep: refused before any job.
    resumed = subprocess.run(proc.args, cwd=directory, env=env, capture_output=True, text=True, timeout=300,
                             check=False)
    assert resumed.returncode != 0 and 'Traceback' not in resumed.stderr
    now = take_snapshot(code).digest  # v2
    assert 'this run sends {}: the jobs of a sweep run one snapshot'.format(now[:12]) in resumed.stderr
    assert {name for name in seen_by_jobs(logs) if name not in before} == set(ours)


def test_submit_of_a_plan_whose_folder_changed_is_refused(local_service, tmp_path):
    """A plan made with --plan-only uploads nothing; submitting it later uploads its snapshot only if the folder
    still packs to the planned hash. --code belongs to planning: submit without --spec refuses it."""
    directory = str(tmp_path)
    az = service_az(local_service, directory)
    code = write_code(os.path.join(directory, 'src'))
    with open(os.path.join(code, 'unique.txt'), 'w', encoding='utf-8') as f:
        f.write(uuid.uuid4().hex)  # a snapshot no other test uploaded
    write_sweep(directory, '/nonexistent', values=(0,))
    args = ['-g', local_service.resource_group, '-w', local_service.workspace, '-e', 'c-' + uuid.uuid4().hex[:8],
            '-n', 'code']
    planned = az('batchai', 'sweep', 'create', *args, '--spec', 'sweep.yaml', '-c', local_service.cluster,
                 '--storage-account-name', ACCOUNT, '--code', 'src', '--plan-only', '-o', 'json')
    assert planned.exit_code == 0, planned.stderr
    digest = planned.json()['code']['hash']
    with open(os.path.join(code, 'run.sh'), 'a', encoding='utf-8') as f:
        f.write('echo changed\n')
    refused = az('batchai', 'sweep', 'submit', *args)
    assert refused.exit_code != 0 and 'Traceback' not in refused.stderr
    assert 'changed since it was planned' in refused.stderr and digest[:12] in refused.stderr
    assert not os.path.exists(os.path.join(share_dir(local_service.data_dir, 'sweep-code'), digest + '.tar.gz'))
    assert az('batchai', 'sweep', 'status', *args, '--query', 'counts.queued').exit_code != 0  # no job was sent
    usage = az('batchai', 'sweep', 'submit', *args, '--code', 'src')
    assert usage.exit_code != 0 and '--code is an option of planning: it needs --spec' in usage.stderr


def test_an_interrupted_upload_is_made_again(local_service, tmp_path):
    """An archive without its `.done` marker (an upload cut short) is not taken as uploaded: it is sent again whole."""
    directory = str(tmp_path)
    az = service_az(local_service, directory)
    code = write_code(os.path.join(directory, 'src'))
    with open(os.path.join(code, 'unique.txt'), 'w', encoding='utf-8') as f:
        f.write(uuid.uuid4().hex)
    write_sweep(directory, '/nonexistent', values=(0,))
    snapshot = take_snapshot(code)
    shares = share_dir(local_service.data_dir, 'sweep-code')
    os.makedirs(shares, exist_ok=True)
    with open(os.path.join(shares, snapshot.archive_name), 'wb') as f:
        f.write(b'cut short')
    made = az('batchai', 'sweep', 'create', '-g', local_service.resource_group, '-w', local_service.workspace,
              '-e', 'c-' + uuid.uuid4().hex[:8], '-n', 'code', '--spec', 'sweep.yaml', '-c', local_service.cluster,
              '--storage-account-name', ACCOUNT, '--code', 'src', '-o', 'json')
    assert made.exit_code == 0, made.stderr
    assert made.json()['code']['uploaded'] is True
    with open(os.path.join(shares, snapshot.archive_name), 'rb') as f:
        assert f.read() == snapshot.archive_bytes()
    assert os.path.isfile(os.path.join(shares, snapshot.digest + '.done'))
