"""The experiment operations end to end: the real SDK over real HTTP against the local Batch AI service."""
import os

import pytest

from azext_batchai_sweep.core.service.delete import delete_jobs
from azext_batchai_sweep.core.outputs.download import download_outputs, tail_job_output
from azext_batchai_sweep.core.outputs.metrics import MetricExtractor, get_metrics
from azext_batchai_sweep.core.service.resubmit import resubmit_jobs
from azext_batchai_sweep.core.service.status import list_sweep_jobs, sweep_status, wait_for_jobs
from azext_batchai_sweep.core.service.submit import submit_jobs

from .service_helpers import new_experiment, quick_retry, sweep_plan, wait_all

pytestmark = pytest.mark.service

# Odd X fails unless the file named by $FIXED exists: the "fix the cause, resubmit the failed jobs" story.
FLAKY = ('echo "training x=$PARAM_X"; echo "loss=$((PARAM_X * 3)) acc=0.$PARAM_X"; '
         'mkdir -p $AZ_BATCHAI_OUTPUT_MODEL/logs && echo "score: $((100 - PARAM_X))" '
         '> $AZ_BATCHAI_OUTPUT_MODEL/logs/metrics.txt; '
         'test -e "$FIXED" || exit $((PARAM_X % 2))')


@pytest.fixture
def sweep(batchai_client, local_service, tmp_path):
    """A finished 10-job sweep whose odd jobs failed; (experiment, sweep name, plan, fix flag path)."""
    experiment = new_experiment(batchai_client, local_service)
    fixed = str(tmp_path / 'fixed')
    plan = sweep_plan(local_service, 'flaky', 10, FLAKY, {'FIXED': fixed})
    result = submit_jobs(batchai_client, local_service.resource_group, local_service.workspace, experiment, plan,
                         retry=quick_retry())
    assert result['submitted'] == 10
    wait_all(batchai_client, local_service, experiment, 'flaky')
    return experiment, 'flaky', plan, fixed


def test_submit_then_status_then_rerun_submits_nothing(batchai_client, local_service):
    svc, client = local_service, batchai_client
    experiment = new_experiment(client, svc)
    plan = sweep_plan(svc, 'twenty', 20, 'echo "x=$PARAM_X"')
    progress = []
    result = submit_jobs(client, svc.resource_group, svc.workspace, experiment, plan, parallel=8,
                         progress=lambda done, total: progress.append((done, total)), retry=quick_retry())
    assert result == {'total': 20, 'submitted': 20, 'alreadyPresent': 0, 'replaced': 0, 'failed': [],
                      'notSubmitted': [], 'stopped': False}
    assert progress[-1] == (20, 20)

    # Another sweep in the same experiment must not show up in this one's status.
    submit_jobs(client, svc.resource_group, svc.workspace, experiment, sweep_plan(svc, 'other', 2, 'true'))
    finished = wait_all(client, svc, experiment, 'twenty')
    assert finished['counts'] == {'queued': 0, 'running': 0, 'terminating': 0, 'succeeded': 20, 'failed': 0,
                                  'terminated': 0}

    status = sweep_status(client, svc.resource_group, svc.workspace, experiment, sweep_name='twenty')
    assert [row['name'] for row in status['jobs']] == [name for name, _ in plan]
    row = status['jobs'][7]
    assert row['parameters'] == {'X': 7} and row['state'] == 'succeeded' and row['exitCode'] == 0
    assert row['startTime'] <= row['endTime'] and row['durationSeconds'] >= 0

    again = submit_jobs(client, svc.resource_group, svc.workspace, experiment, plan, retry=quick_retry())
    assert (again['submitted'], again['alreadyPresent']) == (0, 20)
    assert len(list_sweep_jobs(client, svc.resource_group, svc.workspace, experiment, sweep_name='twenty')) == 20


def test_submit_through_injected_faults_loses_and_duplicates_nothing(batchai_client, service_factory):
    svc = service_factory(name='faulty', faults='5xx=0.2,429=0.15,drop=0.1,seed=1')
    from azext_batchai_sweep.core.service.client import local_batchai_client  # pylint: disable=import-outside-toplevel
    client = local_batchai_client(svc.endpoint, svc.token_file, svc.subscription)
    experiment = 'faults'
    client.experiments.begin_create(svc.resource_group, svc.workspace, experiment, polling=False,
                                    retry_total=10).result()
    plan = sweep_plan(svc, 'faulty', 20, 'true')
    result = submit_jobs(client, svc.resource_group, svc.workspace, experiment, plan, parallel=8,
                         retry=quick_retry(max_retries=15))
    assert result['failed'] == [] and result['notSubmitted'] == []
    assert result['submitted'] + result['alreadyPresent'] == 20
    names = [job.name for job in list_sweep_jobs(client, svc.resource_group, svc.workspace, experiment,
                                                 retry=quick_retry(max_retries=15))]
    assert sorted(names) == [name for name, _ in plan]
    again = submit_jobs(client, svc.resource_group, svc.workspace, experiment, plan,
                        retry=quick_retry(max_retries=15))
    assert (again['submitted'], again['alreadyPresent'], again['failed']) == (0, 20, [])
    # With one retry per page, some rounds of the wait fail outright: the wait carries on to the end regardless.
    done = wait_for_jobs(client, svc.resource_group, svc.workspace, experiment, sweep_name='faulty', interval=0.1,
                         timeout=60, retry=quick_retry(max_retries=1))
    assert done['finished'] and done['counts']['succeeded'] == 20


