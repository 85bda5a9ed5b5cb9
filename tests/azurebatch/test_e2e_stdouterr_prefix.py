"""stdOutErrPathPrefix as Batch AI accepted it, on the Azure Batch scheduler (through the lifecycle double, the
user's path: e2e_fixtures.py): each accepted spelling of a prefix under $AZ_BATCHAI_JOB_TEMP or
$AZ_BATCHAI_JOB_MOUNT_ROOT (a trailing slash, `//`, `/./`, `${NAME}`) runs, and its stdout is where Batch AI put it:
`job file list/stream` find it (read through Batch's task file API). A prefix Batch AI refused is refused by
`sweep submit` before its first request (core/spec/job_paths.py)."""
import pytest

from tests.azurebatch.e2e_fixtures import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import

pytestmark = [pytest.mark.az, pytest.mark.service]

# The smoke script's original value first; the rest are the same folders spelt as paths may be.
ACCEPTED = ['$AZ_BATCHAI_JOB_TEMP', '$AZ_BATCHAI_JOB_TEMP/', '${AZ_BATCHAI_JOB_TEMP}//logs/',
            '$AZ_BATCHAI_JOB_MOUNT_ROOT/x/./y']


def test_each_accepted_prefix_runs_and_its_stdout_is_found(batch_service):  # pylint: disable=redefined-outer-name
    svc = batch_service
    assert svc.az('batchai', 'cluster', 'create', '-n', 'c1', *svc.group(), '-s', 'Standard_D2s_v3', '-t',
                  str(len(ACCEPTED)), '-u', 'batchai', '-p', 'not-used-0A!').exit_code == 0
    refused = write_sweep(svc.directory, 'refused.yaml', 'echo {{X}}', [1], stdOutErrPathPrefix='logs')
    done = svc.az('batchai', 'sweep', 'submit', *svc.group(), '-e', 'bad', '-n', 'bad', '--spec', refused, '-c', 'c1')
    assert done.exit_code != 0 and "job.stdOutErrPathPrefix: expected an absolute path, or one starting with " \
        "$AZ_BATCHAI_MOUNT_ROOT, $AZ_BATCHAI_JOB_MOUNT_ROOT, $AZ_BATCHAI_JOB_TEMP, got 'logs'" in done.stderr, \
        done.stderr
    assert 'Traceback' not in done.stderr
    assert svc.az('batchai', 'experiment', 'list', *svc.group(), '-o', 'json').json() == []  # no request was sent
    for index, prefix in enumerate(ACCEPTED):
        spec = write_sweep(svc.directory, 's{}.yaml'.format(index), 'echo loss={{X}}; echo oops >&2', [index],
                           stdOutErrPathPrefix=prefix)
        submitted = svc.az('batchai', 'sweep', 'submit', *svc.group(), '-e', 'e{}'.format(index), '-n', 'p',
                           '--spec', spec, '-c', 'c1', '--plan-file', 's{}.plan'.format(index))
        assert submitted.exit_code == 0, submitted.stderr
    for index, prefix in enumerate(ACCEPTED):
        experiment = [*svc.group(), '-e', 'e{}'.format(index)]
        waited = svc.az('batchai', 'sweep', 'status', *experiment, '-n', 'p', '--plan-file', 's{}.plan'.format(index),
                        '--wait', '--interval', '0.5', '-o', 'json')
        assert waited.exit_code == 0 and waited.json()['counts']['succeeded'] == 1, (prefix, waited.stderr)
        (job,) = svc.az('batchai', 'job', 'list', *experiment, '-o', 'json').json()
        listed = svc.az('batchai', 'job', 'file', 'list', *experiment, '-j', job['name'], '-o', 'json')
        assert listed.exit_code == 0, (prefix, listed.stderr)
        assert {'stdout.txt', 'stderr.txt'} <= {f['name'] for f in listed.json()}, (prefix, listed.stdout)
        for name, text in (('stdout.txt', 'loss={}'.format(index)), ('stderr.txt', 'oops')):
            streamed = svc.az('batchai', 'job', 'file', 'stream', *experiment, '-j', job['name'], '-f', name)
            assert streamed.exit_code == 0 and text in streamed.stdout, (prefix, name, streamed.stderr)
