"""Fixtures for the Azure Batch tests (TEST CODE): the Batch data-plane double, alone or behind Prism.

- `batch_double` (per test): a running `tests.azurebatch.double.BatchDouble` on loopback, with its own throw-away
  directory and test CA. Use:
    `.endpoint` (https://127.0.0.1:PORT, the Batch account URL), `.ca_file` (the CA bundle to trust: pass it as
    `connection_verify=` or REQUESTS_CA_BUNDLE; `.cert_file` is the same file), `.credential(lifetime=3600)` (an
    azure-core TokenCredential the double accepts), `.token` (a currently valid bearer token, renewed after
    `expire_tokens()`), `.client()` (the real `azure.batch.BatchClient` for it),
    `.faults` (Faults: `throttle(count, retry_after, status=429|503, method, path)`, `time_out_after_apply(count,
    method, path, seconds, drop)`, `resize_error(code, message, pool_id, nodes_allowed, dedicated)`,
    `clear_resize_errors()`, `active_job_quota(n)`, `pool_quota(n)`, `answer(status, body, ...)`),
    `.expire_tokens()` (every token issued so far answers 401 from now on),
    `.account` (account.BatchAccount: `pools`, `jobs` (each with `tasks`), `preempt(task_id=|node_id=,
    recover=True)`, `recover(node_id)` (back now, after `preempt(..., recover=False)`), `remove_node(node, option)`,
    `node_of(job_id, task_id)`, `mount_source(mount)` (the local directory standing for a mounted share), `uploads`
    (outputFiles uploaded), `events`, `supported_images` (what /supportedimages lists; settable), `quirks` (True, the
    default: answer in the real service's recorded spellings, e.g. 'Success', which Prism's derived spec accepts;
    False: the spec's spellings),
    `wait(predicate, timeout)`, `tick()`; hold `account.lock` to read state), `.requests` (every request: method,
    path, query, body, status) and `.count(method, path_regex)`.
  The Batch clock runs fast (DEFAULT_BATCH_SPEED 600: a 5-minute autoscale interval lasts 0.5 s, a 30 s metric
  sample 0.05 s); BatchDouble(directory, speed=..., node_start_seconds=..., preemption_recovery_seconds=...)
  changes it.
  At teardown it fails the test if the double itself raised (a bug in the double, recorded as 'double-error').
- `batch_prism` (per test; Prism itself runs once per session): the same double behind Prism
  (`prism proxy <spec> ... --errors`), validating every request and answer against
  tests/specs/batch-2024-02-01.19.0. It has the attributes above (delegated to the double) except that
  `.endpoint` is the HTTPS relay in front of Prism and `.ca_file`/`.cert_file` the session CA that relay serves
  with; `.double` is the BatchDouble, `.proxy` the PrismProxy; `.take_violations()` returns (and clears) what
  Prism reported. At teardown it fails the test if Prism reported any violation that was not taken.
"""
import contextlib
import os
import shutil
import tempfile
import time

import pytest

from tests.azurebatch.double import BatchDouble
from tests.azurebatch.double.server import SwitchedUpstream
from tests.azurebatch.prism import PrismProxy, Relay, derived_spec
from tests.azurebatch.tls_ca import TestCA


LOG_SETTLE_SECONDS = 0.3


@contextlib.contextmanager
def _in_scratch(prefix, make):
    """Yield make(directory) for a new scratch directory; close it and remove the directory afterwards."""
    directory = tempfile.mkdtemp(prefix=prefix)
    thing = make(directory)
    try:
        yield thing
    finally:
        thing.close()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def double(tmp_path):
    """A Batch double of the test's own, in its tmp_path (no Prism in front: what the client sends is its test's)."""
    made = BatchDouble(str(tmp_path / 'batch'))
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def batch_double():
    with _in_scratch('batch-double-', BatchDouble) as double:
        yield double
        errors = [e for e in double.account.events if e[0] == 'double-error']
        assert not errors, 'the Batch double failed: {}'.format(errors)


class _PrismChain:
    """Session-wide: the upstream Prism forwards to (answering as each test's double in turn), Prism, the TLS
    relay in front of Prism."""

    def __init__(self, directory):
        self.upstream = SwitchedUpstream()
        self.proxy = PrismProxy(self.upstream.url, os.path.join(directory, 'prism.log'),
                                derived_spec(os.path.join(directory, 'spec')))
        self.ca = TestCA(os.path.join(directory, 'tls'))
        self.front = Relay(self.proxy.port, self.ca.server_context())

    def close(self):
        self.front.close()
        self.proxy.stop()
        self.upstream.close()


class BatchPrism:
    """The test's double as a client sees it through Prism (see the module's docstring)."""

    def __init__(self, double, chain):
        self.double = double
        self.proxy = chain.proxy
        self.endpoint = chain.front.endpoint
        self.ca_file = self.cert_file = chain.ca.ca_file

    def __getattr__(self, name):
        return getattr(self.double, name)

    def client(self, **kwargs):
        kwargs.setdefault('endpoint', self.endpoint)
        kwargs.setdefault('connection_verify', self.ca_file)
        return self.double.client(**kwargs)

    def take_violations(self):
        time.sleep(LOG_SETTLE_SECONDS)  # Prism writes its log asynchronously, after it answered
        found = self.proxy.violations()
        self.proxy.mark()
        return found


@pytest.fixture(scope='session')
def _batch_prism_chain():
    with _in_scratch('batch-prism-', _PrismChain) as chain:
        yield chain


@pytest.fixture
def batch_prism(batch_double, _batch_prism_chain):  # pylint: disable=redefined-outer-name
    chain = _batch_prism_chain
    chain.upstream.current = batch_double
    batch_double.public_endpoint = chain.front.endpoint
    chain.proxy.mark()
    handle = BatchPrism(batch_double, chain)
    yield handle
    left = handle.take_violations()
    assert not left, 'Prism found requests or answers that break the Batch spec:\n' + '\n'.join(left)
