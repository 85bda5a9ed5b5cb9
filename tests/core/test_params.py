"""Parameter specifications: names, grid values, random draws, validation, FileParamSpec's mapping and secrets."""
import math
import pickle
import random

import pytest
from hypothesis import given, settings, strategies as st

from azext_batchai_sweep.core.errors import SpecError
from azext_batchai_sweep.core.spec.params import DictParamSpec, DiscreteParamSpec, FileParamSpec, NumParamSpec
from azext_batchai_sweep.core.spec.substitution import ExternalValue


def num(**kwargs):
    args = dict(parameterName='X', start=0, end=1, dataType='REAL', scale='LINEAR')
    args.update(kwargs)
    return NumParamSpec(**args)


@pytest.mark.parametrize('name', ['LR', 'LEARNING_RATE', '_X', 'A1', 'B_2_C'])
def test_valid_names(name):
    assert DiscreteParamSpec(parameterName=name, values=[1]).name == name


@pytest.mark.parametrize('name', ['lr', 'Lr', '1X', 'A-B', 'A B', '', None, 'É'])
def test_bad_name_is_an_error_naming_it(name):
    with pytest.raises(SpecError) as exc_info:
        DiscreteParamSpec(parameterName=name, values=[1])
    assert exc_info.value.message == (
        'parameter name {!r} is invalid: use capital letters, digits and underscores, not starting with a digit '
        '(^[A-Z_][A-Z0-9_]*$)'.format(name))
    assert exc_info.value.path == 'parameterName'


def test_linear_step_is_inclusive_and_free_of_float_drift():
    assert num(start=0, end=0.3, step=0.1).values() == [0.0, 0.1, 0.2, 0.3]
    assert num(start=0.1, end=1.0, step=0.1).values()[-1] == 1.0
    assert len(num(start=0.1, end=1.0, step=0.1).values()) == 10


def test_linear_step_never_passes_end():
    assert num(start=0, end=1, step=0.3).values() == [0.0, 0.3, 0.6, 0.9]


def test_linear_step_integer_readme_example():
    spec = num(parameterName='BATCH_SIZE', start=10, end=50, step=10, dataType='INTEGER')
    assert spec.values() == [10, 20, 30, 40, 50]
    assert all(type(v) is int for v in spec.values())


def test_linear_num_values_evenly_spaced_inclusive():
    assert num(start=0, end=1, numValues=5).values() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert num(start=0, end=1, numValues=11).values()[3] == 0.3
    assert num(start=2, end=3, numValues=1).values() == [2.0]


def test_log_num_values_readme_example_is_exact():
    spec = num(start=1e-4, end=1e-1, numValues=4, scale='LOG')
    assert spec.values() == [1e-4, 1e-3, 1e-2, 1e-1]


def test_log_with_one_or_two_values_is_its_bounds():
    assert num(start=0.01, end=10, numValues=1, scale='LOG').values() == [0.01]
    assert num(start=0.01, end=10, numValues=2, scale='LOG').values() == [0.01, 10]


def test_log_is_geometric():
    values = num(start=1, end=1000, numValues=3, scale='LOG').values()
    assert values[0] == 1 and values[2] == 1000
    assert values[1] == pytest.approx(1000 ** 0.5)


def test_integer_rounds_to_nearest_and_drops_repeats_keeping_order():
    # LOG 1..10 with 7 values: 1, 1.47, 2.15, 3.16, 4.64, 6.81, 10 -> 1, 1, 2, 3, 5, 7, 10 -> repeats dropped.
    assert num(start=1, end=10, numValues=7, scale='LOG', dataType='INTEGER').values() == [1, 2, 3, 5, 7, 10]
    assert num(start=0, end=2, numValues=5, dataType='INTEGER').values() == [0, 1, 2]  # 0.5 -> 1, 1.5 -> 2


def test_integer_halves_round_away_from_zero():
    # 0, 2.5, 5 and 0, 1.5, 3: half up (3 and 2), not to even (2 and 2)
    assert num(start=0, end=5, numValues=3, dataType='INTEGER').values() == [0, 3, 5]
    assert num(start=0, end=3, numValues=3, dataType='INTEGER').values() == [0, 2, 3]
    assert num(start=-5, end=0, numValues=3, dataType='INTEGER').values() == [-5, -3, 0]


