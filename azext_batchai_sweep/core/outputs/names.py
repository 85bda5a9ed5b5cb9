"""The metric names a log holds (Katib's `name=value` pairs): what an objective or `--metric` that matches nothing
is compared with, so the error can say "val_acc: no job has reported it; seen: val_accuracy, loss, epoch"."""
import re

from .download import STDOUTERR, tail_job_output
from .metrics import _NUMBER

# A name as katib_pattern accepts it: not preceded by a name character, then `=` and a number.
NAME_VALUE = re.compile(r'(?<![\w.-])([A-Za-z_][\w.\-/]*)[ \t]*=[ \t]*' + _NUMBER)
# How many lines of the end of a job's log are read to name what it reports.
TAIL_LINES = 200


def names_in_line(line):
    """The names of the `name=number` pairs of one line of text, in order."""
    return NAME_VALUE.findall(line)


class NameCounter:
    """Names seen in lines, in the order first seen; ``lines``: how many lines had at least one."""

    def __init__(self):
        self.names = {}
        self.lines = 0

    def add_line(self, line):
        found = names_in_line(line)
        if found:
            self.lines += 1
            for name in found:
                self.names[name] = self.names.get(name, 0) + 1
        return found

    def most_common(self, limit=12):
        return sorted(self.names, key=lambda n: -self.names[n])[:limit]


def names_in_outputs(client, resource_group, workspace, experiment, job_names, file='stdout.txt',
                     output_directory_id=STDOUTERR, retry=None, jobs=3):
    """The metric names in the ends of the logs of up to `jobs` of `job_names`, most frequent first."""
    counter = NameCounter()
    for name in list(job_names)[:jobs]:
        tail = tail_job_output(client, resource_group, workspace, experiment, name, file, output_directory_id,
                               TAIL_LINES, retry=retry)
        for line in tail['lines']:
            counter.add_line(line)
    return counter.most_common()


def seen_text(names):
    return ', '.join(names) if names else 'no name=value pair at all'


def nothing_matched(client, resource_group, workspace, experiment, sweep_name, finished, *, metric=None, regex=None,
                    file='stdout.txt', output_directory_id=STDOUTERR, retry=None):
    """The NotFoundError of a metric (or regex) that matches nothing in the output of the finished jobs `finished`,
    naming the metric names their logs do hold."""
    from ..errors import NotFoundError
    names = names_in_outputs(client, resource_group, workspace, experiment, finished, file, output_directory_id,
                             retry=retry)
    what = 'metric {}'.format(metric) if metric else 'regex {!r}'.format(regex)
    return NotFoundError(
        '{} matches nothing in the {} of the {} finished job(s) of sweep {}; names there: {}'.format(
            what, file, len(finished), sweep_name, seen_text(names)),
        recommendation='Give one of these names to --metric (Katib\'s NAME=VALUE), or a --regex with a group '
                       'around the number; see the end of a job\'s output with "--job {} --tail 50" on '
                       '"az batchai sweep status".'.format(finished[0]))
