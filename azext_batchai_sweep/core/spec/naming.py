"""Deterministic job names: ``<prefix>-<hash>``, the hash over the sweep's name and the parameter values.

The same sweep and parameter values always give the same name, in any process and on any machine, which is what
lets status/resubmit find a sweep's jobs from the service alone. The sweep name is part of the hash (since 0.2.0) so
that two sweeps of one sweep file in one experiment (`-n a`, `-n b`) never share a job; version 0.1 hashed the
values only. The old library hashed the whole JobCreateParameters object, so an unrelated change to the template
renamed every job.
"""
import hashlib
import json
import re

from ..errors import SpecError

MAX_NAME_LENGTH = 64  # Batch AI's limit for a job name
NAME_PATTERN = re.compile(r'^[-\w_]+$', re.ASCII)
# 16 hex characters (64 bits): the chance that two of 10^6 jobs share a name is about 3e-8, where 10 hex characters
# (40 bits) would give about 0.4.
HASH_LENGTH = 16
MAX_PREFIX_LENGTH = MAX_NAME_LENGTH - 1 - HASH_LENGTH

# Separators people naturally put in a name; they become '-' instead of being refused.
_FIXABLE = re.compile(r'[\s./:]+')
_INVALID = re.compile(r'[^-\w]', re.ASCII)


def canonical_json(values):
    """Compact JSON of the parameter values with sorted keys; floats are written by repr() (shortest round trip).

    NaN and infinities are refused: they have no JSON form and would make the hash meaningless.
    """
    return json.dumps(values, sort_keys=True, separators=(',', ':'), allow_nan=False)


def values_digest(canonical, salt=''):
    """SHA-256 digest (bytes) of a canonical JSON string, as produced by :func:`canonical_json`.

    :param salt: from :func:`sweep_salt`: the sweep's identity, so that two sweeps get different names.
    """
    return hashlib.sha256((salt + canonical).encode('utf-8')).digest()


def sweep_salt(sweep_name):
    """What goes before the values' JSON in the hash of a job of sweep `sweep_name` ('' without a sweep name).

    JSON-quoted and followed by a newline, which canonical JSON never holds, so no (sweep, values) pair can be
    read as another.
    """
    return '' if sweep_name is None else json.dumps(str(sweep_name)) + '\n'


def sanitize_prefix(prefix):
    """The prefix made valid for a Batch AI job name, truncated so that a hash still fits.

    Whitespace, '.', '/' and ':' become '-'; any other character outside ``[-A-Za-z0-9_]`` is an error that names it.
    """
    if not isinstance(prefix, str) or not prefix.strip():
        raise SpecError('a job name prefix must be a non-empty string, not {!r}'.format(prefix))
    fixed = _FIXABLE.sub('-', prefix.strip()).strip('-')
    bad = sorted(set(_INVALID.findall(fixed)))
    if bad or not fixed:
        raise SpecError('job name prefix {!r} has characters a Batch AI job name cannot hold: {} '
                        '(use letters, digits, "-" and "_")'.format(prefix, ' '.join(repr(c) for c in bad)))
    return fixed[:MAX_PREFIX_LENGTH].rstrip('-')


def name_from_digest(prefix, digest):
    """Job name from an already sanitized prefix and a digest from :func:`values_digest`."""
    return '{}-{}'.format(prefix, digest.hex()[:HASH_LENGTH])


def job_name(prefix, parameter_values, sweep_name=None):
    """The job name for a set of parameter values: ``<prefix>-<16 hex characters of sha256>``.

    :param prefix: the sweep's job name prefix; sanitized and truncated (see :func:`sanitize_prefix`).
    :param parameter_values: mapping of parameter name to value (str, int, float or a dict of those).
    :param sweep_name: the sweep (`-n`) the job belongs to, hashed with the values; None hashes the values only
        (the names of version 0.1).
    """
    return name_from_digest(sanitize_prefix(prefix),
                            values_digest(canonical_json(dict(parameter_values)), sweep_salt(sweep_name)))
