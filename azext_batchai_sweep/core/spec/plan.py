"""The plan file: what `az batchai sweep create` decided, and all that submit/resubmit need, never a secret.

JSON Lines, written and read one line at a time so that a sweep of a million jobs needs no more memory than one:

    {"kind": "batchai-sweep-plan", "version": 2, "sweep": ..., "resourceGroup": ..., "workspace": ...,
     "experiment": ..., "jobNamePrefix": ..., "sampling": {"type": ..., "count": ..., "seed": ...},
     "parameters": [...], "templateDigest": ..., "jobCount": N, "createdAt": ...}
    {"name": "<job name>", "parameters": {...}, "job": {<full JobCreateParameters body>}}
    ...

Secrets: the plan has to be enough to resubmit a job with its full definition, secrets included, yet it is a file
people keep, share and attach to bug reports. So a job template never holds a secret value, only a reference:

- a secret field (a `secrets[].value`, a storage `credentials.accountKey`, a registry `credentials.password`) is
  written `$env:NAME`, and the submitter replaces it with the value of the environment variable NAME at submit
  time (`resolve_secret_references`); a storage key may also be az batchai's own `<AZURE_BATCHAI_STORAGE_KEY>`;
- a storage mount without `credentials` gets them at submit time from the environment too (core/spec/storage.py).

The plan keeps the references as they are; `write_plan` refuses a job with a literal secret value.
"""
import datetime
import json
import os
import re
import tempfile

from ..errors import SpecError, SweepError
from .schema_validation import format_path

PLAN_KIND = 'batchai-sweep-plan'
PLAN_VERSION = 2
# Version 1 (extension 0.1): job names hash the parameter values only, and jobs carry no BATCHAI_SWEEP_JOB_DIGEST.
# Still read, so that a 0.1 sweep can be submitted and resubmitted with its own plan.
READABLE_VERSIONS = (1, 2)

SECRET_REFERENCE = re.compile(r'^\$env:([A-Za-z_][A-Za-z0-9_]*)$')
STORAGE_KEY_PLACEHOLDER = '<AZURE_BATCHAI_STORAGE_KEY>'
_SECRET_KEYS = ('accountKey', 'password', 'adminUserPassword', 'instrumentationKey')


def secret_fields(job, path=()):
    """Yield `(path, value)` for every field of a job body that holds a secret value."""
    if isinstance(job, dict):
        for key, value in job.items():
            if key in _SECRET_KEYS and value is not None:
                yield path + (key,), value
            elif key == 'secrets' and isinstance(value, list):
                for index, secret in enumerate(value):
                    if isinstance(secret, dict) and secret.get('value') is not None:
                        yield path + (key, index, 'value'), secret['value']
            else:
                yield from secret_fields(value, path + (key,))
    elif isinstance(job, list):
        for index, item in enumerate(job):
            yield from secret_fields(item, path + (index,))


def is_secret_reference(value):
    return isinstance(value, str) and (SECRET_REFERENCE.match(value) is not None or value == STORAGE_KEY_PLACEHOLDER)


def literal_secrets(job):
    """The paths of the secret fields of a job body that hold a value rather than a reference."""
    return [path for path, value in secret_fields(job) if not is_secret_reference(value)]


def resolve_secret_references(job, environ=None):
    """A copy of a job body with every `$env:NAME` secret reference replaced by the value of NAME.

    :raises SweepError: when a referenced environment variable is not set.
    """
    environ = os.environ if environ is None else environ
    resolved = json.loads(json.dumps(job))
    for path, value in secret_fields(resolved):
        match = SECRET_REFERENCE.match(value) if isinstance(value, str) else None
        if not match:
            continue
        if match.group(1) not in environ:
            raise SweepError('The job refers to the secret ${} (at {}), but the environment variable {} is not set'
                             .format(match.group(1), format_path(path), match.group(1)))
        parent = resolved
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = environ[match.group(1)]
    return resolved


