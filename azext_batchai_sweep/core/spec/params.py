"""Parameter specifications, with the seed README's camelCase call forms.

Every spec has ``.name``, ``.values()`` (its grid values, a list), ``.count()`` (how many grid values, counted
without listing them: a sweep of 10^12 jobs is refused in microseconds), ``.sample(rng)`` (one random draw from a
``random.Random``) and ``.space_size()`` (how many distinct values it can take, None when continuous).

Bugs of the old library this module does not repeat:

- scale "RANDOM_UNIFORM" was documented but not implemented; here it draws ``numValues`` values from a seeded
  generator (``seed=``, or one drawn from os.urandom and kept in ``.seed`` so the grid can be reproduced);
- LINEAR ranges accumulated float error (0..0.3 step 0.1 ended at 0.30000000000000004 or stopped before 0.3);
  values are computed in decimal arithmetic from the numbers as written;
- FileParamSpec's ``filterStr`` was applied with re.match to paths without their leading '/', so the README's own
  example ``/data/.+`` matched nothing; here it must fully match (re.fullmatch) the path with its leading '/'.
"""
import math
import os
import re
from decimal import Decimal, ROUND_HALF_UP

from ..errors import SpecError
from .naming import canonical_json
from .substitution import ExternalValue

NAME_PATTERN = re.compile(r'^[A-Z_][A-Z0-9_]*\Z')  # \Z: `$` would take a name ending in a newline
DICT_KEY_PATTERN = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
DATA_TYPES = ('INTEGER', 'REAL')
SCALES = ('LINEAR', 'LOG', 'RANDOM_UNIFORM')
STORAGE_TYPES = ('BLOB', 'FILE')
MOUNT_METHODS = ('JOB', 'CLUSTER')
MOUNT_ROOTS = {'CLUSTER': '$AZ_BATCHAI_MOUNT_ROOT', 'JOB': '$AZ_BATCHAI_JOB_MOUNT_ROOT'}
# An INTEGER LOG grid of up to this many values is counted by listing it (exact); a longer one by its formula.
_COUNT_LISTED = 100000


