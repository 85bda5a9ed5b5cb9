"""A job that plants symlinks cannot read or list the service's files or the host's (rule 1 of issue 13).

Real jobs on the session's local service plant the links (as a hostile job would, from the paths Batch AI gives it);
the Files API is driven through the real azure-storage-file-share SDK with the service's own storage key (and a SAS),
listOutputFiles and `download` through the core the extension runs.
"""
import os
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from azure.core.exceptions import HttpResponseError
from azure.storage.fileshare import ShareServiceClient, generate_share_sas

from azext_batchai_sweep.core.outputs.download import download_outputs, list_output_files
from tests.localservice.conftest import job_params, wait_state

pytestmark = pytest.mark.service

DATA_DIR = '"$AZ_BATCHAI_JOB_TEMP/../../.."'  # what a job can work out from its own variables
SECRET_FILES = ('token', 'storage.key', 'link.key')


def _run_job(client, service, experiment, command, name='plant'):
    rg, ws = service.resource_group, service.workspace
    client.experiments.begin_create(rg, ws, experiment).result()
    client.jobs.begin_create(rg, ws, experiment, name, job_params(service, command)).result()
    job = wait_state(client, service, experiment, name)
    assert job.execution_state == 'succeeded', job.execution_info
    return job


def _storage_key(service):
    with open(os.path.join(service.data_dir, 'storage.key'), encoding='ascii') as f:
        return f.read().strip()


def _share(service, account, share, sas=False):
    key = _storage_key(service)
    credential = generate_share_sas(account, share, key, permission='rwcl', expiry=datetime.now(
        timezone.utc) + timedelta(hours=1)) if sas else {'account_name': account, 'account_key': key}
    return ShareServiceClient('{}/{}'.format(service.files_endpoint, account), credential=credential,
                              retry_total=0).get_share_client(share)


def _secrets_unchanged(service, before):
    return {name: open(os.path.join(service.data_dir, name), 'rb').read() for name in SECRET_FILES} == before


@pytest.fixture(scope='module')
def planted(batchai_client, local_service):
    """A job that plants a share, an account and links inside a share that lead to the data dir."""
    tag = uuid.uuid4().hex[:6]
    command = ('storage=$(cd -P "$AZ_BATCHAI_JOB_MOUNT_ROOT/logs/../.." && pwd); data=$(cd -P {data} && pwd); '
               'ln -s "$data" "$storage/shares/evil{tag}"; '
               'mkdir -p "$AZ_BATCHAI_JOB_TEMP/fake/shares"; ln -s "$data" "$AZ_BATCHAI_JOB_TEMP/fake/shares/inner"; '
               'ln -s "$AZ_BATCHAI_JOB_TEMP/fake" "$storage/../evil{tag}"; '
               'ln -s "$data" "$AZ_BATCHAI_JOB_MOUNT_ROOT/logs/up{tag}"; '
               'ln -s / "$AZ_BATCHAI_JOB_MOUNT_ROOT/logs/root{tag}"').format(data=DATA_DIR, tag=tag)
    _run_job(batchai_client, local_service, 'plant-' + tag, command)
    before = {name: open(os.path.join(local_service.data_dir, name), 'rb').read() for name in SECRET_FILES}
    return tag, before


@pytest.mark.parametrize('sas', [False, True])
def test_a_share_or_account_planted_as_a_symlink_reaches_nothing(local_service, planted, sas):
    tag, before = planted
    for account, share in (('acct', 'evil' + tag), ('evil' + tag, 'inner')):
        client = _share(local_service, account, share, sas=sas)
        for attempt in (lambda: client.get_file_client('token').download_file().readall(),
                        lambda: list(client.list_directories_and_files()),
                        lambda: client.get_share_properties(),
                        lambda: client.get_file_client('token').upload_file(b'overwritten'),
                        lambda: client.get_file_client('new-file').upload_file(b'x'),
                        lambda: client.get_directory_client('newdir').create_directory()):
            with pytest.raises(HttpResponseError) as refused:
                attempt()
            assert refused.value.status_code in (403, 404), (account, share)
    assert _secrets_unchanged(local_service, before)
    assert not os.path.exists(os.path.join(local_service.data_dir, 'new-file'))
    assert not os.path.exists(os.path.join(local_service.data_dir, 'newdir'))


def test_links_inside_a_share_that_lead_out_are_neither_listed_nor_followed(local_service, planted):
    tag, before = planted
    client = _share(local_service, 'acct', 'logs')
    names = {item['name'] for item in client.list_directories_and_files()}
    assert 'up' + tag not in names and 'root' + tag not in names
    for path in ('up{}/token'.format(tag), 'up{}/storage.key'.format(tag), 'root{}/etc/passwd'.format(tag)):
        with pytest.raises(HttpResponseError) as refused:
            client.get_file_client(path).download_file().readall()
        assert refused.value.status_code == 404
        with pytest.raises(HttpResponseError):
            client.get_file_client(path).upload_file(b'overwritten')
    with pytest.raises(HttpResponseError):
        list(client.get_directory_client('root' + tag).list_directories_and_files())
    assert _secrets_unchanged(local_service, before)


