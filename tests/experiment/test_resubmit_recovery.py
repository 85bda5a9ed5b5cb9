"""resubmit_jobs: which jobs it takes, secrets, and recovery after being killed between a delete and its create.

Against the scripted server of fake_arm.py (a mock on purpose: the local service cannot be told to hang one given
PUT, which is what puts a real SIGKILL exactly between the delete and the create).
"""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.service.resubmit import resubmit_jobs
from azext_batchai_sweep.core.service.retry import RetrySettings
from azext_batchai_sweep.core.service.submit import submit_jobs

from .fake_arm import FakeArm

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RG, WS, EXP, SWEEP = 'rg', 'ws', 'exp', 'sweep1'


def body(x, secret=False):
    env = [{'name': 'BATCHAI_SWEEP_NAME', 'value': SWEEP}, {'name': 'PARAM_X', 'value': str(x)},
           {'name': 'BATCHAI_SWEEP_PARAMS', 'value': json.dumps({'X': x}, separators=(',', ':'))}]
    properties = {'nodeCount': 1, 'stdOutErrPathPrefix': '/tmp', 'cluster': {'id': '/c'},
                  'customToolkitSettings': {'commandLine': 'exit $((PARAM_X % 2))'}, 'environmentVariables': env}
    if secret:
        properties['secrets'] = [{'name': 'TOKEN', 'value': 'SUPER-SECRET'}]
    return {'properties': properties}


def plan(count, secret=False):
    return [('job-{}'.format(x), body(x, secret)) for x in range(count)]


def quick():
    return RetrySettings(base_delay=0.01, max_delay=0.05)


@pytest.fixture
def fake():
    server = FakeArm()
    yield server
    server.close()


def submitted(fake, count, secret=False):
    """A sweep on the fake service whose odd jobs failed."""
    submit_jobs(fake.client(), RG, WS, EXP, plan(count, secret), retry=quick())
    for x in range(count):
        fake.set_state('job-{}'.format(x), 'failed' if x % 2 else 'succeeded', x % 2)


def test_failed_jobs_are_deleted_and_created_again_from_the_service(fake):
    submitted(fake, 6)
    result = resubmit_jobs(fake.client(), RG, WS, EXP, sweep_name=SWEEP, retry=quick(), poll_interval=0.01)
    assert result == {'resubmitted': ['job-1', 'job-3', 'job-5'], 'skipped': [], 'failed': []}
    for name in ('job-1', 'job-3', 'job-5'):
        assert [r[0] for r in fake.requests if r[1] == name][-3:] == ['DELETE', 'GET', 'PUT']
        job = fake.jobs[name]['properties']
        assert job['executionState'] == 'queued'
        assert job['customToolkitSettings'] == {'commandLine': 'exit $((PARAM_X % 2))'}
        assert {'name': 'PARAM_X', 'value': name[-1]} in job['environmentVariables']
    assert fake.jobs['job-0']['properties']['executionState'] == 'succeeded'


def test_named_jobs_and_states(fake):
    submitted(fake, 4)
    result = resubmit_jobs(fake.client(), RG, WS, EXP, sweep_name=SWEEP, job_names=['job-0', 'job-1', 'nope'],
                           retry=quick(), poll_interval=0.01)
    assert result['resubmitted'] == ['job-1']
    assert result['skipped'] == [{'job': 'job-0', 'reason': 'state is succeeded, not failed'},
                                 {'job': 'nope', 'reason': 'not found in sweep sweep1'}]
    result = resubmit_jobs(fake.client(), RG, WS, EXP, sweep_name=SWEEP, job_names=['job-0'], state=None,
                           retry=quick(), poll_interval=0.01)
    assert result['resubmitted'] == ['job-0']


def test_hidden_secrets_need_the_plan(fake):
    submitted(fake, 2, secret=True)
    deletes_before = len(fake.calls('DELETE'))
    with pytest.raises(SpecError, match='secrets'):
        resubmit_jobs(fake.client(), RG, WS, EXP, sweep_name=SWEEP, retry=quick())
    assert len(fake.calls('DELETE')) == deletes_before  # refused before deleting anything
    result = resubmit_jobs(fake.client(), RG, WS, EXP, sweep_name=SWEEP, plan=plan(2, secret=True), retry=quick(),
                           poll_interval=0.01)
    assert result['resubmitted'] == ['job-1']