def validate_name(name):
    """Return `name` if it is a valid parameter name (``^[A-Z_][A-Z0-9_]*$``), else raise a SpecError naming it."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise SpecError('parameter name {!r} is invalid: use capital letters, digits and underscores, not starting '
                        'with a digit (^[A-Z_][A-Z0-9_]*$)'.format(name), path='parameterName')
    return name


def _is_number(value):
    # bool is an int subclass, but True as a learning rate is a mistake, not a number.
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_scalar(value, path):
    """Return `value` if it can be a parameter value (str, int or finite float), else raise a SpecError."""
    if isinstance(value, str) or (_is_number(value) and math.isfinite(value)):
        return value
    raise SpecError('a parameter value must be a string, an integer or a finite number, not {!r}'.format(value),
                    path=path)


def _choice(value, allowed, path):
    if isinstance(value, str) and value.upper() in allowed:
        return value.upper()
    raise SpecError('must be one of {}, not {!r}'.format(', '.join(allowed), value), path=path)


def _decimal(number):
    # repr() gives the shortest text that round-trips, i.e. the number as the user wrote it (0.1, not 0.1000...0555).
    return Decimal(repr(number)) if isinstance(number, float) else Decimal(number)


def _round_half_up(number):
    # to_integral_value, not quantize: quantize fails past the context's 28 digits (an INTEGER LOG grid up to 1e30)
    return int(_decimal(number).to_integral_value(rounding=ROUND_HALF_UP))


def _unique(values):
    seen = set()
    return [v for v in values if not (v in seen or seen.add(v))]


class ParamSpec:
    """Base of the parameter specifications."""

    #: keys of a dict parameter's values (None for other kinds)
    keys = None
    #: values come from outside the user's file (file names from storage): shell-quoted in command lines
    external = False

    def __init__(self, parameterName):  # pylint: disable=invalid-name
        self.name = validate_name(parameterName)

    def values(self):
        """The values of this parameter in a grid search, in order."""
        raise NotImplementedError

    def count(self):
        """len(self.values()), without making the list where it can (raises the same SpecErrors)."""
        return len(self.values())

    def sample(self, rng):
        """One value drawn from `rng` (a random.Random) for a random search."""
        raise NotImplementedError

    def space_size(self):
        """How many distinct values a random draw can give; None when the range is continuous."""
        return len(self.values())


class NumParamSpec(ParamSpec):
    """A numerical parameter.

    Grid values: LINEAR with ``step`` gives start, start+step, ... up to end inclusive (never past it); LINEAR with
    ``numValues`` gives that many evenly spaced values, start and end included; LOG with ``numValues`` gives a
    geometric series from start to end inclusive (start > 0); RANDOM_UNIFORM draws ``numValues`` values uniformly in
    [start, end] from ``random.Random(seed)``. INTEGER rounds each value to the nearest integer (halves away from
    zero), keeps it within [ceil(start), floor(end)] (the integers a random draw gives, as ``space_size()`` counts)
    and drops repeats, keeping the order. A grid needs ``step`` or ``numValues`` (LINEAR), ``numValues`` (LOG,
    RANDOM_UNIFORM); a random search needs neither.

    Random search draws: LINEAR and RANDOM_UNIFORM uniformly in [start, end], LOG log-uniformly, INTEGER as integers.

    :param parameterName: the name, ``^[A-Z_][A-Z0-9_]*$``.
    :param start: the lowest value (inclusive).
    :param end: the highest value (inclusive), greater than start.
    :param dataType: "INTEGER" or "REAL".
    :param scale: "LINEAR", "LOG" or "RANDOM_UNIFORM".
    :param numValues: how many grid values (LINEAR, LOG, RANDOM_UNIFORM), at least 1.
    :param step: interval between grid values (LINEAR only), greater than 0.
    :param seed: seed of the RANDOM_UNIFORM grid draw; when None one is drawn from os.urandom and kept in ``.seed``.
    """

    # pylint: disable=invalid-name,too-many-arguments
    def __init__(self, parameterName, start, end, dataType, scale, numValues=None, step=None, seed=None):
        super().__init__(parameterName)
        for field, number in (('start', start), ('end', end)):
            if not _is_number(number) or not math.isfinite(number):
                raise SpecError('must be a finite number, not {!r}'.format(number), path=field)
        if start >= end:
            raise SpecError('start ({!r}) must be less than end ({!r})'.format(start, end), path='start')
        self.start, self.end = start, end
        self.data_type = _choice(dataType, DATA_TYPES, 'dataType')
        self.scale = _choice(scale, SCALES, 'scale')
        if numValues is not None and (not isinstance(numValues, int) or isinstance(numValues, bool) or numValues < 1):
            raise SpecError('numValues must be an integer of at least 1, not {!r}'.format(numValues), path='numValues')
        if step is not None:
            if not _is_number(step) or not math.isfinite(step) or step <= 0:
                raise SpecError('step must be a number greater than 0, not {!r}'.format(step), path='step')
            if self.scale != 'LINEAR':
                raise SpecError('step only applies to scale LINEAR; use numValues with scale {}'.format(self.scale),
                                path='step')
            if numValues is not None:
                raise SpecError('give either step or numValues, not both', path='step')
        if self.scale == 'LOG' and start <= 0:
            raise SpecError('scale LOG needs start > 0, not {!r}'.format(start), path='start')
        self.num_values, self.step = numValues, step
        if self.data_type == 'INTEGER' and math.ceil(start) > math.floor(end):
            raise SpecError('no integer lies between start ({!r}) and end ({!r})'.format(start, end), path='end')
        if self.scale == 'RANDOM_UNIFORM' and seed is None:
            seed = int.from_bytes(os.urandom(8), 'big')
        self.seed = seed
        self._values = None

    def __repr__(self):
        return ('NumParamSpec(parameterName={!r}, start={!r}, end={!r}, dataType={!r}, scale={!r}, numValues={!r}, '
                'step={!r}, seed={!r})'.format(self.name, self.start, self.end, self.data_type, self.scale,
                                               self.num_values, self.step, self.seed))

    def values(self):
        if self._values is None:
            self._values = self._grid()
        return list(self._values)

    def count(self):
        if self._values is not None:
            return len(self._values)
        if self.scale == 'RANDOM_UNIFORM':
            if self.num_values is None:
                raise SpecError('a grid search with scale RANDOM_UNIFORM needs numValues', path='numValues')
            if self.data_type == 'INTEGER' and self.num_values > self.space_size():
                raise SpecError('numValues ({}) is more than the {} integers between start and end'
                                .format(self.num_values, self.space_size()), path='numValues')
            return self.num_values
        if self.scale == 'LINEAR' and self.step is not None:
            start, step = _decimal(self.start), _decimal(self.step)
            raw = int((_decimal(self.end) - start) / step) + 1
            last = start + step * (raw - 1)
        elif self.num_values is None:
            return len(self.values())  # raises the grid's own error
        else:
            raw = self.num_values
            start, last = _decimal(self.start), _decimal(self.end)
            step = (last - start) / (raw - 1) if raw > 1 else Decimal(1)
        if self.data_type != 'INTEGER':
            return raw
        if self.scale == 'LOG' and raw <= _COUNT_LISTED:
            return len(self.values())
        if self.scale == 'LOG':
            rounded = self._log_integer_count()
        else:
            # Rounded to integers: values at least 1 apart stay distinct; closer ones hit every integer in between.
            rounded = raw if step >= 1 else _round_half_up(last) - _round_half_up(start) + 1
        return self._within_count(rounded, raw)

    def _within_count(self, rounded, size):
        """The grid's count once its `rounded` distinct rounded values (of `size` grid values) are brought within
        [ceil(start), floor(end)], as _grid does: with non-integer bounds the first value may round to ceil(start) - 1
        and the last to floor(end) + 1; each becomes the bound, a repeat when the bound is already in the grid."""
        low, high = math.ceil(self.start), math.floor(self.end)

        def rounded_at(index):
            return _round_half_up(self._raw_value(index, size))

        def in_grid(integer):
            # rounding keeps the grid's order: the first index rounding to `integer` or more, found by bisection
            first, past = 0, size
            while first < past:
                middle = (first + past) // 2
                if rounded_at(middle) < integer:
                    first = middle + 1
                else:
                    past = middle
            return first < size and rounded_at(first) == integer
        below, above = rounded_at(0) < low, rounded_at(size - 1) > high
        added = {bound for bound, strays in ((low, below), (high, above)) if strays and not in_grid(bound)}
        return rounded - below - above + len(added)

    def _log_integer_count(self):
        """The distinct integers of a long geometric grid: where consecutive values are less than 1 apart they hit
        every integer up to there, and past it every value is a new integer. Computed in floats, as the grid is."""
        ratio = (self.end / self.start) ** (1.0 / (self.num_values - 1))
        if ratio <= 1.0:
            return _round_half_up(self.end) - _round_half_up(self.start) + 1
        # the first index whose value is at least 1 / (ratio - 1) (from there on the values are >= 1 apart)
        first_far = max(0, math.ceil(math.log(1.0 / ((ratio - 1) * self.start)) / math.log(ratio)))
        if first_far >= self.num_values - 1:
            return _round_half_up(self.end) - _round_half_up(self.start) + 1
        dense_top = _round_half_up(self.start * ratio ** first_far)
        return dense_top - _round_half_up(self.start) + 1 + (self.num_values - 1 - first_far)

    def _grid(self):
        if self.scale == 'RANDOM_UNIFORM':
            return self._random_grid()
        if self.scale == 'LINEAR' and self.step is not None:
            start, step = _decimal(self.start), _decimal(self.step)
            count = int((_decimal(self.end) - start) / step) + 1
            raw = [start + step * i for i in range(count)]
        elif self.num_values is None:
            needed = 'step or numValues' if self.scale == 'LINEAR' else 'numValues'
            raise SpecError('a grid search with scale {} needs {}'.format(self.scale, needed), path='numValues')
        elif self.scale == 'LINEAR':
            start, span, last = _decimal(self.start), _decimal(self.end) - _decimal(self.start), self.num_values - 1
            raw = [start + span * i / last for i in range(last)] + [_decimal(self.end)] if last else [start]
        else:
            raw = self._log_grid()
        if self.data_type == 'INTEGER':
            # Within the range the random draws and space_size() use: 0.4..2.6 rounds 0.4 to 0, which is not in it.
            low, high = math.ceil(self.start), math.floor(self.end)
            return _unique(min(max(_round_half_up(v), low), high) for v in raw)
        return [float(v) for v in raw]

    def _raw_value(self, index, size):
        """The index-th of the `size` values of the (LINEAR or LOG) grid before rounding, computed as _grid does."""
        if self.scale == 'LINEAR' and self.step is not None:
            return _decimal(self.start) + _decimal(self.step) * index
        last = size - 1
        if index in (0, last):
            return self.start if index == 0 else self.end
        if self.scale == 'LINEAR':
            start = _decimal(self.start)
            return start + (_decimal(self.end) - start) * index / last
        low, high = math.log10(self.start), math.log10(self.end)
        return float('%.15g' % 10 ** (low + (high - low) * index / last))

    def _log_grid(self):
        if self.num_values == 1:
            return [self.start]
        low, high, last = math.log10(self.start), math.log10(self.end), self.num_values - 1
        # 15 significant digits remove the last-bit error of pow(), so 1e-4..1e-1 gives exactly 1e-3 and 1e-2.
        inner = [float('%.15g' % 10 ** (low + (high - low) * i / last)) for i in range(1, last)]
        return [self.start] + inner + [self.end]

    def _random_grid(self):
        if self.num_values is None:
            raise SpecError('a grid search with scale RANDOM_UNIFORM needs numValues', path='numValues')
        import random
        rng = random.Random(self.seed)
        if self.data_type == 'INTEGER':
            population = range(math.ceil(self.start), math.floor(self.end) + 1)
            if self.num_values > len(population):
                raise SpecError('numValues ({}) is more than the {} integers between start and end'
                                .format(self.num_values, len(population)), path='numValues')
            return rng.sample(population, self.num_values)
        return [rng.uniform(self.start, self.end) for _ in range(self.num_values)]

    def sample(self, rng):
        if self.scale == 'LOG':
            value = math.exp(rng.uniform(math.log(self.start), math.log(self.end)))
            if self.data_type == 'INTEGER':
                return min(max(_round_half_up(value), math.ceil(self.start)), math.floor(self.end))
            return value
        if self.data_type == 'INTEGER':
            return rng.randint(math.ceil(self.start), math.floor(self.end))
        return rng.uniform(self.start, self.end)

    def space_size(self):
        if self.data_type == 'INTEGER':
            return math.floor(self.end) - math.ceil(self.start) + 1
        return None


class _ListParamSpec(ParamSpec):
    """A parameter whose values are listed by the user; random search picks one uniformly."""

    def __init__(self, parameterName, values):  # pylint: disable=invalid-name
        super().__init__(parameterName)
        if not isinstance(values, (list, tuple)) or not values:
            raise SpecError('values must be a non-empty list', path='values')
        seen = set()
        for i, value in enumerate(values):
            key = canonical_json(self._check(value, 'values[{}]'.format(i)))
            if key in seen:
                # Two equal values would give two jobs with the same parameters, hence the same name.
                raise SpecError('value {!r} is listed twice'.format(value), path='values[{}]'.format(i))
            seen.add(key)
        self._values = list(values)

    def _check(self, value, path):
        raise NotImplementedError

    def __repr__(self):
        return '{}(parameterName={!r}, values={!r})'.format(type(self).__name__, self.name, self._values)

    def values(self):
        return list(self._values)

    def sample(self, rng):
        return rng.choice(self._values)


class DiscreteParamSpec(_ListParamSpec):
    """A parameter taking each of the listed values (strings, integers or numbers).

    :param parameterName: the name, ``^[A-Z_][A-Z0-9_]*$``.
    :param values: the values, a non-empty list without repeats.
    """

    def _check(self, value, path):
        return check_scalar(value, path)


class DictParamSpec(_ListParamSpec):
    """A parameter whose values are dicts, so that related values vary together.

    Every dict must have the same keys (``^[A-Za-z_][A-Za-z0-9_]*$``: they also name the ``PARAM_<NAME>_<KEY>``
    environment variables); substitute one with ``parameters['NAME']['KEY']`` or ``{{NAME.KEY}}``.

    :param parameterName: the name, ``^[A-Z_][A-Z0-9_]*$``.
    :param values: the values, a non-empty list of dicts of strings/integers/numbers, without repeats.
    """

    def __init__(self, parameterName, values):  # pylint: disable=invalid-name
        super().__init__(parameterName, values)
        self.keys = tuple(self._values[0])
        for i, value in enumerate(self._values):
            if set(value) != set(self.keys):
                # A placeholder such as parameters['D']['K'] must resolve in every job.
                raise SpecError('every value must have the keys {}, this one has {}'.format(
                    ', '.join(self.keys), ', '.join(value)), path='values[{}]'.format(i))

    def _check(self, value, path):
        if not isinstance(value, dict) or not value:
            raise SpecError('each value must be a non-empty dict, not {!r}'.format(value), path=path)
        for key, item in value.items():
            if not isinstance(key, str) or not DICT_KEY_PATTERN.match(key):
                raise SpecError('key {!r} is invalid: use letters, digits and underscores, not starting with a '
                                'digit'.format(key), path=path)
            check_scalar(item, '{}.{}'.format(path, key))
        return value


class FileParamSpec(ParamSpec):
    """A parameter taking the path, as seen from the job, of each file in an Azure Blob container or File share.

    The values are ``$AZ_BATCHAI_MOUNT_ROOT/<mountPath><path>`` (mountMethod CLUSTER) or
    ``$AZ_BATCHAI_JOB_MOUNT_ROOT/<mountPath><path>`` (JOB), where ``<path>`` is the file's path in the container or
    share with a leading '/'. The storage is listed once, on the first call to ``values()``. File names come from
    outside the user's file, so the values are marked external: they are shell-quoted where substituted into a
    command line.

    Credentials never appear in ``repr()``, ``str()``, errors or pickles of this object. When none is given, the
    ``AZURE_STORAGE_KEY`` / ``AZURE_STORAGE_CONNECTION_STRING`` / ``AZURE_STORAGE_SAS_TOKEN`` environment variables
    are used, as ``az storage`` does.

    :param parameterName: the name, ``^[A-Z_][A-Z0-9_]*$``.
    :param storageAccountName: the storage account.
    :param storageAccountKey: its key (or give connectionString or sasToken).
    :param storageType: "BLOB" or "FILE".
    :param mountMethod: "CLUSTER" (default) if the storage is mounted by the cluster, "JOB" if by the job.
    :param mountPath: the relative mount path given when mounting the container or share.
    :param container: the Blob container (BLOB).
    :param fileshare: the File share (FILE).
    :param directory: list only below this directory of the container or share.
    :param filterStr: a regular expression that must match the whole path, leading '/' included (re.fullmatch).
    :param accountUrl: the endpoint of the Blob or File service, for non-public clouds or emulators.
    :param connectionString: a storage connection string (endpoint and credential).
    :param sasToken: a SAS token.
    """

    _SECRET_FIELDS = ('_account_key', '_connection_string', '_sas_token')
    external = True

    # pylint: disable=invalid-name,too-many-arguments,too-many-instance-attributes
    def __init__(self, parameterName, storageAccountName, storageAccountKey=None, storageType=None,
                 mountMethod='CLUSTER', mountPath=None, container=None, fileshare=None, directory=None,
                 filterStr=None, accountUrl=None, connectionString=None, sasToken=None):
        super().__init__(parameterName)
        if not isinstance(storageAccountName, str) or not storageAccountName:
            raise SpecError('storageAccountName is required', path='storageAccountName')
        self.storage_account_name = storageAccountName
        self.storage_type = _choice(storageType, STORAGE_TYPES, 'storageType')
        self.mount_method = _choice(mountMethod, MOUNT_METHODS, 'mountMethod')
        if not isinstance(mountPath, str) or not mountPath.strip('/'):
            raise SpecError('mountPath (the relative mount path of the container or share) is required',
                            path='mountPath')
        self.mount_path = mountPath.strip('/')
        if self.storage_type == 'BLOB':
            if not container:
                raise SpecError('container is required when storageType is BLOB', path='container')
            if fileshare:
                raise SpecError('fileshare only applies to storageType FILE; give container', path='fileshare')
        else:
            if not fileshare:
                raise SpecError('fileshare is required when storageType is FILE', path='fileshare')
            if container:
                raise SpecError('container only applies to storageType BLOB; give fileshare', path='container')
        self.container, self.fileshare = container, fileshare
        self.directory = directory.strip('/') if directory else None
        if filterStr is not None:
            try:
                self._filter = re.compile(filterStr)
            except (re.error, TypeError) as exc:
                raise SpecError('filterStr {!r} is not a valid regular expression: {}'.format(filterStr, exc),
                                path='filterStr') from None
        else:
            self._filter = None
        self.filter_str = filterStr
        self.account_url = accountUrl
        self._account_key, self._connection_string, self._sas_token = storageAccountKey, connectionString, sasToken
        self._values = None

    def __repr__(self):
        source = 'container={!r}'.format(self.container) if self.container else 'fileshare={!r}'.format(self.fileshare)
        return ('FileParamSpec(parameterName={!r}, storageAccountName={!r}, storageType={!r}, mountMethod={!r}, '
                'mountPath={!r}, {}, directory={!r}, filterStr={!r})'.format(
                    self.name, self.storage_account_name, self.storage_type, self.mount_method, self.mount_path,
                    source, self.directory, self.filter_str))

    __str__ = __repr__

    def __getstate__(self):
        # A pickled spec must not carry the credentials; its listed values (if any) are kept.
        state = dict(self.__dict__)
        for field in self._SECRET_FIELDS:
            state[field] = None
        return state

    def values(self):
        if self._values is None:
            root = '{}/{}'.format(MOUNT_ROOTS[self.mount_method], self.mount_path)
            values = [ExternalValue(root, path) for path in self._list() if self._selects(path)]
            if not values:
                # A sweep of zero jobs is never what was meant: most likely a wrong directory or filterStr.
                raise SpecError('no file in {} matches (directory={!r}, filterStr={!r})'.format(
                    self._where(), self.directory, self.filter_str), path='filterStr' if self._filter else 'directory')
            self._values = values
        return list(self._values)

    def _where(self):
        if self.container:
            return 'container {!r} of {}'.format(self.container, self.storage_account_name)
        return 'file share {!r} of {}'.format(self.fileshare, self.storage_account_name)

    def _selects(self, path):
        return self._filter is None or self._filter.fullmatch(path) is not None

    def _list(self):
        from .storage import list_file_paths, resolve_storage_credentials
        credentials = {'account_key': self._account_key, 'connection_string': self._connection_string,
                       'sas_token': self._sas_token}
        if not any(credentials.values()):
            credentials = resolve_storage_credentials()
        return list_file_paths(self.storage_type, self.storage_account_name, container=self.container,
                               share=self.fileshare, directory=self.directory, account_url=self.account_url,
                               **credentials)

    def sample(self, rng):
        return rng.choice(self.values())
