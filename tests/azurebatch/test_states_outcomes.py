"""states.outcome on completed tasks, case by case: which ends are a Batch AI job's success and which its failure.

Each task body is checked against the REST spec's CloudTask (the mapping reads Batch's own names). An exit code of 0
alone is not success: a failure Batch reports (a resource file it could not download, a container it could not
start) fails the job even then, and the service's own reason (terminate, delete) wins over any exit code.
"""
import pytest

from azext_batchai_sweep.localservice.schedulers.azurebatch import states
from tests.azurebatch.batch_shapes import validate

START, END = '2026-11-26T10:00:00Z', '2026-11-26T10:01:00Z'


def completed(result=None, exit_code=None, failure=None, **info):
    execution = {'retryCount': 0, 'requeueCount': 0, 'startTime': START, 'endTime': END}
    if result is not None:
        execution['result'] = result
    if exit_code is not None:
        execution['exitCode'] = exit_code
    if failure is not None:
        execution['failureInfo'] = failure
    execution.update(info)
    body = {'id': 't1', 'state': 'completed', 'constraints': {'maxWallClockTime': 'PT1H'}, 'executionInfo': execution}
    validate('CloudTask', body)
    return body


def _failure(code, message='m', category='usererror'):
    return {'category': category, 'code': code, 'message': message}


@pytest.mark.parametrize('task, expected', [
    (completed('success', 0), ('succeeded', 0, [])),
    # no result field (older answers): an exit code of 0 without a failure is success
    (completed(None, 0), ('succeeded', 0, [])),
    # exit 0 but Batch could not download a resource file: the job failed, with Batch's code
    (completed('failure', 0, _failure('ResourceFileDownloadFailed', 'could not download x')),
     ('failed', 0, [{'code': 'ResourceFileDownloadFailed', 'message': 'could not download x'}])),
    # exit 0 and only the upload of the task's own logs failed: success
    (completed('failure', 0, _failure('FileUploadFailed')), ('succeeded', 0, [])),
    (completed('failure', 1, _failure('FailureExitCode', 'exit code 1')),
     ('failed', 1, [{'code': 'NonZeroExitCode', 'message': 'The job exited with code 1.'}])),
    (completed('failure', 255, _failure('FailureExitCode')),
     ('failed', 255, [{'code': 'NonZeroExitCode', 'message': 'The job exited with code 255.'}])),
    # a non-zero exit with no failureInfo (an answer without it) is still the job's failure
    (completed(None, 2), ('failed', 2, [{'code': 'NonZeroExitCode', 'message': 'The job exited with code 2.'}])),
    # a task that never started (no exit code): Batch's own code and message, details kept
    (completed('failure', None, dict(_failure('ContainerPoolNotSupported', 'no container', 'servererror'),
                                     details=[{'name': 'Pool', 'value': 'p'}])),
     ('failed', None, [{'code': 'ContainerPoolNotSupported', 'message': 'no container (Pool=p)'}])),
    (completed('failure', None, None), ('failed', None, [{'code': 'BatchTaskFailed',
                                                          'message': 'The Batch task failed.'}])),
])
def test_completed_tasks(task, expected):
    assert states.outcome(task) == expected


@pytest.mark.parametrize('reason, code', [('terminated', 'JobTerminated'), ('wallclock', 'MaxWallClockTimeExceeded')])
def test_the_services_own_reason_wins_over_a_zero_exit(reason, code):
    state, exit_code, errors = states.outcome(completed('success', 0), reason=reason)
    assert (state, exit_code, [e['code'] for e in errors]) == ('failed', 0, [code])


def test_a_run_past_the_wall_clock_fails_whatever_batch_calls_it():
    late = completed('failure', -1, _failure('TaskEnded'), endTime='2026-11-26T11:00:00Z')  # exactly PT1H
    assert [e['code'] for e in states.outcome(late)[2]] == ['MaxWallClockTimeExceeded']
    early = completed('failure', -1, _failure('TaskEnded'), endTime='2026-11-26T10:59:59Z')
    assert [e['code'] for e in states.outcome(early)[2]] == ['TaskEnded']


@pytest.mark.parametrize('record, expected', [
    (('prep', 4), ('failed', 4, ['JobPreparationFailed'])),
    (('main', 4), ('failed', 4, ['NonZeroExitCode'])),
])
def test_the_wrappers_record_says_which_step_failed(record, expected):
    state, code, errors = states.outcome(completed('failure', 4, _failure('FailureExitCode')), exit_record=record)
    assert (state, code, [e['code'] for e in errors]) == expected