@pytest.fixture(scope='module')
def hostile_output(batchai_client, local_service):
    """A job whose stdouterr holds legitimate files beside links out, link loops and a link to a sibling."""
    experiment = 'links-' + uuid.uuid4().hex[:6]
    command = ('cd "$AZ_BATCHAI_STDOUTERR_DIR" && echo legit > legit.txt && mkdir sub && echo deep > sub/f.txt && '
               'ln -s / root && ln -s {data} data && ln -s {data}/token token && ln -s ../../.. up && '
               'ln -s loop1 loop2 && ln -s loop2 loop1 && ln -s self self && ln -s legit.txt alias.txt && '
               'ln -s sub subalias').format(data=DATA_DIR)
    _run_job(batchai_client, local_service, experiment, command, name='job')
    return experiment


def test_list_output_files_never_follows_a_link_out_of_the_job(batchai_client, local_service, hostile_output):
    svc = local_service
    started = time.monotonic()
    files = {f.name: f for f in list_output_files(batchai_client, svc.resource_group, svc.workspace, hostile_output,
                                                  'job', recursive=True)}
    assert time.monotonic() - started < 10  # answered at once: no 500 retried for minutes
    for name in ('root', 'data', 'token', 'up', 'loop1', 'loop2', 'self'):
        assert files[name].download_url is None and files[name].content_length is None, name
    for name in ('legit.txt', 'sub/f.txt', 'alias.txt', 'subalias/f.txt', 'stdout.txt'):
        assert files[name].download_url, name
    leaked = [name for name in files if name.split('/')[0] in ('root', 'data', 'up') and '/' in name]
    assert not leaked  # nothing below a link out (no /etc, no data dir listing)
    for directory in ('root', 'data', 'up', 'root/etc', 'loop1'):
        assert list_output_files(batchai_client, svc.resource_group, svc.workspace, hostile_output, 'job',
                                 directory=directory) == []


def test_download_keeps_the_legitimate_files_and_names_each_link_it_refused(batchai_client, local_service,
                                                                            hostile_output, tmp_path):
    svc = local_service
    dest = tmp_path / 'dest'
    result = download_outputs(batchai_client, svc.resource_group, svc.workspace, hostile_output, str(dest))
    got = {os.path.relpath(os.path.join(d, f), str(dest)) for d, _, names in os.walk(str(dest)) for f in names}
    assert {'job/stdouterr/legit.txt', 'job/stdouterr/sub/f.txt', 'job/stdouterr/alias.txt',
            'job/stdouterr/subalias/f.txt'} <= got
    assert not [name for name in got if name.split('/')[2] in ('root', 'data', 'token', 'up', 'loop1', 'loop2',
                                                                'self')]
    failed = {entry['file']: entry['error'] for entry in result['failed']}
    assert set(failed) == {'stdouterr/' + n for n in ('root', 'data', 'token', 'up', 'loop1', 'loop2', 'self')}
    assert all('no download link' in error for error in failed.values())
    assert (dest / 'job/stdouterr/legit.txt').read_text() == 'legit\n'
    assert all(not os.path.islink(os.path.join(d, n)) for d, dirs, files in os.walk(str(dest)) for n in dirs + files)


def test_download_never_writes_through_a_symlink_planted_in_the_destination(batchai_client, local_service,
                                                                            hostile_output, tmp_path):
    svc = local_service
    outside = tmp_path / 'outside'
    outside.mkdir()
    dest = tmp_path / 'dest'
    (dest / 'job').mkdir(parents=True)
    os.symlink(str(outside), str(dest / 'job' / 'stdouterr'))
    result = download_outputs(batchai_client, svc.resource_group, svc.workspace, hostile_output, str(dest))
    assert os.listdir(str(outside)) == []
    assert result['files'] == 0 and result['failed']
    assert any('symbolic link out of the destination' in entry['error'] for entry in result['failed'])
    # A planted link at a file's own name, or at its temporary name, is replaced, never written through.
    os.unlink(str(dest / 'job' / 'stdouterr'))
    (dest / 'job' / 'stdouterr').mkdir()
    victim = outside / 'victim.txt'
    victim.write_text('keep')
    os.symlink(str(victim), str(dest / 'job' / 'stdouterr' / 'legit.txt'))
    os.symlink(str(victim), str(dest / 'job' / 'stdouterr' / 'stdout.txt.partial'))
    download_outputs(batchai_client, svc.resource_group, svc.workspace, hostile_output, str(dest))
    assert victim.read_text() == 'keep'
    assert (dest / 'job' / 'stdouterr' / 'legit.txt').read_text() == 'legit\n'
    assert not os.path.islink(str(dest / 'job' / 'stdouterr' / 'legit.txt'))


def test_a_storage_folder_replaced_by_a_symlink_after_the_start_is_refused(tmp_path):
    from azext_batchai_sweep.localservice.api.files_api import FilesApi, StorageApiError
    storage, elsewhere = tmp_path / 'storage', tmp_path / 'elsewhere'
    (elsewhere / 'acct' / 'shares' / 'logs').mkdir(parents=True)
    storage.mkdir()
    api = FilesApi(str(storage), 'a2V5')
    storage.rmdir()
    os.symlink(str(elsewhere), str(storage))
    with pytest.raises(StorageApiError) as refused:
        api._share_root('acct', 'logs')  # pylint: disable=protected-access
    assert refused.value.status == 403
