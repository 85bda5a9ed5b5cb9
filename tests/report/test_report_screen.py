"""`status --watch`'s screen (core/report/screen.py): redrawn in place on a terminal, one line per change (and a
line a while) elsewhere."""
import io

from azext_batchai_sweep.core.report.data import report_data
from azext_batchai_sweep.core.report.screen import MAX_RUNNING_SHOWN, Screen, screen_lines, summary_line
from azext_batchai_sweep.core.report.svg import fmt
from tests.report.synthetic import synthetic_record


def data_of(count, running=0, seed=0):
    return report_data(synthetic_record(count, epochs=6, seed=seed, running=running))


def test_the_screen_names_counts_best_and_the_running_jobs_with_their_last_step():
    data = data_of(30, running=4)
    lines = screen_lines(data, '12:00:01 UTC')
    assert lines[0] == 'Sweep synthetic - live, 12:00:01 UTC'
    best = data['summary']['best']
    assert best['name'] in lines[1] and lines[1].startswith('30 job(s): ')
    assert '{} running'.format(data['summary']['counts']['running']) in lines[1]
    running = [job for job in data['jobs'] if job['state'] == 'running']
    assert len(running) == 4 and lines[2] == 'running:'
    for job, line in zip(running, lines[3:]):
        # The step named as the jobs print it (epoch=N), the value as every command labels it (the metric).
        assert line == '  {}  epoch {} val_accuracy {}'.format(job['name'], fmt(job['lastStep']),
                                                              fmt(job['objective'])), line
    assert all(len(line) <= 100 for line in lines)
    many = data_of(40, running=MAX_RUNNING_SHOWN + 5, seed=1)
    assert screen_lines(many, 't')[-1] == '  ... and 5 more'
    assert screen_lines(data, 't', final=True)[0].endswith('final, t')


def test_on_a_terminal_each_look_redraws_the_previous_screen_in_place():
    out = io.StringIO()
    screen = Screen(out, tty=True)
    first, second = data_of(10, running=3), data_of(12, running=2, seed=2)
    screen.show(first, 'a')
    drawn = len(screen_lines(first, 'a'))
    assert '\x1b[' not in out.getvalue()
    before = len(out.getvalue())
    screen.show(second, 'b')
    again = out.getvalue()[before:]
    assert again.startswith('\x1b[{}F\x1b[J'.format(drawn))  # up to the first line, erase down, draw again
    assert again[len('\x1b[{}F\x1b[J'.format(drawn)):] == ''.join(line + '\n' for line in screen_lines(second, 'b'))
    screen.show(second, 'c')
    assert out.getvalue().endswith('\x1b[{}F\x1b[J'.format(len(screen_lines(second, 'b'))) +
                                   ''.join(line + '\n' for line in screen_lines(second, 'c')))


def test_elsewhere_a_line_per_change_and_one_a_while():
    out = io.StringIO()
    now = [0.0]
    screen = Screen(out, tty=False, line_every=60, clock=lambda: now[0])
    first, second = data_of(10, running=3), data_of(12, running=2, seed=2)
    screen.show(first, 't1')
    screen.show(first, 't2')  # nothing new: no line
    now[0] = 30.0
    screen.show(second, 't3')
    now[0] = 50.0
    screen.show(second, 't4')
    now[0] = 91.0
    screen.show(second, 't5')  # a minute without a line: one to say it is alive
    screen.show(second, 't6', final=True)
    lines = out.getvalue().splitlines()
    assert lines == ['t1 ' + summary_line(first), 't3 ' + summary_line(second), 't5 ' + summary_line(second),
                     't6 ' + summary_line(second) + ' (final)']
    assert '\x1b' not in out.getvalue()
