"""Where per-trace analysis runs: in this process, a local process pool, or a Dask cluster.

The local pool is the default. With ``--scheduler ADDRESS`` or ``--scheduler-file PATH`` (or the
``NSYS_DASK_SCHEDULER_FILE`` environment variable, which nsys's own recipes read) each trace is a
task on a Dask cluster: the workers import this package and read the traces at the paths given
(made absolute, so a shared file system is assumed), and send back the summaries, each with the
analyzer key of the worker's code: one made by other analysis code is not used. Every wait on the
cluster is bounded (:mod:`analysis.app.dask_client`). Only the calling process writes the results cache. Dask is the optional ``dask`` extra (``distributed``).
"""
from __future__ import annotations

import argparse
import gc
import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

SCHEDULER_FILE_ENV = "NSYS_DASK_SCHEDULER_FILE"
INSTALL_HINT = "pip install 'cs336-profile[dask]'"

Outcome = TypeVar("Outcome")


def leave_out_pyarrow() -> None:
    """Keep pandas from loading pyarrow in this process. pandas imports pyarrow at its own import
    whenever it is installed (0.14 s of a 0.46 s ``import pandas`` on a GPU host), and the
    analyzer reads no column through it: its strings are then pandas' own, as on a machine
    without pyarrow. No effect once pandas or pyarrow is loaded (the analyzer used as a library)."""
    if "pandas" not in sys.modules:
        sys.modules.setdefault("pyarrow", None)


def one_blas_thread() -> None:
    """Have numpy's OpenBLAS start one thread, not one per core: starting the others costs about
    0.1 s of CPU at ``import numpy`` (0.25 s instead of 0.14 s on a 2-core machine), and the
    analyzer's only matrix products (the report's least-squares fits) are a few rows, which
    OpenBLAS computes on one thread whatever the pool. Set in the environment, so the local
    pool's processes start so too; ``OPENBLAS_NUM_THREADS`` set by the user stays, and nothing
    changes once numpy is loaded (the analyzer used as a library)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


# glibc's malloc settings for the analysis (``mallopt``'s numbers, and the environment variables
# that set them in a process at its start): blocks of at least 4 MiB are mapped on their own and
# go back to the system when freed, and every thread allocates from one arena.
MALLOC_SETTINGS = ((-3, "MALLOC_MMAP_THRESHOLD_", 4 << 20), (-8, "MALLOC_ARENA_MAX", 1))


def returned_memory() -> None:
    """Have glibc's malloc give large freed blocks back to the system. By default it raises its
    threshold for mapping a block on its own (up to 32 MiB) each time such a block is freed, so
    that the analysis' chunk-sized temporaries (a few MiB each, made and freed by the thousand at
    millions of ops) come from the heap, whose freed pieces the process keeps: at 20M kernels the
    peak resident memory held about 100 MiB of them. A fixed threshold of 4 MiB maps them on their
    own instead, and one arena keeps the reading threads' leftovers in one place. Called by each
    process that analyzes a trace (a run served from the results cache makes no call); the
    settings go into the environment too, which says they are made and passes them to processes
    started later. A setting the user made stays, and nothing happens where the C library is not
    glibc."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (macOS, Windows)
        return
    for option, variable, value in MALLOC_SETTINGS:
        if variable not in os.environ:
            os.environ[variable] = str(value)
            mallopt(option, value)


@contextmanager
def imports_uncollected() -> Iterator[None]:
    """Import modules inside this block without the cyclic garbage collector: the objects a module
    import makes (functions, classes, pandas' and numpy's tables) live as long as the process, yet
    the collector would go over them again and again while they are made (about 50 ms of a cold
    0.8 s run on a small trace). When the block imported modules, their objects are then frozen
    (``gc.freeze``): later collections skip them, and reference counting still frees any that
    are dropped. No effect where the collector is off already."""
    if not gc.isenabled():
        yield
        return
    modules = len(sys.modules)
    gc.disable()
    try:
        yield
    finally:
        if len(sys.modules) > modules:
            gc.freeze()
        gc.enable()


class SchedulerUnavailable(RuntimeError):
    """The Dask scheduler asked for cannot be used; the message is one line for users."""