@pytest.mark.parametrize('kwargs, count', [
    (dict(start=0, end=10 ** 12, step=1, dataType='INTEGER'), 10 ** 12 + 1),
    (dict(start=0.5, end=10 ** 12, step=1, dataType='INTEGER'), 10 ** 12),
    (dict(start=0, end=1, step=1e-12), 10 ** 12 + 1),
    (dict(start=1, end=2, numValues=10 ** 12), 10 ** 12),
])
def test_a_huge_grid_is_counted_without_listing_it(monkeypatch, kwargs, count):
    """10^12 values: counted from start, step and end; listing them would never end (here it fails the test)."""
    spec = num(**kwargs)
    monkeypatch.setattr(spec, '_grid', lambda: pytest.fail('count() listed the grid'))
    assert spec.count() == count


def test_random_uniform_integer_may_take_every_integer():
    spec = num(start=0.5, end=5.5, numValues=5, scale='RANDOM_UNIFORM', dataType='INTEGER', seed=3)
    assert spec.count() == 5
    assert sorted(spec.values()) == [1, 2, 3, 4, 5]


def test_random_uniform_draws_num_values_seeded():
    first = num(start=0, end=10, numValues=5, scale='RANDOM_UNIFORM', seed=42)
    again = num(start=0, end=10, numValues=5, scale='RANDOM_UNIFORM', seed=42)
    other = num(start=0, end=10, numValues=5, scale='RANDOM_UNIFORM', seed=43)
    assert len(first.values()) == 5
    assert first.values() == again.values() != other.values()
    assert all(0 <= v <= 10 for v in first.values())


def test_random_uniform_without_seed_keeps_the_drawn_seed():
    spec = num(start=0, end=10, numValues=3, scale='RANDOM_UNIFORM')
    assert isinstance(spec.seed, int)
    assert num(start=0, end=10, numValues=3, scale='RANDOM_UNIFORM', seed=spec.seed).values() == spec.values()


def test_random_uniform_integer_draws_distinct_integers():
    values = num(start=1, end=5, numValues=5, scale='RANDOM_UNIFORM', dataType='INTEGER', seed=1).values()
    assert sorted(values) == [1, 2, 3, 4, 5]
    with pytest.raises(SpecError, match='numValues'):
        num(start=1, end=5, numValues=6, scale='RANDOM_UNIFORM', dataType='INTEGER', seed=1).values()


@pytest.mark.parametrize('kwargs, path', [
    (dict(start=1, end=1, step=0.1), 'start'),
    (dict(start=2, end=1, step=0.1), 'start'),
    (dict(step=0), 'step'),
    (dict(step=-0.1), 'step'),
    (dict(numValues=0), 'numValues'),
    (dict(numValues=2.5), 'numValues'),
    (dict(scale='LOG', start=0, end=1, numValues=3), 'start'),
    (dict(scale='LOG', start=-1, end=1, numValues=3), 'start'),
    (dict(scale='LOG', start=1, end=10, step=1), 'step'),
    (dict(step=0.1, numValues=3), 'step'),
    (dict(dataType='FLOAT', step=0.1), 'dataType'),
    (dict(scale='EXP', step=0.1), 'scale'),
    (dict(start='0', step=0.1), 'start'),
    (dict(end=float('inf'), step=0.1), 'end'),
    (dict(start=0.2, end=0.8, dataType='INTEGER', numValues=2), 'end'),
])
def test_invalid_numeric_specs_are_clear_errors(kwargs, path):
    with pytest.raises(SpecError) as exc_info:
        num(**kwargs)
    assert exc_info.value.path == path


