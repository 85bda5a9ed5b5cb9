"""The report as a person sees it: opened in headless Chromium (Debian's `chromium`), screenshots taken, and what is
drawn asserted on, with every console message, exception and network request of the page recorded.

Without Chromium these tests skip loudly (a warning in the summary); in CI (CI=true) a missing Chromium fails them:
`make test` installs it there (scripts/install_chromium.sh). Screenshots are kept in the test's
tmp dir and, when REPORT_SCREENSHOTS=DIR is set, copied to DIR for a person to look at.
"""
import os
import re
import shutil
import warnings

import pytest

from tests.report.chromium import Browser, find_chromium
from tests.report.synthetic import synthetic_record

pytestmark = [pytest.mark.az, pytest.mark.service]


@pytest.fixture(scope='module')
def browser():
    executable = find_chromium()
    if executable is None:
        message = ('Chromium is not installed: the report was NOT checked in a browser. Install it with '
                   '"sudo scripts/install_chromium.sh" (make test does, as root).')
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(message)
        warnings.warn(message)
        pytest.skip(message)
    started = Browser(executable)
    yield started
    started.close()


def keep(page, tmp_path, name):
    path = page.screenshot(str(tmp_path / name))
    target = os.environ.get('REPORT_SCREENSHOTS')
    if target:
        os.makedirs(target, exist_ok=True)
        shutil.copy(path, target)
    return path


def counts(page, selectors):
    return page.evaluate('({%s})' % ','.join('%r: document.querySelectorAll(%r).length' % (key, css)
                                             for key, css in selectors.items()))


def test_real_sweep_report_in_chromium(browser, reported_sweep, tmp_path):
    data = reported_sweep.data
    best = data['summary']['best']['name']
    failed = [job['name'] for job in data['jobs'] if job['state'] == 'failed']
    page = browser.page()
    page.load(reported_sweep.report_file)
    assert page.evaluate('document.documentElement.getAttribute("data-ready")') == 'true'
    keep(page, tmp_path, 'report-real-sweep.png')
    drawn = counts(page, {
        'curves': '#learning-curves polyline.curve[data-job]', 'failed_ends': '#learning-curves circle.end-failed',
        'best_curves': '#learning-curves polyline.curve.mark-best', 'pc_axes': '#parallel-coordinates g.pc-axis',
        'pc_log_axes': 'g.pc-axis-log', 'pc_categorical': 'g.pc-axis-categorical', 'pc_lines': 'polyline.pc-line',
        'panels': '#objective-vs-parameter g.panel', 'dots': '#objective-vs-parameter circle.dot',
        'best_dots': '#objective-vs-parameter circle.dot.mark-best', 'stairs': '#best-so-far polyline.stairs',
        'expected': '#best-so-far polyline.expected', 'rows': '#job-table tbody tr', 'titles': 'polyline.curve title'})
    assert drawn == {'curves': 12, 'failed_ends': len(failed), 'best_curves': 1, 'pc_axes': 4, 'pc_log_axes': 1,
                     'pc_categorical': 1, 'pc_lines': 12, 'panels': 3, 'dots': 36, 'best_dots': 3, 'stairs': 1,
                     'expected': 1, 'rows': 12, 'titles': 12}
    assert page.evaluate('document.querySelector("polyline.curve.mark-best").getAttribute("data-job")') == best
    assert page.evaluate('document.querySelector("polyline.pc-line.mark-best").getAttribute("data-job")') == best
    # The table starts best first, highlighted; its rows are what the service holds.
    first = page.evaluate('[...document.querySelectorAll("#job-table tbody tr:first-child td")].map(td => '
                          'td.textContent)')
    assert first[1] == best and first[2] == 'succeeded'
    assert page.evaluate('document.querySelector("#job-table tbody tr:first-child").className') == 'mark-best'
    assert page.evaluate('getComputedStyle(document.querySelector("#job-table tbody tr:first-child td"))'
                         '.backgroundColor') != 'rgba(0, 0, 0, 0)'
    # Sorting by clicking a header: by job name, then the other way.
    page.click('#job-table th[data-column="1"]')
    names = page.evaluate('[...document.querySelectorAll("#job-table tbody tr td:nth-child(2)")].map(td => '
                          'td.textContent)')
    assert names == sorted(job['name'] for job in data['jobs'])
    page.click('#job-table th[data-column="1"]')
    assert page.evaluate('document.querySelector("#job-table tbody tr td:nth-child(2)").textContent') == names[-1]
    # Hovering a failed job's end marker highlights that job in every plot and in the table.
    page.hover('#learning-curves circle.end-failed')
    lit = page.evaluate('[...new Set([...document.querySelectorAll(".hl")].map(e => e.getAttribute("data-job")))]')
    assert len(lit) == 1 and lit[0] in failed
    assert page.evaluate('document.querySelectorAll("tr.hl, polyline.pc-line.hl").length') == 2
    assert page.errors() == []
    assert page.requests() == ['file://' + reported_sweep.report_file]


