"""The Dask client of ``--scheduler`` / ``--scheduler-file``, every wait bounded by one timeout.

distributed leaves several waits open and lets several errors through: a port that accepts and
never answers holds the handshake forever, a reply that is not Dask's is read as a frame of
exabytes (MemoryError), ``tls://`` without certificates raises TypeError, a scheduler file that
is not one raises whatever its reader meets, a client that failed to start lingers and stalls
the exit, and a cluster without workers (or one that loses its last) holds its tasks forever.
Here the scheduler is first asked who it is, on a connection of our own under ``timeout_s``;
the client is made only when a Dask scheduler answered, and is always closed; the run waits
``timeout_s`` for a first worker, and gives the remaining tasks up when no worker has been there
for ``timeout_s``. Every failure is one :class:`~analysis.app.engine.SchedulerUnavailable` line (or a
lost task) that says what was waited for.
"""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from analysis.app.engine import SchedulerUnavailable, lost_why

GRACE_S = 1.0  # past distributed's own connect timeout, before ours
POLL_S = 0.25  # how often a run without finished tasks looks again (and for workers)
WORKER_HINT = "start workers with `dask worker ADDRESS` or raise --scheduler-timeout"


def configured_timeout_s() -> float:
    """Dask's connect timeout (``distributed.comm.timeouts.connect``, e.g. from
    ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT``), in seconds."""
    import dask.config
    from dask.utils import parse_timedelta

    return parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="s")


def scheduler_address(scheduler_file: Path) -> str:
    """The address a Dask scheduler file names (a JSON object with an ``address`` string)."""
    if not scheduler_file.is_file():
        raise SchedulerUnavailable(f"no Dask scheduler file at {scheduler_file}")
    try:
        content = json.loads(scheduler_file.read_text())
    except (OSError, ValueError, RecursionError) as err:
        raise SchedulerUnavailable(f"the Dask scheduler file {scheduler_file} cannot be read "
                                   f"({type(err).__name__}); give the file the scheduler wrote") from None
    address = content.get("address") if isinstance(content, dict) else None
    if not isinstance(address, str) or "://" not in address:
        raise SchedulerUnavailable(f"the Dask scheduler file {scheduler_file} names no scheduler address "
                                   "(no \"address\": \"tcp://host:port\"); give the file the scheduler wrote")
    return address


async def _identity(address: str, timeout_s: float) -> dict:
    """The scheduler's answer to ``identity`` on a connection of our own, each step within ``timeout_s``."""
    from distributed.comm import connect

    # distributed's own bound first: a refused connection then says so instead of "did not answer".
    comm = await asyncio.wait_for(connect(address, timeout=timeout_s), timeout_s + GRACE_S)
    try:
        await asyncio.wait_for(comm.write({"op": "identity", "reply": True}), timeout_s)
        return await asyncio.wait_for(comm.read(), timeout_s)
    finally:
        comm.abort()


def check_scheduler(address: str, timeout_s: float) -> None:
    """Raise :class:`SchedulerUnavailable` unless a Dask scheduler answers at ``address`` within
    ``timeout_s`` (whatever else answers, or fails, or stays silent)."""
    try:
        reply = asyncio.run(_identity(address, timeout_s))
    except (asyncio.TimeoutError, TimeoutError):
        raise SchedulerUnavailable(f"the Dask scheduler at {address} did not answer within {timeout_s:g} s "
                                   "(raise --scheduler-timeout if it is only slow)") from None
    except Exception as err:  # distributed's comm raises what it meets: OSError, TypeError, MemoryError, ...
        raise SchedulerUnavailable(f"cannot reach the Dask scheduler at {address}: "
                                   f"{type(err).__name__}: {str(err)[:200]}") from None
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        raise SchedulerUnavailable(f"what answers at {address} is not a Dask scheduler")


@contextmanager
def bounded_client(address: str, timeout_s: float) -> Iterator:
    """A client of the scheduler at ``address`` with a worker to run on; closed on the way out."""
    check_scheduler(address, timeout_s)
    from distributed import Client

    try:
        client = Client(address, set_as_default=False, timeout=timeout_s)
    except Exception as err:
        raise SchedulerUnavailable(f"cannot start a Dask client of {address}: {type(err).__name__}: "
                                   f"{str(err)[:200]}") from None
    try:
        try:
            client.wait_for_workers(1, timeout=timeout_s)
        except Exception:
            raise SchedulerUnavailable(f"no Dask worker joined the scheduler at {address} within {timeout_s:g} s; "
                                       f"{WORKER_HINT}") from None
        yield client
    finally:
        _close(client, timeout_s)


def _close(client, timeout_s: float) -> None:
    """Close ``client`` within ``timeout_s``; a scheduler gone meanwhile changes nothing here."""
    try:
        client.close(timeout=timeout_s)
    except Exception:
        pass


def _has_workers(client, timeout_s: float) -> bool:
    """Whether the scheduler has a worker now (False when it does not answer within ``timeout_s``)."""
    try:
        return bool(client.nthreads(callback_timeout=timeout_s))
    except Exception:
        return False


def finished(client, futures: Iterable, timeout_s: float) -> Iterator[tuple[object, object | None, str | None]]:
    """``(future, result, None)`` or ``(future, None, why it was lost)`` for each future as it ends;
    when the cluster has had no worker for ``timeout_s`` the futures left are lost, each saying so."""
    pending, idle_since = list(futures), None
    while pending:
        done, waiting = [], []
        for future in pending:
            (done if future.done() else waiting).append(future)
        pending = waiting
        for future in done:
            yield (future, *_result(future, timeout_s))
        if done or not pending:
            idle_since = None
            continue
        time.sleep(POLL_S)
        if _has_workers(client, timeout_s):
            idle_since = None
            continue
        idle_since = idle_since or time.monotonic()
        if time.monotonic() - idle_since > timeout_s:
            why = f"the Dask cluster had no worker for {timeout_s:g} s ({WORKER_HINT})"
            for future in pending:
                yield future, None, why
            return


def _result(future, timeout_s: float) -> tuple[object | None, str | None]:
    """(result, None) of a future that ended, or (None, why it has none)."""
    try:
        if future.status == "finished":
            return future.result(timeout=timeout_s), None
        error = future.exception(timeout=timeout_s)
    except (Exception, asyncio.CancelledError) as err:
        error = err
    return None, lost_why(error)


def stamped(task: Callable, *args):
    """``(the analyzer key of the code running here, task(*args))``: run on a worker, so the client
    can refuse what workers running other analysis code made."""
    from analysis.app.cache import analyzer_key

    return analyzer_key(), task(*args)
