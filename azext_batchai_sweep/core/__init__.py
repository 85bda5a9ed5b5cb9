"""The sweep library: parameter specifications, job templates, lazy job expansion and naming.

Plain Python: it never imports azure.cli, and azure.mgmt.batchai only reaches it through the models passed in.
"""
from .errors import ServiceError, SpecError, StorageError, SweepError
from .spec.naming import job_name
from .spec.params import DictParamSpec, DiscreteParamSpec, FileParamSpec, NumParamSpec
from .spec.substitution import (CompiledTemplate, ExternalValue, Placeholder, placeholder_names, render_value,
                                shell_quote)
from .spec.sweep import JobSequence, ParameterSweep, SweepJob

__all__ = [
    'SweepError', 'SpecError', 'StorageError', 'ServiceError',
    'NumParamSpec', 'DiscreteParamSpec', 'DictParamSpec', 'FileParamSpec',
    'ParameterSweep', 'JobSequence', 'SweepJob',
    'Placeholder', 'CompiledTemplate', 'ExternalValue', 'placeholder_names', 'render_value', 'shell_quote',
    'job_name',
]
