"""The sweep library: everything a sweep is and does, below the az command layer (custom.py and the _*.py beside it).

    spec/      the sweep: parameter specifications, job templates and placeholders, lazy job expansion, job names,
               sweep files and their schemas, FILE/BLOB parameters' listings, the plan file
    service/   talking to a Batch AI service (Azure or the local one): the client, retries, paged listings, a
               sweep's identity on the service, and its job operations (preflight, submit, status, stop, resubmit,
               delete)
    tuning/    sweeps steered by their results (`sweep run`): the loop and controller, early-termination policies,
               samplers (grid, random, Hyperband, TPE, BOHB, MOTPE), objectives and constraints, the Pareto front
    outputs/   jobs' outputs and metrics: output files, log tails, downloads, metric extraction and ranking
    report/    the sweep report: one self-contained HTML file (plots, parameter importance, the Pareto front), its
               data (-o json), the live report (--watch, --serve), and `status --watch`'s terminal view
    code/      a local code folder sent with every job (--code): its snapshot, and the job's unpacking of it
    experiment.py  the operations the command layer calls, in one place; errors.py  the errors it maps to az's

Plain Python: it never imports azure.cli, and azure.mgmt.batchai only reaches it through the models passed in.
The names below are the sweep definition's, re-exported for the library's users (tests, notebooks, utilities/).
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
