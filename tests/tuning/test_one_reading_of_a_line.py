"""One reading of a line (issue 41, item 7): a line naming a metric twice (`acc=0.7 lat=1 lat=1e308`) has one value
of it, its last, for every consumer: `metrics` (every reduction, streamed, read backwards), `sweep run`'s reports,
its other objectives and constraints (and so the Pareto front) and the report's learning curves. The same lines go
through each consumer here, and each must read the same numbers."""
import pytest

from azext_batchai_sweep.core.outputs.metrics import MetricExtractor
from azext_batchai_sweep.core.report.intermediate import ReportReader
from azext_batchai_sweep.core.tuning.objectives import Objectives
from azext_batchai_sweep.core.tuning.reports import LogReader, ReportParser
from azext_batchai_sweep.core.tuning.trial import Trial

# (log, metric, the value of each line holding it, in order)
CASES = [
    ('epoch=1 acc=0.7 lat=1 lat=1e308\n', 'lat', [1e308]),
    ('epoch=1 acc=0.5 acc=0.6\nepoch=2 acc=0.9 acc=0.1\n', 'acc', [0.6, 0.1]),
    ('epoch=1 lat=3\nepoch=2 lat=5 junk lat=4 more\nepoch=3 lat=2\n', 'lat', [3, 4, 2]),
    ('epoch=1 acc=1 acc=2 acc=3 acc=4\n', 'acc', [4]),
    ('epoch=1 xacc=9 acc=1 acc.b=8\n', 'acc', [1]),  # longer names are other metrics, as before
]


def _metrics_reads(log, metric):
    """What `metrics` reads with each reduction, from text, from 1-byte chunks and backwards."""
    data = log.encode()
    reads = {}
    for reduce in ('last', 'first', 'min', 'max', 'mean'):
        extractor = MetricExtractor(metric_name=metric, reduce=reduce)
        reads[reduce] = {extractor.extract_text(log),
                         extractor.extract_chunks([data[i:i + 1] for i in range(len(data))]),
                         extractor.extract_chunks([data])}
    backwards = MetricExtractor(metric_name=metric).extract_last_backwards(lambda s, e: data[s:e], len(data))
    reads['last'].add(backwards)
    return reads


@pytest.mark.parametrize('log, metric, values', CASES)
def test_metrics_reads_each_line_once_by_its_last_value(log, metric, values):
    reads = _metrics_reads(log, metric)
    assert reads['last'] == {values[-1]}
    assert reads['first'] == {values[0]}
    assert reads['min'] == {min(values)} and reads['max'] == {max(values)}
    assert all(abs(v - sum(values) / len(values)) <= 1e-9 * max(1, abs(sum(values))) for v in reads['mean'])


@pytest.mark.parametrize('log, metric, values', CASES)
def test_sweep_run_reads_the_same_values_as_objective_and_as_other_metric(log, metric, values):
    # As the objective: one report per line, the line's value.
    reader = LogReader(ReportParser({'metric': metric, 'step': 'epoch'}))
    reader.feed(log.encode(), final=True)
    assert [r.value for r in reader.reports] == values
    # As another objective or a constraint: the last value in the log, which the Pareto front and feasibility use.
    other = LogReader(ReportParser({'metric': 'epoch'}, extra_metrics=[metric]))
    other.feed(log.encode(), final=True)
    assert other.metrics[metric] == values[-1]
    objectives = Objectives([('epoch', 'max'), (metric, 'min')])
    trial = Trial(name='j', index=0, params={}, state='succeeded', reports=tuple(reader.reports),
                  metrics=other.metrics)
    assert objectives.values(trial)[1] == MetricExtractor(metric_name=metric).extract_text(log)


@pytest.mark.parametrize('log, metric, values', CASES)
def test_the_report_draws_the_same_values(log, metric, values):
    key, reports = ReportReader(MetricExtractor(metric_name=metric), step_key='epoch').read_text(log)
    assert key == 'epoch' and [value for _, value in reports] == values


def test_a_regex_objective_reads_a_line_by_its_last_match_everywhere():
    log = 'acc=1 acc=2\nnothing\nacc=3 acc=0.5\n'
    regex = r'acc=(?P<value>[0-9.]+)'
    assert MetricExtractor(regex=regex, reduce='mean').extract_text(log) == pytest.approx(1.25)
    assert MetricExtractor(regex=regex, reduce='first').extract_text(log) == 2
    reader = LogReader(ReportParser({'regex': regex}))
    reader.feed(log.encode(), final=True)
    assert [r.value for r in reader.reports] == [2, 0.5]
    _, reports = ReportReader(MetricExtractor(regex=regex)).read_text(log)
    assert [value for _, value in reports] == [2, 0.5]


def test_the_step_of_a_line_is_its_last_step_key_too():
    log = 'epoch=1 epoch=2 acc=0.5\n'
    reader = LogReader(ReportParser({'metric': 'acc', 'step': 'epoch'}))
    reader.feed(log.encode(), final=True)
    assert [r.step for r in reader.reports] == [2]
    assert ReportReader(MetricExtractor(metric_name='acc'), step_key='epoch').read_text(log)[1] == [(2.0, 0.5)]


def test_reading_a_line_of_many_matches_stays_linear():
    import re
    import time
    from azext_batchai_sweep.core.outputs.metrics import line_matches
    line = 'lat=1 ' * 100000 + 'lat=2\n'
    started = time.monotonic()
    assert [m.group(1) for m in line_matches(re.compile(r'lat=(\d)'), line)] == ['2']
    assert MetricExtractor(metric_name='lat', reduce='max').extract_text(line) == 2
    assert time.monotonic() - started < 5
