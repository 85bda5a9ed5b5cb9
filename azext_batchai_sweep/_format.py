# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Table transformers (`-o table`): lists of OrderedDict rows, title-case headers, '' for a missing value."""
from collections import OrderedDict


def sweep_create_table_format(result):
    """One row per planned job: its name, then a column per parameter (`NAME.KEY` for a dict parameter's keys)."""
    return [_planned_job_row(job) for job in result['jobs']]


def _planned_job_row(job):
    row = OrderedDict()
    row['Name'] = job['name']
    for name, value in job['parameters'].items():
        if isinstance(value, dict):
            for key, item in value.items():
                row['{}.{}'.format(name, key)] = _cell(item)
        else:
            row[name] = _cell(value)
    return row


def _cell(value):
    if value is None:
        return ''
    # repr() keeps 0.001 as 0.001 and 1e-05 as 1e-05, the shortest text that reads back to the same float.
    return repr(value) if isinstance(value, float) else str(value)
