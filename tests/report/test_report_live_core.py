"""The live report's core (core/report/live.py): each look reads only the bytes appended to the jobs' logs, finds the
same values a full `sweep report` finds, draws nothing again when nothing changed, and writes its files so that a
reader (or a kill) never leaves half of one."""
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from azext_batchai_sweep.core.outputs.metrics import MetricExtractor
from azext_batchai_sweep.core.report.intermediate import ReportReader
from azext_batchai_sweep.core.report.live import JobLog, LiveDocument, LiveSweep, sidecar_path
from azext_batchai_sweep.core.report.model import Objective
from azext_batchai_sweep.core.tuning.trial import Report
from tests.report.synthetic import synthetic_record

LOG = (b'training lr=0.1\nepoch=1 loss=0.9 val_accuracy=0.41\nepoch=2 loss=0.5 val_accuracy=0.62\n'
       b'noise val_accuracy=oops\nepoch=3 loss=0.4 val_accuracy=0.70\r\nepoch=4 val_accuracy=0.73')


def reader(step=None):
    return ReportReader(MetricExtractor(metric_name='val_accuracy'), step_key=step)


@pytest.mark.parametrize('cuts', [[], [5], [20, 21, 22], list(range(1, len(LOG))), [len(LOG) - 3], [30, 95, 140]])
def test_a_log_fed_in_pieces_gives_what_the_whole_log_gives(cuts):
    whole = reader().read_text(LOG.decode())
    log = JobLog()
    pieces = [LOG[a:b] for a, b in zip([0] + cuts, cuts + [len(LOG)])]
    for number, piece in enumerate(pieces):
        log.feed(reader(), piece, final=number == len(pieces) - 1)
    assert log.offset == len(LOG)
    assert reader().with_steps(log.found) == whole
    assert whole[0] == 'epoch' and [v for _, v in whole[1]] == [0.41, 0.62, 0.70, 0.73]


def test_a_line_being_written_waits_for_its_end():
    log = JobLog()
    log.feed(reader(), b'epoch=1 val_accuracy=0.5\nepoch=2 val_accur', final=False)
    assert reader().with_steps(log.found)[1] == [(1.0, 0.5)]  # the cut line is not read as val_accur...
    log.feed(reader(), b'acy=0.75\n', final=False)
    assert reader().with_steps(log.found)[1] == [(1.0, 0.5), (2.0, 0.75)]
    assert not log.complete and log.partial == b''


@pytest.mark.az
@pytest.mark.service
def test_a_second_look_at_a_finished_sweep_reads_nothing_and_draws_nothing(batchai_client, local_service,
                                                                           reported_sweep, tmp_path):
    args = dict(zip(reported_sweep.args[::2], reported_sweep.args[1::2]))
    sweep = LiveSweep(batchai_client, args['-g'], args['-w'], args['-e'], args['-n'],
                      Objective(metric='val_accuracy'), parallel=4)
    assert sweep.update() is True
    assert sweep.ended
    full = reported_sweep.data  # what a full `sweep report` found
    shown = [(j['name'], j['state'], j['objective'], j['bestValue'], j['lastStep']) for j in sweep.data['jobs']]
    assert shown == [(j['name'], j['state'], j['objective'], j['bestValue'], j['lastStep']) for j in full['jobs']]
    assert sweep.data['summary']['best'] == full['summary']['best']
    first_bytes, first_requests = sweep.bytes_read, sweep.requests
    assert first_bytes > 0 and all(log.complete for log in sweep.logs.values())

    document = LiveDocument(str(tmp_path / 'live.html'), interval=2)
    document.write(sweep.data, True, sweep.ended)
    page = os.stat(document.output_file)
    side = os.stat(document.sidecar)
    assert document.sidecar == sidecar_path(document.output_file) == str(tmp_path / 'live.live.js')

    time.sleep(0.05)
    assert sweep.update() is False  # nothing changed
    assert sweep.bytes_read == first_bytes  # every log was read to its end once
    assert sweep.requests == first_requests + 1  # the listing only
    parts = document.parts
    document.write(sweep.data, False, sweep.ended)
    assert document.parts is parts  # not drawn again
    assert os.stat(document.output_file).st_ino == page.st_ino  # the page was not rewritten
    assert os.stat(document.sidecar).st_ino != side.st_ino  # the sidecar was (the time of the look)


@pytest.mark.az
@pytest.mark.service
def test_without_an_objective_the_states_only_and_no_log_read(batchai_client, reported_sweep):
    args = dict(zip(reported_sweep.args[::2], reported_sweep.args[1::2]))
    sweep = LiveSweep(batchai_client, args['-g'], args['-w'], args['-e'], args['-n'], None)
    assert sweep.update() is True and sweep.ended
    assert sweep.bytes_read == 0 and sweep.requests == 1  # the listing only
    assert sweep.data['summary']['counts'] == reported_sweep.data['summary']['counts']
    assert sweep.data['summary']['best'] is None and all(not job['reports'] for job in sweep.data['jobs'])