def test_resubmit_failed_jobs_after_fixing_the_cause(batchai_client, local_service, sweep):
    svc, client = local_service, batchai_client
    experiment, name, _, fixed = sweep
    before = sweep_status(client, svc.resource_group, svc.workspace, experiment, sweep_name=name)
    assert (before['counts']['succeeded'], before['counts']['failed']) == (5, 5)
    failed = sorted(row['name'] for row in before['jobs'] if row['state'] == 'failed')

    open(fixed, 'w').close()
    result = resubmit_jobs(client, svc.resource_group, svc.workspace, experiment, sweep_name=name,
                           retry=quick_retry(), poll_interval=0.05)
    assert result == {'resubmitted': failed, 'skipped': [], 'failed': []}
    after = wait_all(client, svc, experiment, name)
    assert after['counts']['succeeded'] == 10
    assert {row['name']: row['parameters'] for row in after['jobs']} == \
        {row['name']: row['parameters'] for row in before['jobs']}


def test_metrics_regex_katib_subdirectory_and_missing_file(batchai_client, local_service, sweep):
    svc, client = local_service, batchai_client
    experiment, name, _, _ = sweep
    args = (client, svc.resource_group, svc.workspace, experiment)

    rows = get_metrics(*args, MetricExtractor(metric_name='loss'), sweep_name=name, goal='min', top=3)
    # The odd jobs failed: a failed job never ranks above a succeeded one, whatever its value.
    assert [(row['parameters']['X'], row['metric']) for row in rows] == [(0, 0.0), (2, 6.0), (4, 12.0)]

    rows = get_metrics(*args, MetricExtractor(regex=r'score: (\d+)'), sweep_name=name, output_directory_id='MODEL',
                       file='logs/metrics.txt', goal='max')
    assert [row['metric'] for row in rows] == [100.0 - x for x in (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)]
    assert [row['state'] for row in rows] == ['succeeded'] * 5 + ['failed'] * 5

    rows = get_metrics(*args, MetricExtractor(metric_name='loss'), sweep_name=name, file='nope.txt')
    assert len(rows) == 10 and all(row['metric'] is None and row['error'] is None for row in rows)


def test_tail_and_download_outputs(batchai_client, local_service, tmp_path):
    svc, client = local_service, batchai_client
    experiment = new_experiment(client, svc)
    plan = sweep_plan(svc, 'chatty', 2, 'for i in $(seq 1 3000); do echo "line $i of job $PARAM_X"; done; '
                      'mkdir -p $AZ_BATCHAI_OUTPUT_MODEL/sub && echo w > $AZ_BATCHAI_OUTPUT_MODEL/sub/w.txt')
    submit_jobs(client, svc.resource_group, svc.workspace, experiment, plan)
    wait_all(client, svc, experiment, 'chatty')
    job = plan[1][0]

    tail = tail_job_output(client, svc.resource_group, svc.workspace, experiment, job, lines=3)
    assert tail['found'] and tail['lines'] == ['line {} of job 1'.format(i) for i in (2998, 2999, 3000)]
    missing = tail_job_output(client, svc.resource_group, svc.workspace, experiment, job, file='nope.txt')
    assert (missing['found'], missing['lines']) == (False, [])

    dest = str(tmp_path / 'out')
    result = download_outputs(client, svc.resource_group, svc.workspace, experiment, dest, sweep_name='chatty')
    assert result['failed'] == [] and result['jobs'] == 2
    with open(os.path.join(dest, job, 'stdouterr', 'stdout.txt'), encoding='utf-8') as f:
        assert len(f.read().splitlines()) == 3000
    with open(os.path.join(dest, job, 'MODEL', 'sub', 'w.txt'), encoding='utf-8') as f:
        assert f.read() == 'w\n'
    again = download_outputs(client, svc.resource_group, svc.workspace, experiment, dest, sweep_name='chatty')
    assert again['files'] == 0 and again['skipped'] == result['files']


def test_delete_a_sweeps_failed_jobs_then_the_rest(batchai_client, local_service, sweep):
    svc, client = local_service, batchai_client
    experiment, name, plan, _ = sweep
    args = (client, svc.resource_group, svc.workspace, experiment)
    result = delete_jobs(*args, sweep_name=name, state='failed', wait=True, retry=quick_retry())
    assert result['deleted'] == [n for n, _ in plan[1::2]] and result['failed'] == []
    assert sweep_status(*args, sweep_name=name)['counts']['failed'] == 0
    result = delete_jobs(*args, sweep_name=name, job_names=[plan[0][0], 'never-there'], retry=quick_retry())
    assert result['deleted'] == [plan[0][0]] and result['notFound'] == ['never-there']


def test_metrics_last_reads_a_long_log_from_its_end(batchai_client, local_service, monkeypatch):
    # reduce last (the default) asks the service for the log's last window only (HTTP Range), not the whole file.
    from azext_batchai_sweep.core.outputs import metrics as metrics_module
    svc, client = local_service, batchai_client
    experiment = new_experiment(client, svc)
    plan = sweep_plan(svc, 'longlog', 1, 'for i in $(seq 1 40000); do echo "step=$i loss=0.$i padding"; done')
    submit_jobs(client, svc.resource_group, svc.workspace, experiment, plan)
    wait_all(client, svc, experiment, 'longlog')
    ranges, streamed = [], []
    real_read_range = metrics_module.read_url_range
    monkeypatch.setattr(metrics_module, 'read_url_range',
                        lambda url, start, end, **kw: ranges.append(end - start) or real_read_range(url, start, end, **kw))
    monkeypatch.setattr(metrics_module, 'iter_url_chunks', lambda *a, **kw: streamed.append(1) or iter(()))

    rows = get_metrics(client, svc.resource_group, svc.workspace, experiment, MetricExtractor(metric_name='loss'),
                       sweep_name='longlog')
    assert rows[0]['metric'] == 0.40000
    assert ranges == [metrics_module.TAIL_WINDOW] and not streamed  # of a ~1 MB log