@pytest.mark.parametrize('make, path, message', [
    (lambda: num(start='0'), 'start', "must be a finite number, not '0'"),
    (lambda: num(end=float('nan')), 'end', 'must be a finite number, not nan'),
    (lambda: num(start=2, end=1), 'start', 'start (2) must be less than end (1)'),
    (lambda: num(dataType='FLOAT'), 'dataType', "must be one of INTEGER, REAL, not 'FLOAT'"),
    (lambda: num(scale='EXP'), 'scale', "must be one of LINEAR, LOG, RANDOM_UNIFORM, not 'EXP'"),
    (lambda: num(numValues=True), 'numValues', 'numValues must be an integer of at least 1, not True'),
    (lambda: num(step=0), 'step', 'step must be a number greater than 0, not 0'),
    (lambda: num(step=float('inf')), 'step', 'step must be a number greater than 0, not inf'),
    (lambda: num(scale='LOG', start=1, end=10, step=1), 'step',
     'step only applies to scale LINEAR; use numValues with scale LOG'),
    (lambda: num(step=0.1, numValues=3), 'step', 'give either step or numValues, not both'),
    (lambda: num(scale='LOG', start=0, end=1), 'start', 'scale LOG needs start > 0, not 0'),
    (lambda: num(start=0.2, end=0.8, dataType='INTEGER'), 'end', 'no integer lies between start (0.2) and end (0.8)'),
    (lambda: num(scale='LOG', start=1, end=10).values(), 'numValues', 'a grid search with scale LOG needs numValues'),
    (lambda: num().count(), 'numValues', 'a grid search with scale LINEAR needs step or numValues'),
    (lambda: num(scale='RANDOM_UNIFORM', seed=1).values(), 'numValues',
     'a grid search with scale RANDOM_UNIFORM needs numValues'),
    (lambda: num(scale='RANDOM_UNIFORM', seed=1).count(), 'numValues',
     'a grid search with scale RANDOM_UNIFORM needs numValues'),
    (lambda: num(start=1, end=5, numValues=6, scale='RANDOM_UNIFORM', dataType='INTEGER', seed=1).values(), 'numValues',
     'numValues (6) is more than the 5 integers between start and end'),
    (lambda: num(start=0.5, end=5.5, numValues=6, scale='RANDOM_UNIFORM', dataType='INTEGER', seed=1).count(),
     'numValues', 'numValues (6) is more than the 5 integers between start and end'),
    (lambda: DiscreteParamSpec(parameterName='D', values=()), 'values', 'values must be a non-empty list'),
    (lambda: DiscreteParamSpec(parameterName='D', values=[1, 'a', 1]), 'values[2]', 'value 1 is listed twice'),
    (lambda: DiscreteParamSpec(parameterName='D', values=[1, float('inf')]), 'values[1]',
     'a parameter value must be a string, an integer or a finite number, not inf'),
    (lambda: DictParamSpec(parameterName='H', values=[{'A': 1, 'B': 2, 'C': 3}, {'A': 2, 'C': 1}]), 'values[1]',
     'every value must have the keys A, B, C, this one has A, C'),
    (lambda: DictParamSpec(parameterName='H', values=[{}]), 'values[0]', 'each value must be a non-empty dict, not {}'),
    (lambda: DictParamSpec(parameterName='H', values=[{'1A': 1}]), 'values[0]',
     "key '1A' is invalid: use letters, digits and underscores, not starting with a digit"),
    (lambda: DictParamSpec(parameterName='H', values=[{'A': None}]), 'values[0].A',
     'a parameter value must be a string, an integer or a finite number, not None'),
])
def test_each_error_names_its_field_and_says_what_is_expected(make, path, message):
    with pytest.raises(SpecError) as refused:
        make()
    assert (refused.value.path, refused.value.message) == (path, message)


def test_grid_without_step_or_num_values_is_an_error_random_search_is_not():
    log = num(start=1e-4, end=1e-1, scale='LOG')
    with pytest.raises(SpecError, match='numValues') as exc_info:
        log.values()
    assert exc_info.value.path == 'numValues'
    with pytest.raises(SpecError, match='step or numValues'):
        num().values()
    assert 1e-4 <= log.sample(random.Random(0)) <= 1e-1


def test_num_sampling_distributions():
    rng = random.Random(7)
    linear = [num(start=0, end=100).sample(rng) for _ in range(2000)]
    assert all(0 <= v <= 100 for v in linear)
    assert 40 < sum(linear) / len(linear) < 60
    log = [num(start=1e-6, end=1, scale='LOG').sample(rng) for _ in range(2000)]
    # log-uniform: about half the draws below the geometric midpoint 1e-3 (a uniform draw would put ~0.1% there)
    assert 0.4 < sum(v < 1e-3 for v in log) / len(log) < 0.6
    ints = {num(start=1, end=4, dataType='INTEGER').sample(rng) for _ in range(200)}
    assert ints == {1, 2, 3, 4}
    log_ints = {num(start=1, end=4, scale='LOG', dataType='INTEGER').sample(rng) for _ in range(500)}
    assert log_ints == {1, 2, 3, 4}