WRITER = '''
import sys
from azext_batchai_sweep.core.report.build import write_file_atomically
path = sys.argv[1]
number = 0
while True:
    number += 1
    write_file_atomically(path, ('<!-- %d -->' % number) + 'x' * 3000000 + '</html>\\n')
'''


@pytest.mark.parametrize('delay', [0.3, 0.45, 0.6, 0.8])
def test_a_writer_killed_mid_write_leaves_the_last_complete_file(tmp_path, delay):
    path = str(tmp_path / 'live.html')
    proc = subprocess.Popen([sys.executable, '-c', WRITER, path],  # pylint: disable=consider-using-with
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    assert text.startswith('<!-- ') and text.endswith('</html>\n') and len(text) == len(text.split('-->')[0]) + 3 \
        + 3000000 + 8


def _steps(record, changes):
    """The record after `changes`: {job index: (state, reports)}, as a live update sees the sweep go on."""
    trials = [dataclasses.replace(trial, state=changes[trial.index][0], reports=changes[trial.index][1])
              if trial.index in changes else trial for trial in record.trials]
    return dataclasses.replace(record, trials=trials)


def test_a_live_update_makes_the_summaries_again_only_when_their_inputs_changed(monkeypatch):
    """The live data (report_data with a Memo, as LiveSweep makes it) is the full report's data at every step of a
    sweep going on, while the importance and random search's expected curve are made again only when a job's counted
    value (or the jobs' parameters) changed: a running job's new lines or a job started change neither."""
    from azext_batchai_sweep.core.report import data as data_module
    made = []
    for name in ('report_importance', 'expected_best_of_random'):
        real = getattr(data_module, name)
        monkeypatch.setattr(data_module, name, lambda *a, _real=real, _name=name, **k: made.append(_name) or
                            _real(*a, **k))
    record = synthetic_record(60, epochs=8, seed=3, running=3)
    running = [t for t in record.trials if t.state == 'running']
    more = {t.index: ('running', t.reports + (Report(float(len(t.reports) + 1), 0.5),)) for t in running}
    ended = {**more, running[0].index: ('succeeded', more[running[0].index][1] + (Report(99.0, 0.97),))}
    failed = {**ended, running[1].index: ('failed', more[running[1].index][1])}
    memo = data_module.Memo()
    steps = [(record, 2), (record, 0), (_steps(record, more), 0), (_steps(record, ended), 2),
             (_steps(record, ended), 0), (_steps(record, failed), 0)]
    for step, (state, expected_made) in enumerate(steps):
        del made[:]
        live = data_module.report_data(state, memo=memo)
        assert sorted(made) == sorted(['report_importance', 'expected_best_of_random'][:expected_made]), step
        assert live == data_module.report_data(state), step  # the same data as made whole
        assert json.dumps(live) == json.dumps(data_module.report_data(state))
    assert live['importance'] != data_module.report_data(record)['importance']  # the ended job's value counted
    live['importance'][0]['objective'] = 'changed by a reader'  # a copy: the memo's result is not the data's
    assert data_module.report_data(_steps(record, failed), memo=memo)['importance'][0]['objective'] != \
        'changed by a reader'


def test_a_job_title_kept_from_an_earlier_drawing_is_the_one_its_job_has_now():
    """Plot titles are kept from one drawing to the next (plots._job_title): a job whose state, value, decision or
    parameters changed gets its new title, and values equal as numbers but written apart (True and 1) are told
    apart; the same job gives the same text as one drawn without the kept titles."""
    from azext_batchai_sweep.core.report import plots
    job = {'name': 'j1', 'state': 'running', 'objective': 0.5, 'lastStep': 2.0, 'decision': None,
           'stoppedEarly': False, 'resource': None, 'parent': None, 'error': None, 'values': {'X': 1}}
    first = plots._job_title(job, 'acc')  # pylint: disable=protected-access
    assert first == plots._make_job_title(job, 'acc') and 'j1 (running)' in first  # pylint: disable=protected-access
    changes = [{'state': 'succeeded'}, {'objective': 0.75}, {'lastStep': 3.0}, {'stoppedEarly': True},
               {'decision': {'reason': 'stopped at epoch 2 by bandit'}}, {'values': {'X': True}},
               {'values': {'X': 'adam'}}, {'error': 'HTTP 500'}]
    titles = {first}
    for change in changes:
        changed = dict(job, **change)
        title = plots._job_title(changed, 'acc')  # pylint: disable=protected-access
        assert title == plots._make_job_title(changed, 'acc'), change  # pylint: disable=protected-access
        titles.add(title)
    assert len(titles) == len(changes) + 1
    assert plots._job_title(job, 'loss') != first  # pylint: disable=protected-access
    assert plots._job_title(job, 'acc') == first  # pylint: disable=protected-access
