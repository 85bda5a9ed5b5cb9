"""Reports from log bytes as they arrive: lines cut between two reads, Katib name=value with a step key, a regex
with groups value and step, lines without the metric."""
from azext_batchai_sweep.core.tuning.reports import LogReader, ReportParser


def steps_values(reader):
    return [(r.step, r.value) for r in reader.reports]


def test_lines_cut_between_reads_wait_for_their_end():
    reader = LogReader(ReportParser({'metric': 'val_accuracy', 'step': 'epoch', 'goal': 'max'}))
    reader.feed(b'training...\nepoch=1 loss=0.5 val_accuracy=0.6')  # the last line is not complete yet
    assert steps_values(reader) == []
    reader.feed(b'1\nepoch=2 loss=0.4 my_val_accuracy=0.9 val_accuracy=0.7\nepoch=3 val_')
    assert steps_values(reader) == [(1.0, 0.61), (2.0, 0.7)]
    assert reader.offset == len(b'training...\nepoch=1 loss=0.5 val_accuracy=0.61\n'
                                b'epoch=2 loss=0.4 my_val_accuracy=0.9 val_accuracy=0.7\nepoch=3 val_')
    reader.feed(b'accuracy=0.75', final=True)  # a finished log's last line needs no newline
    assert steps_values(reader) == [(1.0, 0.61), (2.0, 0.7), (3.0, 0.75)]


def test_without_a_step_key_reports_are_numbered_and_a_line_without_the_step_is_no_report():
    numbered = LogReader(ReportParser({'metric': 'loss', 'goal': 'min'}))
    numbered.feed(b'loss=3\nnothing here\nloss=2.5e-1\nloss=nan\n')
    assert steps_values(numbered) == [(1.0, 3.0), (2.0, 0.25)]
    stepped = LogReader(ReportParser({'metric': 'loss', 'step': 'iteration', 'goal': 'min'}))
    stepped.feed(b'loss=3\niteration=20 loss=2\n')
    assert steps_values(stepped) == [(20.0, 2.0)]


def test_regex_with_value_and_step_groups():
    parser = ReportParser({'regex': r'^\s*(?P<step>\d+)\s+\S+\s+(?P<value>[\d.]+)', 'goal': 'max'})
    reader = LogReader(parser)
    reader.feed('epoch  loss  acc\n    1  0.52  0.81\n    2  0.40  0.86\n'.encode('utf-8'))
    assert steps_values(reader) == [(1.0, 0.81), (2.0, 0.86)]


def test_a_misnamed_objective_is_evidence_only_once_a_job_gets_through_two_steps_without_it():
    """Issue 27: many lines per epoch before the metric at the epoch's end are not evidence; a second epoch is."""
    from azext_batchai_sweep.core.tuning.reports import LogReader, ReportParser, objective_unreported
    objective = {'metric': 'val_acc', 'goal': 'max', 'step': 'epoch'}
    reader = LogReader(ReportParser(objective))
    reader.feed(''.join('epoch=1 batch={} loss=0.5\n'.format(b) for b in range(50)).encode())
    assert objective_unreported(objective, {'job': reader}, set()) is None
    reader.feed(b'epoch=1 val_accuracy=0.7\nepoch=2 batch=0 loss=0.4\n')
    assert objective_unreported(objective, {'job': reader}, set()) == (
        'val_acc: no job has reported it; seen: epoch, batch, loss, val_accuracy (in the output of job)')
    right = {'metric': 'val_accuracy', 'goal': 'max', 'step': 'epoch'}
    fine = LogReader(ReportParser(right))
    fine.feed(b'epoch=1 batch=0 loss=0.5\nepoch=1 val_accuracy=0.7\nepoch=2 batch=0 loss=0.4\n')
    assert objective_unreported(right, {'job': fine}, {'job'}) is None  # it reported: nothing to say
