# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The old `utilities.job_factory`: parameter classes and ParameterSweep with the old call forms and return shapes.

Both generations of names work: the last `utilities` code's ``NumericParameter(parameter_name=..., data_type=...,
num_values=...)`` (snake_case, its positional order and defaults) and the first README's ``NumParamSpec(
parameterName=..., dataType=..., numValues=...)`` (the core's own classes). Where the first README and the old code
disagree, the old code decides here: ``generate_jobs(jcp)`` and ``generate_jobs_random_search(jcp, num_jobs)``
return ``(list of JobCreateParameters, list of parameter combinations)``. The grid, the random draws, the
substitution and the PARAM_<NAME> environment variables are the core's (core/spec/params.py, sweep.py, substitution.py).
The old base class ``Parameter`` (with ``get_random()``) and placeholder class ``Substitution`` are here too.
"""
import random

from ..core.spec import params as _core_params
from ..core.spec.substitution import ENV_PARAM_PREFIX, is_model, render_value
from ..core.spec.substitution import Placeholder as _Placeholder
from ..core.spec.sweep import ParameterSweep as _CoreParameterSweep
from . import _endpoints

__all__ = ['ParameterSweep', 'Parameter', 'Substitution', 'NumericParameter', 'DiscreteParameter', 'DictParameter',
           'FileParameter', 'NumParamSpec', 'DiscreteParamSpec', 'DictParamSpec', 'FileParamSpec', 'combination_of']

# The old library named a dict parameter's key D/K "D__K": in its combinations, PARAM_D__K environment variables
# and ParameterSweep attributes.
DICT_KEY_SEPARATOR = '__'


class _ValueList(list):
    """A parameter's values as the old classes had them, a list attribute (``spec.values``), that the core (and a
    user of the core's classes) can still call (``spec.values()``)."""

    def __call__(self):
        return list(self)


class Parameter:
    """The old base class of the parameter classes (``isinstance(p, Parameter)``), with its ``get_random()``.

    Instantiate the concrete classes (NumericParameter, DiscreteParameter, DictParameter, FileParameter), as the
    recipes do; each is also the core's specification (core/spec/params.py) of the same kind.
    """

    @property
    def parameter_name(self):
        return self.name

    @property
    def values(self):
        return _ValueList(super().values())

    def get_random(self):
        """One value drawn with Python's global random generator (``random.seed`` repeats it), as the old method drew
        with numpy's: a random value of the list, or for a NumericParameter uniformly over [start, end] (LINEAR) or
        its logarithm (LOG); INTEGER parameters give integers here (the old method gave floats)."""
        return self.sample(random)


class Substitution(_Placeholder):
    """The old placeholder class: ``parameters['X']`` is a Substitution of X, ``parameters['D']['K']`` of key K of
    dict parameter D.

    ``str()`` of it is the core's placeholder (``{{X}}``), which generate_jobs replaces wherever it appears in the
    job; the old ``PARAM_X`` text is what ``Substitution.convert_name('X')`` gives, the environment variable's name.
    """

    ENV_VAR_PREFIX = ENV_PARAM_PREFIX

    def __init__(self, parameter_name, key=None, keys=None):
        super().__init__(parameter_name, key=key, keys=keys)

    @classmethod
    def convert_name(cls, parameter_name):
        return cls.ENV_VAR_PREFIX + parameter_name

    @property
    def parameter_name(self):
        return self.name if self.key is None else self.name + DICT_KEY_SEPARATOR + self.key

    @property
    def dictParams(self):  # pylint: disable=invalid-name
        return {key: self[key] for key in self.keys or ()}

    def __getitem__(self, key):
        placeholder = super().__getitem__(key)
        return Substitution(placeholder.name, key=placeholder.key)


class NumParamSpec(Parameter, _core_params.NumParamSpec):
    """The first README's ``NumParamSpec(parameterName=..., start=..., end=..., dataType=..., scale=...,
    numValues=None, step=None)``: the core's class, with the old classes' ``parameter_name`` and ``values``."""


class DiscreteParamSpec(Parameter, _core_params.DiscreteParamSpec):
    """The first README's ``DiscreteParamSpec(parameterName=..., values=[...])``."""


class DictParamSpec(Parameter, _core_params.DictParamSpec):
    """The first README's ``DictParamSpec(parameterName=..., values=[{...}, ...])``."""


class _OldFileFilter:  # pylint: disable=too-few-public-methods
    """filter_str as the old code matched it: ``re.match`` against the file's path without its leading '/' (the
    recipe's ``filter_str='rnn_dataset/.+'``). A filter that starts with '/' is matched against the path with it (the
    README's ``/data/.+``, which the old code matched against nothing)."""

    def _selects(self, path):
        if self._filter is None:
            return True
        return self._filter.match(path if self.filter_str.startswith('/') else path.lstrip('/')) is not None


class FileParamSpec(_OldFileFilter, Parameter, _core_params.FileParamSpec):
    """The first README's ``FileParamSpec(parameterName=..., storageAccountName=..., storageAccountKey=...,
    storageType=..., mountMethod='CLUSTER', mountPath=..., container=None, fileshare=None, directory=None,
    filterStr=None)``, plus ``accountUrl`` (default: as for FileParameter),
    ``connectionString`` and ``sasToken``."""

    def __init__(self, parameterName, storageAccountName, *args, **kwargs):  # pylint: disable=invalid-name
        if kwargs.get('accountUrl') is None and kwargs.get('connectionString') is None:
            storage_type = args[1] if len(args) > 1 else kwargs.get('storageType')
            kwargs['accountUrl'] = _endpoints.configured(storageAccountName, storage_type)
        super().__init__(parameterName, storageAccountName, *args, **kwargs)


class NumericParameter(Parameter, _core_params.NumParamSpec):
    """A numerical parameter: the old ``NumericParameter(parameter_name, data_type, start, end, scale,
    num_values=None, step=None)``. Grid values and random draws are core.spec.params.NumParamSpec's.

    :param seed: (new) seed of a RANDOM_UNIFORM scale's grid draw.
    """

    # pylint: disable=too-many-arguments
    def __init__(self, parameter_name, data_type, start, end, scale, num_values=None, step=None, seed=None):
        super().__init__(parameterName=parameter_name, start=start, end=end, dataType=data_type, scale=scale,
                         numValues=num_values, step=step, seed=seed)


class DiscreteParameter(Parameter, _core_params.DiscreteParamSpec):
    """A parameter taking each listed value: the old ``DiscreteParameter(parameter_name, values)``."""

    def __init__(self, parameter_name, values):
        super().__init__(parameterName=parameter_name, values=values)


class DictParameter(Parameter, _core_params.DictParamSpec):
    """A parameter whose values are dicts (related values vary together): the old ``DictParameter(parameter_name,
    values)``. Substitute a key with ``parameters['NAME']['KEY']``."""

    def __init__(self, parameter_name, values):
        super().__init__(parameterName=parameter_name, values=values)

    @property
    def dict_keys(self):
        return list(self.keys)


# Kept under its old name of this module; the rule is _endpoints' (registered endpoints come first).
storage_endpoint_from_environment = _endpoints.from_environment


class FileParameter(_OldFileFilter, Parameter, _core_params.FileParamSpec):
    """The files of an Azure Blob container or File share as parameter values: the old ``FileParameter(
    parameter_name, storage_account_name, storage_account_key, storage_type, mount_path, mount_method, container=None,
    fileshare=None, directory=None, filter_str=None)``.

    Values are ``$AZ_BATCHAI_MOUNT_ROOT/<mount_path>/<path>`` (mount_method CLUSTER, the default here where the old
    code required it) or ``$AZ_BATCHAI_JOB_MOUNT_ROOT/...`` (JOB). Listing is the core's (FileParamSpec);
    `filter_str` is matched as the old code did (_OldFileFilter), and `directory` limits Blob listings too.

    :param account_url: (new) the Blob/File service endpoint; default: the one configuration.json gave the account
        (utilities/_endpoints.py), else the connection string's, else Azure's public one.
    :param connection_string: (new) a storage connection string instead of the key.
    :param sas_token: (new) a SAS token instead of the key.
    """

    # pylint: disable=too-many-arguments
    def __init__(self, parameter_name, storage_account_name, storage_account_key=None, storage_type=None,
                 mount_path=None, mount_method=None, container=None, fileshare=None, directory=None,
                 filter_str=None, account_url=None, connection_string=None, sas_token=None):
        if account_url is None and connection_string is None:
            account_url = _endpoints.configured(storage_account_name, storage_type)
        super().__init__(parameterName=parameter_name, storageAccountName=storage_account_name,
                         storageAccountKey=storage_account_key, storageType=storage_type,
                         mountMethod=mount_method or 'CLUSTER', mountPath=mount_path, container=container,
                         fileshare=fileshare, directory=directory, filterStr=filter_str, accountUrl=account_url,
                         connectionString=connection_string, sasToken=sas_token)


def combination_of(specs, values):
    """A job's parameter values in the old combination form: {'PARAM_X': value, 'PARAM_D__K': value}."""
    combination = {}
    for spec in specs:
        value = values[spec.name]
        if spec.keys:
            for key in spec.keys:
                combination['{}{}{}{}'.format(ENV_PARAM_PREFIX, spec.name, DICT_KEY_SEPARATOR, key)] = value[key]
        else:
            combination[ENV_PARAM_PREFIX + spec.name] = value
    return combination


def _add_old_dict_variables(body, specs, values):
    """PARAM_D__K next to the core's PARAM_D_K, so a training script written for the old names still finds them."""
    extra = [('{}{}{}{}'.format(ENV_PARAM_PREFIX, spec.name, DICT_KEY_SEPARATOR, key),
              render_value(values[spec.name][key])) for spec in specs if spec.keys for key in spec.keys]
    if not extra:
        return
    if is_model(body):
        from azure.mgmt.batchai.models import EnvironmentVariable
        body.environment_variables = list(body.environment_variables or []) + [
            EnvironmentVariable(name=name, value=value) for name, value in extra]
        return
    target = body.get('properties') if isinstance(body.get('properties'), dict) else body
    field = 'environment_variables' if 'environment_variables' in target else 'environmentVariables'
    target.setdefault(field, []).extend({'name': name, 'value': value} for name, value in extra)


class ParameterSweep(_CoreParameterSweep):
    """The old ``ParameterSweep(param_specs)``: ``parameters['X']`` (or ``parameters.X``) is the placeholder of X,
    ``parameters['D']['K']`` (or ``parameters.D__K``) of a dict parameter's key.

    Unlike the core's ParameterSweep (lazy JobSequence of SweepJobs with deterministic names), generate_jobs and
    generate_jobs_random_search return what the old code returned: ``(jcps, combinations)``.
    """

    def __init__(self, param_specs):
        super().__init__(param_specs)
        self.param_specs = self.specs
        #: the seed of the last random search (reproduce it with generate_jobs_random_search(..., seed=...))
        self.seed = None

    def __getitem__(self, name):
        placeholder = super().__getitem__(name)
        return Substitution(placeholder.name, keys=placeholder.keys)

    def __getattr__(self, name):
        # Only reached for attributes that do not exist: parameter names, and D__K for a dict parameter's key.
        if name.startswith('_') and not name.startswith(ENV_PARAM_PREFIX):
            raise AttributeError(name)
        by_name = self.__dict__.get('_by_name') or {}
        if name in by_name:
            return self[name]
        base, separator, key = name.partition(DICT_KEY_SEPARATOR)
        if separator and base in by_name and by_name[base].keys and key in by_name[base].keys:
            return self[base][key]
        raise AttributeError(name)

    @classmethod
    def from_json(cls, param_specs_json):
        """The old JSON form {"params": [{"paramType": "NumParam"|"DiscreteParam"|"DictParam"|"FileParam", ...}]}
        (camelCase fields, as the core's classes take them)."""
        kinds = {'NumParam': NumParamSpec, 'DiscreteParam': DiscreteParamSpec, 'DictParam': DictParamSpec,
                 'FileParam': FileParamSpec}
        specs = []
        for entry in param_specs_json['params']:
            fields = dict(entry)
            kind = kinds.get(fields.pop('paramType', None))
            if kind is None:
                raise ValueError('Invalid param spec type {!r}'.format(entry.get('paramType')))
            specs.append(kind(**fields))
        return cls(specs)

    def generate_jobs(self, job_create_parameters, job_name_prefix=None, sweep_name=None):
        """Grid search: ``(list of JobCreateParameters with the values substituted, list of combinations)``."""
        return self._expand(super().generate_jobs(job_create_parameters, job_name_prefix, sweep_name))

    def generate_jobs_random_search(self, job_create_parameters, num_jobs, seed=None, job_name_prefix=None,
                                    sweep_name=None):
        """Random search of `num_jobs` jobs (no parameter set twice): ``(jcps, combinations)``; ``.seed`` replays it."""
        sequence = super().generate_jobs_random_search(job_create_parameters, num_jobs, seed=seed,
                                                       job_name_prefix=job_name_prefix, sweep_name=sweep_name)
        self.seed = sequence.seed
        return self._expand(sequence)

    def sweep_jobs(self, job_create_parameters, job_name_prefix):
        """The core's grid (a JobSequence of named SweepJobs), for ExperimentUtils.submit_jobs(jcp, parameters, ...)."""
        return super().generate_jobs(job_create_parameters, job_name_prefix)

    def _expand(self, sequence):
        jcps, combinations = [], []
        for job in sequence:
            body = job.body
            _add_old_dict_variables(body, self.specs, job.parameters)
            jcps.append(body)
            combinations.append(combination_of(self.specs, job.parameters))
        return jcps, combinations
