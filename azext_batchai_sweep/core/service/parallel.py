"""A bounded thread pool over a (possibly lazy, possibly huge) iterable of work items.

At most `parallel * 2` items are materialised at a time, so a 100 000-job sweep is never held in memory,
and a stop request (should_stop, Ctrl-C) lets in-flight calls finish but starts no new one.
"""
import logging
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

logger = logging.getLogger(__name__)


def run_parallel(fn, items, *, parallel=8, on_result=None, should_stop=None):
    """Call fn(item) for each item on `parallel` threads; on_result(item, result, exc) runs on the caller's thread.

    Returns the list of items never started because of a stop request (should_stop() true, or KeyboardInterrupt,
    which is re-raised once the in-flight calls have finished).
    """
    parallel = max(1, int(parallel))
    iterator = iter(items)
    not_started = []
    stop = threading.Event()
    in_flight = {}
    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix='batchai-sweep') as pool:
        try:
            exhausted = False
            while in_flight or not exhausted:
                while not exhausted and len(in_flight) < parallel * 2:
                    if stop.is_set() or (should_stop is not None and should_stop()):
                        stop.set()
                        not_started.extend(iterator)
                        exhausted = True
                        break
                    try:
                        item = next(iterator)
                    except StopIteration:
                        exhausted = True
                        break
                    in_flight[pool.submit(fn, item)] = item
                if not in_flight:
                    break
                done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
                for future in done:
                    item = in_flight.pop(future)
                    exc = future.exception()
                    if on_result is not None:
                        on_result(item, None if exc else future.result(), exc)
        except KeyboardInterrupt:
            logger.warning('Interrupted: waiting for %d call(s) in flight, starting no new one', len(in_flight))
            for future in in_flight:
                future.cancel()
            raise
    return not_started


def pooled_transport(max_connections=32, **connection):
    """An azure-core transport keeping up to max_connections connections per host alive.

    requests' default pool holds 10: with more threads than that, every extra call opens and discards a connection
    (and urllib3 warns 'Connection pool is full'). Its session reads the proxy and CA-bundle environment once per
    host (core/service/sessions.py). `connection` is azure-core's connection configuration (connection_verify, ...): a
    client given its own transport no longer passes the client's keywords on to one, so they come here.
    Pass it when building the client: BatchAI(..., transport=...).
    """
    from azure.core.pipeline.transport import RequestsTransport  # pylint: disable=import-outside-toplevel
    from .sessions import pooled_session  # pylint: disable=import-outside-toplevel
    return RequestsTransport(session=pooled_session(max_connections), session_owner=True, **connection)
