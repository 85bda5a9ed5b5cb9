"""Deterministic Batch ids for the service's pools, jobs and tasks.

Batch ids are at most 64 characters of letters, digits, '-' and '_', unique case-insensitively. Every id here is a
readable part (the Batch AI names, other characters replaced, cut to fit) plus a hash of the exact names, so that:
a restarted service finds the same pool, job and task again (never creating a task twice), two Batch AI names that
the readable part would merge ('a-b'/'c' and 'a'/'b-c', or names cut short) never share an id, and names that differ
only in case (one resource for ARM) share one (the hash is over lower-cased names, as Batch compares ids).
"""
import hashlib
import json
import re

MAX_ID = 64
HASH_CHARS = 10
_INVALID = re.compile(r'[^A-Za-z0-9_-]+')


def _digest(*parts):
    text = json.dumps([str(p).lower() for p in parts], separators=(',', ':'))
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:HASH_CHARS]


def _batch_id(parts, digest_parts):
    readable = '-'.join(p for p in (_INVALID.sub('_', str(part)) for part in parts) if p)
    suffix = '-' + _digest(*digest_parts)
    return readable[:MAX_ID - len(suffix)].rstrip('-_') + suffix


def pool_id(prefix, workspace, cluster, subscription, resource_group):
    """The pool of a Batch AI cluster: `<prefix>-<workspace>-<cluster>-<hash>`, the hash over the cluster's whole
    ARM path (subscription and resource group included: two clusters of one name in two resource groups are two
    pools, whatever the readable part shows)."""
    return _batch_id([prefix, workspace, cluster],
                     ['pool', prefix, subscription, resource_group, workspace, cluster])


def batch_job_id(prefix, workspace, cluster, subscription, resource_group):
    """The one Batch job of a cluster (issue 31 rule 3: accounts allow only 100-300 active jobs, so one per cluster,
    terminated and deleted with it, rather than one per experiment); its hash as the pool's."""
    return _batch_id([prefix, workspace, cluster],
                     ['job', prefix, subscription, resource_group, workspace, cluster])


def task_id(job_key, incarnation=''):
    """The task of one Batch AI job incarnation: `<job name>-<hash>`.

    `job_key`: the service's key of the job (its path of names, job name last); `incarnation`: what tells a job
    deleted and created again under the same name from the first one (its uid), so a re-created job is a new task.
    """
    name = str(job_key).rstrip('/').rsplit('/', 1)[-1]
    return _batch_id([name], ['task', job_key, incarnation])
