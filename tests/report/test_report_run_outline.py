"""The report's Run card and inherited jobs (issue 28, items 2-4): why a `sweep run` ended, its sampler's settings
and result limits, and the jobs a warm start inherited, each marked, escaped like everything a job or a user wrote."""
import re

from azext_batchai_sweep.core.report.data import report_data
from azext_batchai_sweep.core.report.html import render_html
from azext_batchai_sweep.core.tuning.controller import END_PLATEAU, END_REASONS, END_STOP_AT
from tests.report.synthetic import synthetic_record

OUTLINE = {
    'sampling': {'type': 'hyperband', 'sampler': 'bayesian', 'startupJobs': None, 'randomFraction': 1 / 3,
                 'iterations': 2,
                 'resource': 'EPOCHS', 'minResource': 1, 'maxResource': 27, 'eta': 3, 'seed': 7,
                 'warmStart': ['lr-a', 'runs/<b>.json']},
    'limits': {'noImprovementJobs': 3, 'maxConcurrentJobs': 2},
    'warmStart': {'sources': [{'source': 'lr-a', 'inherited': 2, 'skipped': 1,
                               'notes': ['1 job(s) has no parameter UNITS: skipped']},
                              {'source': 'runs/<b>.json', 'inherited': 0, 'skipped': 0, 'notes': []}],
                  'inherited': 2,
                  'jobs': [{'source': 'lr-a', 'name': 'lr-a-1', 'parameters': {'OPT': 'adam', 'UNITS': 8},
                            'objective': 0.91, 'resource': 27.0},
                           {'source': 'lr-a', 'name': '<img src=x>', 'parameters': {'OPT': 'sgd', 'UNITS': 16},
                            'objective': 0.85, 'resource': None}]},
    'ended': END_PLATEAU, 'endedBecause': END_REASONS[END_PLATEAU],
}


def test_the_run_card_says_why_it_ended_and_how_it_sampled():
    data = report_data(synthetic_record(12, sampling='hyperband'), run=OUTLINE)
    assert data['run'] == OUTLINE
    html = render_html(data)
    card = re.search(r'<div class="card"><h3>Run</h3>(.*?)</div></div>', html).group(1)
    assert '<div class="big ended">plateau</div>' in card
    assert 'limits.noImprovementJobs jobs in a row ran to the end without a better best' in card
    assert 'hyperband: sampler bayesian, randomFraction 0.3333, iterations 2, eta 3, minResource 1, maxResource 27, ' \
        'seed 7' in card
    assert 'limits: noImprovementJobs 3, maxConcurrentJobs 2' in card
    assert 'warm start: 2 job(s) inherited from lr-a (2), runs/&lt;b&gt;.json (0)' in card
    stop_at = dict(OUTLINE, ended=END_STOP_AT, endedBecause=END_REASONS[END_STOP_AT], limits={'stopAt': 0.9})
    html = render_html(report_data(synthetic_record(12), run=stop_at))
    assert '<div class="big ended">stopAt</div>' in html and 'the best objective reached limits.stopAt' in html
    assert 'limits: stopAt 0.9' in html
    # a run that has not ended (or a sweep no controller ran): no end claimed, no card
    running = {key: value for key, value in OUTLINE.items() if key not in ('ended', 'endedBecause')}
    assert 'not ended yet' in render_html(report_data(synthetic_record(12), run=running))
    plain = render_html(report_data(synthetic_record(12)))
    assert '<h3>Run</h3>' not in plain and 'id="inherited"' not in plain


def test_inherited_jobs_are_listed_and_marked_apart_from_the_sweep():
    data = report_data(synthetic_record(12), run=OUTLINE)
    assert data['summary']['jobs'] == 12  # inherited jobs are no jobs of this sweep
    html = render_html(data)
    section = re.search(r'<section id="inherited">(.*?)</section>', html).group(1)
    assert section.count('<span class="chip inherited">inherited</span>') == 2
    assert '2 finished job(s) of earlier sweeps the sampler learned from' in section
    assert '<li>lr-a: 1 job(s) has no parameter UNITS: skipped</li>' in section
    assert '<code>&lt;img src=x&gt;</code>' in section and '<img src=x>' not in html
    assert '<th>OPT</th><th>UNITS</th>' in section and '<td>0.91</td><td>27</td><td>adam</td><td>8</td>' in section