@pytest.mark.parametrize('kwargs, grid', [
    # 0.4, 1.5, 2.6 round to 0, 2, 3: 0 and 3 lie outside 0.4..2.6 and become 1 and 2 (2 twice: one kept)
    (dict(start=0.4, end=2.6, numValues=3), [1, 2]),
    # 0.4, sqrt(0.4 * 2.6) = 1.02, 2.6 round to 0, 1, 3 -> 1, 1, 2
    (dict(start=0.4, end=2.6, numValues=3, scale='LOG'), [1, 2]),
    # 0.4, 1.4, 2.4, 3.4 round to 0, 1, 2, 3 -> 1, 1, 2, 3
    (dict(start=0.4, end=3.6, step=1), [1, 2, 3]),
    # 1.4, 4.13, 6.87, 9.6 round to 1, 4, 7, 10 -> 2, 4, 7, 9: moved to the bounds, none lost
    (dict(start=1.4, end=9.6, numValues=4), [2, 4, 7, 9]),
    # 0.4 and 1.6 round to 0 and 2, both outside: the one integer between them
    (dict(start=0.4, end=1.6, numValues=2), [1]),
    (dict(start=0.6, end=3.4, step=1), [1, 2, 3]),  # 0.6, 1.6, 2.6 round within the range already
    # 1.6 rounds to 2, 2.6 to 3, which becomes 2: the one integer, once
    (dict(start=1.6, end=2.6, numValues=2), [2]),
    (dict(start=0.6, end=1.4, numValues=2), [1]),  # both round to 1
])
def test_integer_grid_with_non_integer_bounds_stays_within_them(kwargs, grid):
    """An INTEGER grid takes only the integers a random draw can give (space_size() counts them): a value that
    rounds past a non-integer bound becomes that bound; count() says how many values the grid has."""
    spec = num(dataType='INTEGER', **kwargs)
    assert num(dataType='INTEGER', **kwargs).count() == len(grid)  # counted before (and without) listing
    assert spec.values() == grid
    assert spec.count() == len(grid)
    draws = {spec.sample(random.Random(seed)) for seed in range(300)}
    assert set(grid) <= draws == set(range(math.ceil(kwargs['start']), math.floor(kwargs['end']) + 1))
    assert spec.space_size() == len(draws)


_BOUNDS = st.decimals(min_value='0.1', max_value='40', places=1).map(float)


@settings(max_examples=100, deadline=None, database=None)
@given(start=_BOUNDS, width=_BOUNDS, form=st.sampled_from(['LINEAR', 'LOG', 'step']),
       size=st.integers(min_value=1, max_value=60), step=st.sampled_from([0.3, 0.5, 1, 1.5, 2, 3.7]))
def test_integer_grid_count_and_space_agree(start, width, form, size, step):
    """For every INTEGER grid: count() (computed, not listed) == len(values()); every value is an integer of
    [ceil(start), floor(end)], which space_size() counts and random draws give."""
    end = round(start + width, 1)
    if math.ceil(start) > math.floor(end):
        return
    kwargs = dict(start=start, end=end, dataType='INTEGER', scale='LINEAR' if form == 'step' else form)
    kwargs.update(step=step) if form == 'step' else kwargs.update(numValues=size)
    grid = num(**kwargs).values()
    assert num(**kwargs).count() == len(grid) == len(set(grid))
    assert all(type(v) is int and math.ceil(start) <= v <= math.floor(end) for v in grid)
    assert len(grid) <= num(**kwargs).space_size() == math.floor(end) - math.ceil(start) + 1