@dataclass(frozen=True)
class Engine:
    """How to run a batch: ``jobs`` local processes, or the Dask scheduler at ``address`` or
    named by ``scheduler_file`` (then ``jobs`` is the cluster's business), waiting at most
    ``timeout_s`` (default: Dask's connect timeout) for it to answer and for a worker to be there."""

    jobs: int = 1
    address: str | None = None
    scheduler_file: Path | None = None
    timeout_s: float | None = None

    @property
    def uses_dask(self) -> bool:
        return self.address is not None or self.scheduler_file is not None

    def in_process(self, tasks: int) -> bool:
        """Whether :meth:`map` runs ``tasks`` tasks in this process, one after another: one task,
        or one job, and no cluster."""
        return not self.uses_dask and (self.jobs == 1 or tasks <= 1)

    def map(self, task: Callable[..., Outcome], paths: list[Path], *args,
            lost: Callable[[str], Outcome]) -> Iterator[tuple[Path, Outcome]]:
        """Yield ``(path, task(path, *args))`` as each finishes. ``task`` is a module-level
        function that returns its failures rather than raising; a task whose worker died gives
        ``lost(why)`` instead, so that one trace cannot end the batch."""
        if self.uses_dask:
            yield from self._on_dask(task, paths, args, lost)
        elif self.in_process(len(paths)):
            for path in paths:
                yield path, task(path, *args)
        else:
            from concurrent.futures import ProcessPoolExecutor, as_completed

            with ProcessPoolExecutor(max_workers=min(self.jobs, len(paths)), initializer=leave_out_pyarrow) as pool:
                futures = {pool.submit(task, path, *args): path for path in paths}
                for future in as_completed(futures):
                    error = future.exception()
                    yield futures[future], lost(lost_why(error)) if error else future.result()

    def _on_dask(self, task, paths, args, lost):
        """The tasks on the Dask cluster (:mod:`analysis.app.dask_client`: every wait bounded); an outcome
        made by a worker running other analysis code is lost, not used."""
        if not paths:
            return
        try:
            import distributed  # noqa: F401  (the dask extra)
        except ModuleNotFoundError:
            raise SchedulerUnavailable(f"a Dask scheduler needs the dask extra: {INSTALL_HINT}") from None
        import uuid

        from analysis.app import dask_client
        from analysis.app.cache import analyzer_key  # what the workers' code must be

        address = self.address or dask_client.scheduler_address(self.scheduler_file)
        timeout_s = self.timeout_s or dask_client.configured_timeout_s()
        with dask_client.bounded_client(address, timeout_s) as client:
            # A key of its own per path: two copies of one file are two traces, each named as given;
            # the dashboard names the task, not its wrapper.
            futures = {client.submit(dask_client.stamped, task, path.resolve(), *args,
                                     key=f"{task.__name__}-{uuid.uuid4().hex}"): path for path in paths}
            for future, result, why in dask_client.finished(client, futures, timeout_s):
                why = why or _other_code(result, analyzer_key())
                yield futures[future], lost(why) if why else result[1]


def _other_code(stamped, key: str) -> str | None:
    """Why a worker's ``(analyzer key, outcome)`` is not used (made by other analysis code), or None."""
    if isinstance(stamped, tuple) and len(stamped) == 2 and stamped[0] == key:
        return None
    theirs = stamped[0] if isinstance(stamped, tuple) and stamped else "none"
    return (f"its worker runs other analysis code (analyzer key {str(theirs)[:16]}, here {key}); not used: "
            "install this version on the workers")


def lost_why(error: BaseException) -> str:
    """The line of a task whose worker failed it with ``error``."""
    return f"its worker was lost ({type(error).__name__}: {error})"


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """``--scheduler`` / ``--scheduler-file`` and ``--scheduler-timeout`` (``--jobs`` stays with the command)."""
    dask = parser.add_argument_group("Dask (optional: the dask extra)")
    group = dask.add_mutually_exclusive_group()
    group.add_argument("--scheduler", metavar="ADDRESS",
                       help="analyze each trace on the Dask cluster of this scheduler (e.g. tcp://host:8786); "
                            "the workers must see the trace paths")
    group.add_argument("--scheduler-file", type=Path, metavar="PATH",
                       default=os.environ.get(SCHEDULER_FILE_ENV) or None,
                       help=f"as --scheduler, the address read from a Dask scheduler file "
                            f"(default: ${SCHEDULER_FILE_ENV} when set)")
    dask.add_argument("--scheduler-timeout", type=float, metavar="S",
                      help="seconds to wait for the scheduler to answer and for a worker to be there, at the start "
                           "and whenever the cluster has none (default: Dask's connect timeout, "
                           "distributed.comm.timeouts.connect, 30 s unless configured)")


def engine_from(args: argparse.Namespace) -> Engine:
    """The Engine the parsed options ask for; an explicit ``--scheduler`` wins over the
    environment's scheduler file."""
    scheduler_file = None if args.scheduler else args.scheduler_file
    if args.scheduler_timeout is not None and not 0 < args.scheduler_timeout < math.inf:
        raise SchedulerUnavailable(f"--scheduler-timeout must be a positive number of seconds, "
                                   f"got {args.scheduler_timeout:g}")
    return Engine(jobs=args.jobs, address=args.scheduler, scheduler_file=scheduler_file and Path(scheduler_file),
                  timeout_s=args.scheduler_timeout)
