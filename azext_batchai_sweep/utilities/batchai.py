# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""Notebook-compatibility layer: a Batch AI client that also takes azure-mgmt-batchai 2.0's call forms.

The recipes were written for azure-mgmt-batchai 2.0 (``client.workspaces.create(rg, name, location).result()``,
``client.clusters.create(rg, ws, name, parameters).result()``, ``client.jobs.create(...)``, ``...delete(...)``);
the SDK az ships (7.0) names long-running operations ``begin_*`` and takes a workspace's parameters as an object.
NotebookBatchAI wraps a 7.0 client: ``create``, ``delete`` and ``terminate`` take the old arguments and return the
7.0 poller (``.result()`` as before); everything else is the wrapped client's, unchanged, so the core and
ExperimentUtils use it like any client. `config.create_batchai_client` returns one.
"""
__all__ = ['NotebookBatchAI']

# 2.0 keyword arguments of the operations that 7.0 does not take: msrest's raw responses and its polling objects.
_DROPPED = ('raw', 'operation_config')


def _new_kwargs(kwargs):
    kwargs = {key: value for key, value in kwargs.items() if key not in _DROPPED}
    if 'custom_headers' in kwargs:
        kwargs['headers'] = kwargs.pop('custom_headers') or {}
    if 'polling' in kwargs and not isinstance(kwargs['polling'], bool):
        del kwargs['polling']  # a msrestazure polling object (the old utilities' CustomPolling)
    return kwargs


class _Operations:
    """One operation group with the 2.0 names of its long-running operations."""

    def __init__(self, operations):
        self._operations = operations

    def __getattr__(self, name):
        return getattr(self._operations, name)

    def create(self, *args, **kwargs):
        return self._operations.begin_create(*args, **_new_kwargs(kwargs))

    def delete(self, *args, **kwargs):
        return self._operations.begin_delete(*args, **_new_kwargs(kwargs))

    def terminate(self, *args, **kwargs):
        return self._operations.begin_terminate(*args, **_new_kwargs(kwargs))


class _WorkspaceOperations(_Operations):
    """2.0: ``workspaces.create(resource_group_name, workspace_name, location, tags=None)``."""

    def create(self, resource_group_name, workspace_name, location=None, tags=None, **kwargs):
        from azure.mgmt.batchai.models import WorkspaceCreateParameters
        parameters = location if not isinstance(location, str) else \
            WorkspaceCreateParameters(location=location, tags=tags)
        return self._operations.begin_create(resource_group_name, workspace_name, parameters, **_new_kwargs(kwargs))


class NotebookBatchAI:
    """A BatchAI client (azure.mgmt.batchai 7.0) that also accepts the 2.0 call forms the recipes use."""

    _GROUPS = {'workspaces': _WorkspaceOperations, 'clusters': _Operations, 'experiments': _Operations,
               'jobs': _Operations, 'file_servers': _Operations}

    def __init__(self, client):
        self._wrapped = client
        for name, kind in self._GROUPS.items():
            if hasattr(client, name):
                setattr(self, name, kind(getattr(client, name)))

    @property
    def wrapped(self):
        """The 7.0 client itself."""
        return self._wrapped

    def __getattr__(self, name):
        if name == '_wrapped':
            raise AttributeError(name)
        return getattr(self._wrapped, name)
