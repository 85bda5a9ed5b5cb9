# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Drop-in replacement of the Batch AI repository's `utilities` package (config, cluster, dataset, job_factory,
experiment, job), plus the notebook-compatibility layer (storage: the legacy BlockBlobService / FileService;
batchai: the azure-mgmt-batchai 2.0 call forms).

A notebook that did ``import utilities as utils`` / ``from utilities.job_factory import ...`` runs with
``azext_batchai_sweep.utilities`` in its import lines and nothing else changed
(docs/migrating-from-batchai-utilities.md).
The modules are thin adapters: every operation is the core's (azext_batchai_sweep.core); they only translate the
old call forms and return shapes.

This is the one place of the package that imports the Batch AI SDK's models at import time, which is why neither
the core nor the az command layer imports it (tests/core/test_core_isolation.py).
"""
from . import batchai, cluster, config, dataset, experiment, job, job_factory, storage  # noqa: F401  (``utils.job...``)

__all__ = ['batchai', 'cluster', 'config', 'dataset', 'experiment', 'job', 'job_factory', 'storage']