@pytest.mark.parametrize('kwargs', [
    dict(start=0.4, end=100000.6, step=1),
    dict(start=0.4, end=2000.6, numValues=100001),
    dict(start=0.4, end=1e6 + 0.6, numValues=100001, scale='LOG'),
    dict(start=1.4, end=9.6, numValues=100001, scale='LOG'),
    # every value at least 2.3 from the next (ratio 1.000023 from 1e5): 100,001 integers
    dict(start=1e5, end=1e6, numValues=100001, scale='LOG'),
    # a ratio that is 1.0 in floats: every value is 1
    dict(start=0.9999999999999, end=1.0000000000001, numValues=100001, scale='LOG'),
])
def test_a_long_integer_grid_is_counted_as_listed(kwargs):
    """Past 100,000 values count() uses its formulas (a grid of 10^12 is refused without listing it): they agree
    with the listed grid, non-integer bounds included."""
    counted = num(dataType='INTEGER', **kwargs).count()
    grid = num(dataType='INTEGER', **kwargs).values()
    assert counted == len(grid)
    assert min(grid) == math.ceil(kwargs['start']) and max(grid) == math.floor(kwargs['end'])


@pytest.mark.parametrize('scale', ['LINEAR', 'LOG'])
def test_integer_draws_with_non_integer_bounds_stay_within_them(scale):
    """1.4..9.6 draws the integers 2..9, each of them, and never 1 or 10 (a log-uniform draw near 1.4 rounds to
    1, near 9.6 to 10: it must be brought within the range)."""
    spec = num(start=1.4, end=9.6, dataType='INTEGER', scale=scale)
    rng = random.Random(11)
    draws = [spec.sample(rng) for _ in range(1000)]
    assert set(draws) == set(range(2, 10))
    assert all(type(v) is int for v in draws)
    assert spec.space_size() == 8


def test_integers_past_28_digits_round_as_smaller_ones():
    """Decimal's quantize stops at 28 digits: an INTEGER LOG grid or draw up to 1e30 was a decimal.InvalidOperation."""
    spec = num(start=1, end=1e30, numValues=3, scale='LOG', dataType='INTEGER')
    assert spec.values() == [1, 10 ** 15, 10 ** 30]
    assert spec.count() == 3
    assert all(1 <= spec.sample(random.Random(seed)) <= 10 ** 30 for seed in range(50))


def test_space_sizes():
    assert num(start=1, end=10, dataType='INTEGER').space_size() == 10
    assert num().space_size() is None
    assert DiscreteParamSpec(parameterName='D', values=['a', 'b']).space_size() == 2


def test_discrete_values_and_validation():
    spec = DiscreteParamSpec(parameterName='DEVICE_ID', values=['Device_1', 'Device_2', 'Device_3'])
    assert spec.values() == ['Device_1', 'Device_2', 'Device_3']
    assert spec.sample(random.Random(0)) in spec.values()
    with pytest.raises(SpecError, match='non-empty list'):
        DiscreteParamSpec(parameterName='D', values=[])
    with pytest.raises(SpecError, match='twice') as exc_info:
        DiscreteParamSpec(parameterName='D', values=[1, 2, 1])
    assert exc_info.value.path == 'values[2]'
    for bad in (True, None, [1], float('nan')):
        with pytest.raises(SpecError, match='parameter value'):
            DiscreteParamSpec(parameterName='D', values=[1, bad])


def test_dict_values_and_validation():
    values = [{'LEARNING_RATE': 1e-4, 'HIDDEN_LAYER_SIZE': 100}, {'LEARNING_RATE': 1e-3, 'HIDDEN_LAYER_SIZE': 200}]
    spec = DictParamSpec(parameterName='HYPERPARAMS', values=values)
    assert spec.values() == values
    assert spec.keys == ('LEARNING_RATE', 'HIDDEN_LAYER_SIZE')
    with pytest.raises(SpecError, match='keys') as exc_info:
        DictParamSpec(parameterName='H', values=[{'A': 1}, {'B': 1}])
    assert exc_info.value.path == 'values[1]'
    with pytest.raises(SpecError, match="key 'a-b'"):
        DictParamSpec(parameterName='H', values=[{'a-b': 1}])
    with pytest.raises(SpecError, match='non-empty dict'):
        DictParamSpec(parameterName='H', values=[1])


# FileParamSpec: storage.list_file_paths is replaced by a fake here (monkeypatch), so that these tests check the
# mapping/filtering logic alone; tests/storage exercises the real listing against Azurite.
BLOBS = ['/other/a.txt', '/b.txt', '/data/c.txt', '/data/d.txt']


