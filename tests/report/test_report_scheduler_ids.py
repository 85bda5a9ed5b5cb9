"""The report's job table names each job's id at the local service's scheduler for what it is there (issue 42, item
10): a Slurm job on Slurm, a Batch task on Azure Batch, no column where the scheduler has no ids of its own (local
processes). The scheduler's name travels from the local view's body (`scheduler`) through the ids
(core/service/scheduler_ids.SchedulerMap) and each job's trial to the report's data (`scheduler`).

End to end on each scheduler: tests/azurebatch/test_e2e_sweep.py (Batch task) and
tests/slurm/test_slurm_conf_from_environment.py (Slurm job)."""
import dataclasses
import json
import re

import pytest

from azext_batchai_sweep.core.report.data import report_data
from azext_batchai_sweep.core.report.html import render_html
from azext_batchai_sweep.core.report.model import EXTRA_SCHEDULER, EXTRA_SCHEDULER_JOB_ID
from azext_batchai_sweep.core.service.scheduler_ids import SchedulerMap, job_ids_of

from .synthetic import synthetic_record


def _with_ids(record, scheduler, ids):
    trials = []
    for trial, job_id in zip(record.trials, ids):
        extra = dict(trial.extra)
        if job_id:
            extra.update({EXTRA_SCHEDULER_JOB_ID: job_id, EXTRA_SCHEDULER: scheduler})
        trials.append(dataclasses.replace(trial, extra=extra))
    return dataclasses.replace(record, trials=trials)


def _table(html):
    return json.loads(re.search(r'id="report-table-data">(.*?)</script>', html).group(1))


def _labels(data):
    table = _table(render_html(data))
    return [column['label'] for column in table['columns']], table


@pytest.mark.parametrize('scheduler, ids, label', [
    ('slurm', ['4101', '4102_0', '4102_1'], 'Slurm job'),
    ('azure-batch', ['batchai-local-c1/job-1', 'batchai-local-c1/job-2', None], 'Batch task'),
    (None, ['77', None, None], 'scheduler job'),  # a service that does not name its scheduler: said plainly
])
def test_the_id_column_says_what_the_id_is_on_each_scheduler(scheduler, ids, label):
    data = report_data(_with_ids(synthetic_record(3, epochs=4, stop_share=0, fail_share=0), scheduler, ids))
    assert data['scheduler'] == scheduler
    labels, table = _labels(data)
    assert labels.count(label) == 1, labels
    assert not {'Slurm job', 'Batch task', 'scheduler job'} - {label} & set(labels), labels
    shown = {row[1]: row[labels.index(label)] for row in table['rows']}
    assert shown == {trial.name: job_id for trial, job_id in zip(synthetic_record(3).trials, ids)}


def test_no_id_column_where_the_scheduler_has_no_ids():
    data = report_data(synthetic_record(3, epochs=4, stop_share=0, fail_share=0))  # local processes: no ids
    assert data['scheduler'] is None
    labels, _ = _labels(data)
    assert not {'Slurm job', 'Batch task', 'scheduler job'} & set(labels), labels


def test_the_ids_keep_the_name_of_the_scheduler_that_gave_them():
    view = SchedulerMap({'a': {'name': 'a', 'schedulerJobId': 'p/t1'}, 'b': {'name': 'b'}}, scheduler='azure-batch')
    ids = job_ids_of(view)
    assert ids == {'a': 'p/t1'} and ids.scheduler == 'azure-batch'
    assert job_ids_of({}).scheduler is None  # a plain view (a service that does not say): no name
