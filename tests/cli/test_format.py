"""The table transformer of `az batchai sweep create`."""
from collections import OrderedDict

from azext_batchai_sweep._format import sweep_create_table_format


def test_one_row_per_job_a_column_per_parameter_and_per_dict_key():
    result = {'jobs': [
        {'name': 'lr-1', 'parameters': {'LR': 0.0001, 'HP': {'HIDDEN': 100, 'DROP': 0.5}, 'DEV': 'gpu', 'X': None}},
    ]}
    assert sweep_create_table_format(result) == [OrderedDict([
        ('Name', 'lr-1'), ('LR', '0.0001'), ('HP.HIDDEN', '100'), ('HP.DROP', '0.5'), ('DEV', 'gpu'), ('X', '')])]


def test_no_jobs_no_rows():
    assert sweep_create_table_format({'jobs': []}) == []