def test_ten_thousand_job_report_in_chromium(browser, tmp_path):
    from azext_batchai_sweep.core.report.data import report_data
    from azext_batchai_sweep.core.report.html import render_html
    path = tmp_path / 'large.html'
    path.write_text(render_html(report_data(synthetic_record(10000, epochs=30, seed=2, running=20))))
    page = browser.page()
    page.load(str(path))
    keep(page, tmp_path, 'report-10000-jobs.png')
    drawn = counts(page, {'curves': 'polyline.curve', 'band': 'polygon.band', 'rows': '#job-table tbody tr',
                          'stopped_ends': 'path.end-stopped', 'best': 'polyline.curve.mark-best'})
    assert drawn['curves'] == 200 and drawn['band'] == 1 and drawn['rows'] == 100 and drawn['best'] == 1
    assert drawn['stopped_ends'] >= 40  # at least a fifth of the drawn lines go to jobs a decision stopped
    assert page.evaluate('document.getElementById("page-info").textContent') == 'rows 1-100 of 10000'
    page.click('#page-next')
    assert page.evaluate('document.getElementById("page-info").textContent') == 'rows 101-200 of 10000'
    title = page.evaluate('document.querySelector("path.end-stopped title").textContent')
    assert 'stopped at epoch' in title and 'by bandit' in title
    assert page.errors() == []
    assert page.requests() == ['file://' + str(path)]


# Every word of a summary card's text (outside <code>: a job name may wrap anywhere) on one line: the x positions of
# its characters only grow. A word split mid-word has a character that starts a new line.
SPLIT_WORDS = r'''(function(){
  var split = [];
  document.querySelectorAll('.card').forEach(function(card){
    var walker = document.createTreeWalker(card, NodeFilter.SHOW_TEXT);
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest('code')) continue;
      var re = /\S+/g, m;
      while ((m = re.exec(node.data))) {
        var range = document.createRange(), tops = new Set();
        for (var i = 0; i < m[0].length; i++) {
          range.setStart(node, m.index + i); range.setEnd(node, m.index + i + 1);
          var r = range.getClientRects()[0];
          if (r) tops.add(Math.round(r.top));
        }
        if (tops.size > 1) split.push(m[0]);
      }
    }
  });
  return split;
})()'''


def small_sweep_report(tmp_path):
    """A sweep of 3-epoch jobs with a metric in lower case and a job that printed two epochs past the decision that
    stopped it (a job goes on printing until it is terminated)."""
    from azext_batchai_sweep.core.report.data import report_data
    from azext_batchai_sweep.core.report.html import render_html
    from azext_batchai_sweep.core.report.model import EXTRA_DECISION, Objective
    from azext_batchai_sweep.core.report.collect import sweep_record
    from azext_batchai_sweep.core.tuning.trial import Report, Trial
    trials = []
    for index, q in enumerate([0.9, 0.8, 0.7, 0.3]):
        stopped = q == 0.3
        reports = tuple(Report(float(e), q * e / 3) for e in range(1, 4))
        decision = {'action': 'stopped', 'rule': 'bandit', 'step': 1.0, 'rung': None, 'bracket': None,
                    'reason': 'stopped at epoch 1 by bandit: 0.1 < 0.3 / 1.1'} if stopped else None
        trials.append(Trial(name='small-{}'.format(index), index=index, params={'lr': q}, reports=reports,
                            state='terminated' if stopped else 'succeeded', stopped_early=stopped,
                            extra={EXTRA_DECISION: decision}))
    record = sweep_record('small', Objective(metric='val_acc', goal='max', step='epoch'), trials,
                          resource_group='rg', workspace='ws', experiment='exp', sampling='grid',
                          generated_at='2026-11-23T12:00:00+00:00')
    data = report_data(record)
    path = tmp_path / 'small-report.html'
    path.write_text(render_html(data))
    return str(path), data


@pytest.mark.parametrize('width', [1280, 1040, 800, 560, 390])
def test_small_things_cards_ticks_stopped_curves_and_headers(browser, tmp_path, width):
    path, data = small_sweep_report(tmp_path)
    page = browser.page()
    page.load(path, width=width)
    keep(page, tmp_path, 'report-small-{}.png'.format(width))
    assert page.evaluate(SPLIT_WORDS) == [], 'a card splits a word at width {}'.format(width)
    ticks = page.evaluate('[...document.querySelectorAll("#learning-curves .axis-x text:not(.axis-title)")]'
                          '.map(t => t.textContent)')
    assert ticks and all(re.fullmatch(r'\d+', tick) for tick in ticks), ticks
    counted = page.evaluate('[...document.querySelectorAll("#best-so-far .axis-x text:not(.axis-title)")]'
                            '.map(t => t.textContent)')
    assert counted and all(re.fullmatch(r'\d+', tick) for tick in counted), counted  # jobs are whole too
    # The stopped job's curve ends at the step of its decision, where its cross is.
    end = page.evaluate('(function(){var p=document.querySelector("polyline.curve[data-job=\'small-3\']");'
                        'return p ? p.points.numberOfItems : document.querySelectorAll('
                        '"circle.curve[data-job=\'small-3\']").length;})()')
    assert end == 1, 'the stopped job is drawn past epoch 1'
    stopped = next(job for job in data['jobs'] if job['name'] == 'small-3')
    assert stopped['lastStep'] == 1.0 and [step for step, _ in stopped['reports']] == [1.0]
    headers = page.evaluate('[...document.querySelectorAll("#job-table th")].map(th => th.textContent)')
    assert 'val_acc' in headers and 'best val_acc' in headers and 'lr' in headers, headers
    assert page.errors() == []
