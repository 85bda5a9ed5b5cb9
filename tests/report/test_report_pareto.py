"""The report's Pareto section (core/report/pareto.py) from a `sweep run`'s figures: drawn for 2 objectives (a scatter,
the front joined), 3 and more (parallel coordinates of the front), constraints alone (the table), absent otherwise;
job names and metrics escaped."""
from azext_batchai_sweep.core.report.data import report_data
from azext_batchai_sweep.core.report.html import render_html
from azext_batchai_sweep.core.report.pareto import pareto_section
from azext_batchai_sweep.core.tuning.front import front_figures
from azext_batchai_sweep.core.tuning.objectives import Constraint, Objectives
from azext_batchai_sweep.core.tuning.trial import Report, Trial
from tests.report.synthetic import synthetic_record


def _trials(values, mem):
    return [Trial(name='j<%d>' % i, index=i, params={'X': i}, state='succeeded', reports=(Report(1, v[0]),),
                  metrics=dict({'m%d' % k: x for k, x in enumerate(v[1:], 1)}, mem=mem[i]))
            for i, v in enumerate(values)]


def _data(objectives, trials):
    return {'summary': {'figures': {'pareto': front_figures(trials, trials, objectives)}}}


def test_three_objectives_draw_parallel_coordinates_of_the_front():
    objectives = Objectives([('m0', 'max'), ('m1', 'min'), ('m2', 'min')], [Constraint('mem', maximum=5)])
    trials = _trials([(1, 1, 3), (2, 2, 2), (3, 3, 1), (0.5, 4, 4), (9, 0, 0)], [1, 1, 1, 1, 6])
    html = pareto_section(_data(objectives, trials))
    assert html.count('class="pc-line"') == 3 and 'parallel coordinates of 3 objectives' in html
    assert 'class="dot' not in html
    assert html.count('<tr class="front">') == 3 and html.count('<tr class="ranked">') == 1
    assert html.count('<tr class="infeasible">') == 1 and 'breaks mem &lt;= 5 (6)' in html
    assert 'j&lt;4&gt;' in html and 'j<4>' not in html


def test_two_objectives_draw_the_front_joined():
    objectives = Objectives([('m0', 'max'), ('m1', 'min')])
    trials = _trials([(1, 1), (2, 2), (1.5, 3), (3, 3)], [0, 0, 0, 0])
    html = pareto_section(_data(objectives, trials))
    assert html.count('class="dot front"') == 3 and html.count('class="dot ranked"') == 1
    assert html.count('class="front-line"') == 1 and 'class="dot infeasible"' not in html


def test_constraints_alone_show_the_table_and_other_sweeps_nothing():
    objectives = Objectives([('m0', 'max')], [Constraint('mem', minimum=1)])
    html = pareto_section(_data(objectives, _trials([(1,), (2,)], [0, 3])))
    assert '<h2>Constraints</h2>' in html and '<svg' not in html
    assert html.count('<tr class="infeasible">') == 1 and 'breaks mem &gt;= 1 (0)' in html
    assert pareto_section({'summary': {'figures': {'best': None}}}) == ''
    assert pareto_section({'summary': {'figures': None}}) == ''


def test_the_page_holds_the_section_and_its_styles_once():
    objectives = Objectives([('m0', 'max'), ('m1', 'min')])
    figures = _data(objectives, _trials([(1, 1), (2, 2)], [0, 0]))['summary']['figures']
    data = report_data(synthetic_record(6), figures=dict(figures, compute={'jobSteps': 1, 'jobStepsFull': 1,
                                                                           'jobStepsSaved': 0, 'savedPercent': 0.0,
                                                                           'stepLabel': 'epoch', 'jobSeconds': 1}))
    html = render_html(data)
    assert html.count('<style>') == 1 and '#pareto .front-line' in html
    assert html.index('id="best-so-far"') < html.index('id="pareto"') < html.index('id="jobs"')
    assert 'id="pareto"' not in render_html(report_data(synthetic_record(6)))  # a sweep without: as before
