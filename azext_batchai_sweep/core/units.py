"""How a quantity is written for a reader, one function per kind, so that the same number reads the same in every
command's table, its stderr lines and the report (issue 42, item 10: units and wording).

- A duration always names its unit: `12.3s`, `4m05s`, `2h17m` (a plain number of seconds is `durationSeconds` in
  `-o json`, and a column of plain seconds says so in its header).
- A size is in binary units and says so (KiB, MiB: 1,024 and 1,048,576 bytes), as `--code-size-limit` counts them.
- A share of a whole is a percentage with one decimal (`33.3%`), the figure `run` computes (`savedPercent`).
- A job's value (core/tuning/job_value.py: the one number each job is ranked by) is labelled with the objective's
  metric (`val_accuracy`), or `objective` when the sweep's objective has no name (a regex): in `status`, `metrics`,
  `report` and `run`'s end alike.
"""

KIB = 1024
MIB = 1024 * 1024

# A job's value where the objective has no metric name (a --regex objective).
UNNAMED_VALUE = 'objective'


def value_label(metric):
    """The label of a job's value: the objective's metric name, else 'objective'."""
    return metric if isinstance(metric, str) and metric else UNNAMED_VALUE


def duration_text(seconds):
    """`12.3s` under a minute, `4m05s` under an hour, `2h17m` from there; '' for None."""
    if seconds is None:
        return ''
    seconds = float(seconds)
    if seconds < 60:
        return '{:.1f}s'.format(seconds)
    if seconds < 3600:
        return '{}m{:02d}s'.format(int(seconds // 60), int(seconds % 60))
    return '{}h{:02d}m'.format(int(seconds // 3600), int(seconds % 3600 // 60))


def size_text(size):
    """`512 bytes`, `12.6 KiB`, `3.4 MiB` (binary units, named as such)."""
    if size < KIB:
        return '{} bytes'.format(size)
    if size < MIB:
        return '{:.1f} KiB'.format(size / KIB)
    return '{:.1f} MiB'.format(size / MIB)


def percent_text(percent):
    """A percentage (0 to 100, as `savedPercent`) with one decimal: `33.3%`, `0.0%`; '' for None."""
    if percent is None:
        return ''
    return '{:.1f}%'.format(float(percent))
