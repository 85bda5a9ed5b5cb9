"""stdOutErrPathPrefix as Batch AI accepted it, on the local processes scheduler, through the real SDK client: each
spelling of a prefix under $AZ_BATCHAI_JOB_TEMP or a mounted share (a trailing slash, `//`, `/./`, `${NAME}`, a
sub-folder) runs, its stdout/stderr land where Batch AI put them (<prefix>/<segment>/stdouterr, the path normalised)
and listOutputFiles finds and serves them. A prefix Batch AI refused is refused at job create (400 InvalidPath,
naming the field and what is allowed; core/spec/job_paths.py)."""
import os
import urllib.request

import pytest
from azure.core.exceptions import HttpResponseError
from azure.mgmt.batchai import models

from tests.localservice.conftest import job_params, wait_state

# (prefix, where its stdouterr lands under the data dir: 'temp' = the job's $AZ_BATCHAI_JOB_TEMP, 'share' = the
# job's 'logs' share, then the folders below the prefix)
ACCEPTED = [('$AZ_BATCHAI_JOB_TEMP', 'temp', ''), ('$AZ_BATCHAI_JOB_TEMP/', 'temp', ''),
            ('$AZ_BATCHAI_JOB_TEMP//logs/', 'temp', 'logs'), ('${AZ_BATCHAI_JOB_TEMP}/./a//b', 'temp', 'a/b'),
            ('$AZ_BATCHAI_JOB_MOUNT_ROOT/logs', 'share', ''), ('$AZ_BATCHAI_JOB_MOUNT_ROOT/logs//sub/', 'share', 'sub')]
REFUSED = ['logs', '$HOME/logs', '$AZ_BATCHAI_JOB_TEMP/../..']


def check_stdouterr(client, service, job, root, below, name):
    """The job's stdout/stderr are in <root>/<below>/<segment>/stdouterr (root: 'temp' or 'share', as in ACCEPTED),
    and listOutputFiles lists and serves them (also used by tests/slurm)."""
    assert job.execution_state == 'succeeded', job.execution_info
    uid = job.job_output_directory_path_segment.rsplit('/', 1)[-1]
    base = (os.path.join(service.data_dir, 'jobs', uid, 'tmp') if root == 'temp' else
            os.path.join(service.data_dir, 'storage', 'acct', 'shares', 'logs'))
    folder = os.path.join(base, below, job.job_output_directory_path_segment, 'stdouterr')
    with open(os.path.join(folder, 'stdout.txt'), encoding='utf-8') as f:
        assert f.read() == 'out-{}\n'.format(name)
    experiment = job.id.split('/experiments/')[1].split('/')[0]
    files = {f.name: f for f in client.jobs.list_output_files(
        service.resource_group, service.workspace, experiment, name,
        models.JobsListOutputFilesOptions(outputdirectoryid='stdouterr'))}
    assert {'stdout.txt', 'stderr.txt'} <= set(files)
    with urllib.request.urlopen(files['stderr.txt'].download_url) as response:
        assert 'err-{}\n'.format(name) in response.read().decode()


def prefix_job(service, prefix, name):
    """Job create parameters writing `out-<name>` to stdout and `err-<name>` to stderr under `prefix`."""
    params = job_params(service, 'echo out-{0}; echo err-{0} >&2'.format(name))
    params.std_out_err_path_prefix = prefix
    return params


@pytest.mark.parametrize('prefix,root,below', ACCEPTED)
def test_an_accepted_prefix_holds_the_job_stdout_where_batch_ai_put_it(client, local_service, prefix, root, below):
    rg, ws, name = local_service.resource_group, local_service.workspace, 'p{}'.format(ACCEPTED.index(
        (prefix, root, below)))
    client.experiments.begin_create(rg, ws, 'prefixes').result()
    client.jobs.begin_create(rg, ws, 'prefixes', name, prefix_job(local_service, prefix, name)).result()
    check_stdouterr(client, local_service, wait_state(client, local_service, 'prefixes', name), root, below, name)


@pytest.mark.parametrize('prefix', REFUSED)
def test_a_refused_prefix_is_refused_at_job_create_naming_what_is_allowed(client, local_service, prefix):
    rg, ws = local_service.resource_group, local_service.workspace
    client.experiments.begin_create(rg, ws, 'prefixes').result()
    params = job_params(local_service)
    params.std_out_err_path_prefix = prefix
    with pytest.raises(HttpResponseError) as refused:
        client.jobs.begin_create(rg, ws, 'prefixes', 'refused', params).result()
    assert refused.value.status_code == 400 and refused.value.error.code == 'InvalidPath'
    message = refused.value.error.message
    assert 'stdOutErrPathPrefix: expected' in message and repr(prefix) in message, message


def test_a_refused_output_prefix_is_refused_at_job_create(client, local_service):
    rg, ws = local_service.resource_group, local_service.workspace
    client.experiments.begin_create(rg, ws, 'prefixes').result()
    params = job_params(local_service, output_directories=[models.OutputDirectory(id='MODEL', path_prefix='out')])
    with pytest.raises(HttpResponseError) as refused:
        client.jobs.begin_create(rg, ws, 'prefixes', 'refused', params).result()
    assert refused.value.error.code == 'InvalidPath' and 'MODEL pathPrefix' in refused.value.error.message
