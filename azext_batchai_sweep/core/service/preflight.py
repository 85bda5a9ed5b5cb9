"""Checks before the first request that changes anything: problems that would fail every job of a sweep.

A missing workspace or cluster, or a job without a cluster, would make each of a sweep's PUTs fail (or, worse,
create an experiment and then fail): they are found with one GET each and reported by name, and nothing is created.
"""
import re

from azure.core.exceptions import ResourceNotFoundError

from ..errors import NotFoundError, SweepError
from .identity import check_workspace
from .retry import NO_SDK_RETRY, RetrySettings, call_with_retries

_CLUSTER_ID = re.compile(r'^/subscriptions/[^/]+/resourceGroups/(?P<group>[^/]+)/providers/Microsoft\.BatchAI/'
                         r'workspaces/(?P<workspace>[^/]+)/clusters/(?P<cluster>[^/]+)$', re.IGNORECASE)
NO_CLUSTER_HELP = ('give the cluster with --cluster NAME when planning (create or submit --spec), or set '
                   'job.cluster.id in the sweep file')

__all__ = ['check_cluster', 'check_workspace', 'cluster_id_of', 'NO_CLUSTER_HELP']


def cluster_id_of(body):
    """The cluster.id of a job body (a dict, with or without its "properties" wrapper), or None."""
    props = body.get('properties') if isinstance(body.get('properties'), dict) else body
    cluster = props.get('cluster') or {}
    return cluster.get('id') if isinstance(cluster, dict) else None


def check_cluster(client, cluster_id, *, retry=None):
    """Raise when the jobs have no cluster, or when their cluster (or its workspace) does not exist.

    :raises SweepError: no cluster id, or one that is not a Batch AI cluster id.
    :raises NotFoundError: naming the cluster (or its workspace).
    """
    if not cluster_id:
        raise SweepError('the jobs have no cluster: ' + NO_CLUSTER_HELP)
    match = _CLUSTER_ID.match(cluster_id)
    if match is None:
        raise SweepError('the jobs\' cluster.id {} is not a Batch AI cluster resource id'.format(cluster_id))
    retry = retry or RetrySettings()
    group, workspace, cluster = match.group('group'), match.group('workspace'), match.group('cluster')

    def get():
        try:
            client.clusters.get(group, workspace, cluster, **NO_SDK_RETRY)
            return True
        except ResourceNotFoundError:
            return False
    if not call_with_retries(get, settings=retry, what='get cluster {}'.format(cluster)):
        check_workspace(client, group, workspace, retry=retry)
        raise NotFoundError('cluster {} does not exist in workspace {} (resource group {})'.format(
            cluster, workspace, group),
            recommendation='Plan the sweep with an existing cluster (--cluster NAME); "az batchai cluster list -g {} '
                           '-w {} -o table" lists them.'.format(group, workspace))