def plan_header(*, sweep, resource_group, workspace, experiment, job_name_prefix, sampling, parameters, job_count,
                template_digest=None, created_at=None):
    """The first line of a plan file.

    :param sampling: `{"type": "grid"|"random", "count": ..., "seed": ...}`.
    :param parameters: the parameter specifications as the sweep file wrote them (summaries, no secrets).
    :param template_digest: a digest of the resolved job template (a re-plan compares it to name a changed template).
    """
    created_at = created_at or datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')
    return {
        'kind': PLAN_KIND, 'version': PLAN_VERSION, 'sweep': sweep, 'resourceGroup': resource_group,
        'workspace': workspace, 'experiment': experiment, 'jobNamePrefix': job_name_prefix, 'sampling': sampling,
        'parameters': parameters, 'templateDigest': template_digest, 'jobCount': job_count, 'createdAt': created_at,
    }


def write_plan(path, header, jobs):
    """Write a plan atomically: to a temporary file next to `path`, then renamed over it.

    :param header: from `plan_header`; its jobCount must equal the number of jobs.
    :param jobs: an iterable (consumed once) of `{"name": ..., "parameters": {...}, "job": {...}}`.
    :return: the number of jobs written.
    :raises SpecError: when a job holds a literal secret (the plan is left untouched).
    """
    temp_path = write_plan_draft(path, header, jobs)
    commit_plan(temp_path, path)
    return header['jobCount']


def commit_plan(temp_path, path):
    """Put a draft from `write_plan_draft` in place (one atomic rename)."""
    os.replace(temp_path, path)


def discard_plan(temp_path):
    """Remove a draft that will not be committed (a check after writing it failed)."""
    try:
        os.unlink(temp_path)
    except FileNotFoundError:
        pass


def write_plan_draft(path, header, jobs):
    """Write a plan to a temporary file next to `path` and return its path; `path` itself is not touched.

    `create` writes the draft, runs its checks against the service, and only then commits it (`commit_plan`) or
    discards it (`discard_plan`): a failed create never destroys the plan that was there.
    """
    directory = os.path.dirname(os.path.abspath(path))
    handle, temp_path = tempfile.mkstemp(prefix='.{}.'.format(os.path.basename(path)), suffix='.tmp', dir=directory)
    try:
        with os.fdopen(handle, 'w', encoding='utf-8', newline='\n') as out:
            out.write(_line(header))
            count = 0
            for job in jobs:
                leaked = literal_secrets(job['job'])
                if leaked:
                    raise SpecError('expected a reference like "$env:NAME", not a secret value (the submitter reads '
                                    'it from the environment)', source=job['name'], path=format_path(leaked[0]))
                out.write(_line({'name': job['name'], 'parameters': job['parameters'], 'job': job['job']}))
                count += 1
        if count != header['jobCount']:
            raise ValueError('The plan header announces {} jobs but {} were written'.format(header['jobCount'], count))
        # mkstemp makes the file private (0600); the plan holds no secret, so it gets a new file's usual mode.
        os.chmod(temp_path, 0o666 & ~_umask())
    except BaseException:
        os.unlink(temp_path)
        raise
    return temp_path


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _line(record):
    # allow_nan=False: NaN and Infinity are not JSON, and a reader in another language would choke on them.
    return json.dumps(record, separators=(',', ':'), allow_nan=False) + '\n'


def read_plan(path):
    """Read a plan: `(header, jobs)` where `jobs` lazily yields one job record at a time.

    :raises SweepError: when the file is not a plan (or a plan of a newer version).
    """
    with open(path, encoding='utf-8') as plan:
        header = _parse_header(path, plan.readline())
    return header, _iter_jobs(path)


def _parse_header(path, line):
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get('kind') != PLAN_KIND:
        raise SweepError('{} is not a sweep plan file (its first line must be a "{}" header); create one with '
                         '"az batchai sweep create"'.format(path, PLAN_KIND))
    if header.get('version') not in READABLE_VERSIONS:
        raise SweepError('{} is a version {} plan; this extension reads version {}'.format(
            path, header.get('version'), PLAN_VERSION))
    return header


def _iter_jobs(path):
    with open(path, encoding='utf-8') as plan:
        plan.readline()
        for number, line in enumerate(plan, start=2):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except ValueError as ex:
                raise SweepError('{}, line {}: not a JSON job record ({})'.format(path, number, ex)) from ex