def _resubmit_in_subprocess(endpoint, tmp_path, journal=None, with_plan=False):
    script = textwrap.dedent('''
        import json, sys
        from tests.experiment.fake_arm import client_for
        from tests.experiment.test_resubmit_recovery import plan, quick, RG, WS, EXP, SWEEP
        from azext_batchai_sweep.core.service.resubmit import resubmit_jobs
        resubmit_jobs(client_for(sys.argv[1]), RG, WS, EXP, sweep_name=SWEEP, retry=quick(), poll_interval=0.01,
                      journal_path=sys.argv[2] or None, plan=plan(4) if sys.argv[3] == 'plan' else None)
    ''')
    return subprocess.Popen([sys.executable, '-c', script, endpoint, journal or '', 'plan' if with_plan else ''],
                            cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.parametrize('with_plan', [True, False], ids=['plan', 'journal'])
def test_sigkill_between_delete_and_create_then_rerun(fake, tmp_path, with_plan):
    submitted(fake, 4)
    fake.script = {'job-3': ['hang']}  # job-3's create never answers: the process is killed there
    journal = None if with_plan else str(tmp_path / 'resubmit.journal')
    proc = _resubmit_in_subprocess(fake.endpoint, tmp_path, journal, with_plan)
    # Killed once job-3's create hangs AND job-1 (resubmitted in parallel) is back: the state this test is about.
    # Waiting for job-3 alone raced with job-1 under load (its journal fsync, delete and wait for 404 could still be
    # under way), leaving job-1 deleted but not re-created at the kill, which the assertions below do not expect.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (fake.calls('PUT', 'job-3')[1:] and len(fake.calls('PUT', 'job-1')) >= 2
                                               and 'job-1' in fake.jobs):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 'job-3' not in fake.jobs  # deleted, not re-created: the state a crash leaves behind
    assert 'job-1' in fake.jobs

    result = resubmit_jobs(fake.client(), RG, WS, EXP, sweep_name=SWEEP, retry=quick(), poll_interval=0.01,
                           journal_path=journal, plan=plan(4) if with_plan else None)
    assert 'job-3' in result['resubmitted'] and result['failed'] == []
    assert sorted(fake.jobs) == ['job-0', 'job-1', 'job-2', 'job-3']
    assert len([r for r in fake.calls('PUT', 'job-1')]) == 2  # job-1 was resubmitted once, not twice
    assert fake.jobs['job-3']['properties']['customToolkitSettings'] == {'commandLine': 'exit $((PARAM_X % 2))'}
    if journal:
        assert not os.path.exists(journal)  # cleared once everything was resubmitted


def test_a_rerun_for_other_jobs_keeps_the_journal_of_the_missing_ones(fake, tmp_path):
    # An interrupted resubmit left job-3 deleted and journaled; a resubmit of job-1 alone must not drop the journal,
    # or job-3's definition (kept nowhere else) is lost for good.
    submitted(fake, 4)
    journal = tmp_path / 'resubmit.journal'
    journal.write_text(json.dumps({'name': 'job-3', 'job': body(3)}) + '\n')
    del fake.jobs['job-3']
    result = resubmit_jobs(fake.client(), RG, WS, EXP, sweep_name=SWEEP, job_names=['job-1'], retry=quick(),
                           poll_interval=0.01, journal_path=str(journal))
    assert result['resubmitted'] == ['job-1'] and result['failed'] == []
    assert 'job-3' not in fake.jobs and journal.exists()
    result = resubmit_jobs(fake.client(), RG, WS, EXP, sweep_name=SWEEP, retry=quick(), poll_interval=0.01,
                           journal_path=str(journal))
    assert 'job-3' in result['resubmitted'] and 'job-3' in fake.jobs
    assert not journal.exists()