@pytest.fixture
def fake_listing(monkeypatch):
    calls = []

    def list_file_paths(storage_type, account_name, **kwargs):
        calls.append((storage_type, account_name, kwargs))
        return list(BLOBS)
    from azext_batchai_sweep.core.spec import storage
    monkeypatch.setattr(storage, 'list_file_paths', list_file_paths)
    return calls


def blob_spec(**kwargs):
    args = dict(parameterName='DATA_INPUT', storageAccountName='example_name', storageAccountKey='s3cr3t-key',
                storageType='BLOB', mountPath='bfs', container='example_container')
    args.update(kwargs)
    return FileParamSpec(**args)


def test_file_filter_fully_matches_path_with_leading_slash(fake_listing):
    spec = blob_spec(filterStr='/data/.+')
    assert spec.values() == ['$AZ_BATCHAI_MOUNT_ROOT/bfs/data/c.txt', '$AZ_BATCHAI_MOUNT_ROOT/bfs/data/d.txt']
    assert blob_spec(filterStr='.*/[ab].txt').values() == ['$AZ_BATCHAI_MOUNT_ROOT/bfs/other/a.txt',
                                                          '$AZ_BATCHAI_MOUNT_ROOT/bfs/b.txt']
    # fullmatch, not match: a prefix of the path is not enough
    with pytest.raises(SpecError, match='no file'):
        blob_spec(filterStr='/data').values()


def test_file_values_are_external_and_listed_once(fake_listing):
    spec = blob_spec(mountMethod='JOB')
    values = spec.values()
    assert values[0] == '$AZ_BATCHAI_JOB_MOUNT_ROOT/bfs/other/a.txt'
    assert all(isinstance(v, ExternalValue) for v in values)
    assert values[0].external == '/other/a.txt'
    spec.values()
    spec.sample(random.Random(0))
    assert len(fake_listing) == 1
    storage_type, account, kwargs = fake_listing[0]
    assert (storage_type, account, kwargs['container'], kwargs['account_key']) == \
        ('BLOB', 'example_name', 'example_container', 's3cr3t-key')


def test_file_share_directory_is_passed(fake_listing):
    spec = FileParamSpec(parameterName='DATA_INPUT', storageAccountName='example_name', sasToken='sv=sig',
                         storageType='FILE', mountPath='/afs/', fileshare='example_share', directory='/data/')
    assert spec.values()[2] == '$AZ_BATCHAI_MOUNT_ROOT/afs/data/c.txt'
    _, _, kwargs = fake_listing[0]
    assert (kwargs['share'], kwargs['directory'], kwargs['sas_token']) == ('example_share', 'data', 'sv=sig')


@pytest.mark.parametrize('kwargs, path, message', [
    (dict(storageType='DISK'), 'storageType', "must be one of BLOB, FILE, not 'DISK'"),
    (dict(mountMethod='NODE'), 'mountMethod', "must be one of JOB, CLUSTER, not 'NODE'"),
    (dict(mountPath=None), 'mountPath', 'mountPath (the relative mount path of the container or share) is required'),
    (dict(mountPath='/'), 'mountPath', 'mountPath (the relative mount path of the container or share) is required'),
    (dict(container=None), 'container', 'container is required when storageType is BLOB'),
    (dict(fileshare='share'), 'fileshare', 'fileshare only applies to storageType FILE; give container'),
    (dict(storageType='FILE', container=None), 'fileshare', 'fileshare is required when storageType is FILE'),
    (dict(storageType='FILE', fileshare='s'), 'container',
     'container only applies to storageType BLOB; give fileshare'),
    (dict(filterStr='(['), 'filterStr',
     "filterStr '([' is not a valid regular expression: unterminated character set at position 1"),
    (dict(storageAccountName=''), 'storageAccountName', 'storageAccountName is required'),
])
def test_file_spec_arguments_are_validated(kwargs, path, message):
    with pytest.raises(SpecError) as exc_info:
        blob_spec(**kwargs)
    assert (exc_info.value.path, exc_info.value.message) == (path, message)
    assert 's3cr3t-key' not in str(exc_info.value)


def test_file_spec_passes_the_storage_it_names_to_the_listing(fake_listing):
    # only the '/' around mountPath and directory goes (an 'X' there is part of the name)
    spec = FileParamSpec(parameterName='D', storageAccountName='acct', storageAccountKey='k', storageType='BLOB',
                         mountMethod='cluster', mountPath='/X/', container='c', directory='/Xin/',
                         filterStr='/data/.+', accountUrl='https://acct.blob.core.chinacloudapi.cn')
    assert (spec.mount_method, spec.mount_path, spec.directory) == ('CLUSTER', 'X', 'Xin')
    assert spec.values()[0] == '$AZ_BATCHAI_MOUNT_ROOT/X/data/c.txt'
    assert fake_listing == [('BLOB', 'acct', {
        'container': 'c', 'share': None, 'directory': 'Xin', 'account_url': 'https://acct.blob.core.chinacloudapi.cn',
        'account_key': 'k', 'connection_string': None, 'sas_token': None})]


@pytest.mark.parametrize('kwargs, path, message', [
    (dict(filterStr='/none/.+'), 'filterStr',
     "no file in container 'example_container' of example_name matches (directory=None, filterStr='/none/.+')"),
    (dict(storageType='FILE', container=None, fileshare='sh', directory='/empty/'), 'directory',
     "no file in file share 'sh' of example_name matches (directory='empty', filterStr=None)"),
])
def test_a_file_parameter_matching_no_file_says_where_it_looked(monkeypatch, kwargs, path, message):
    from azext_batchai_sweep.core.spec import storage
    monkeypatch.setattr(storage, 'list_file_paths', lambda *args, **kw: [] if kw.get('directory') else list(BLOBS))
    with pytest.raises(SpecError) as refused:
        blob_spec(**kwargs).values()
    assert (refused.value.path, refused.value.message) == (path, message)


def test_file_spec_repr_names_its_storage_and_selection():
    assert repr(blob_spec(directory='d', filterStr='.+')) == (
        "FileParamSpec(parameterName='DATA_INPUT', storageAccountName='example_name', storageType='BLOB', "
        "mountMethod='CLUSTER', mountPath='bfs', container='example_container', directory='d', filterStr='.+')")
    share = blob_spec(storageType='FILE', container=None, fileshare='sh', mountMethod='JOB')
    assert str(share) == (
        "FileParamSpec(parameterName='DATA_INPUT', storageAccountName='example_name', storageType='FILE', "
        "mountMethod='JOB', mountPath='bfs', fileshare='sh', directory=None, filterStr=None)")


def test_file_spec_never_shows_secrets(fake_listing):
    spec = blob_spec(connectionString='AccountKey=c0nn-secret', sasToken='sig=s4s-secret')
    spec.values()
    shown = repr(spec) + str(spec) + repr(vars(spec).keys()) + repr(pickle.dumps(spec))
    for secret in ('s3cr3t-key', 'c0nn-secret', 's4s-secret'):
        assert secret not in shown
    copy = pickle.loads(pickle.dumps(spec))
    assert copy.values() == spec.values()
    assert (copy._account_key, copy._connection_string, copy._sas_token) == (None, None, None)


def test_file_spec_falls_back_to_environment_credentials(fake_listing, monkeypatch):
    monkeypatch.setenv('AZURE_STORAGE_KEY', 'env-key')
    blob_spec(storageAccountKey=None).values()
    assert fake_listing[0][2]['account_key'] == 'env-key'


def test_reprs_show_every_field_as_written():
    assert repr(num(start=0.5, end=2, numValues=3, scale='LOG', dataType='INTEGER')) == (
        "NumParamSpec(parameterName='X', start=0.5, end=2, dataType='INTEGER', scale='LOG', numValues=3, step=None, "
        "seed=None)")
    assert repr(num(step=0.25)) == (
        "NumParamSpec(parameterName='X', start=0, end=1, dataType='REAL', scale='LINEAR', numValues=None, step=0.25, "
        "seed=None)")
    assert repr(num(numValues=2, scale='random_uniform', seed=9)) == (
        "NumParamSpec(parameterName='X', start=0, end=1, dataType='REAL', scale='RANDOM_UNIFORM', numValues=2, "
        "step=None, seed=9)")
    assert repr(DiscreteParamSpec(parameterName='D', values=['a', 1])) == (
        "DiscreteParamSpec(parameterName='D', values=['a', 1])")
    assert repr(DictParamSpec(parameterName='H', values=[{'A': 1}])) == (
        "DictParamSpec(parameterName='H', values=[{'A': 1}])")
