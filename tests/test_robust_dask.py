"""Robustness, Dask (issue 20, group 1): every wait bounded, no worker's or stranger's answer trusted.

The crafted schedulers of :mod:`tests.robust_cases_app` (a silent port, a web server, tls:// and
ucx:// without their setup, scheduler files that are not one, a cluster without workers, a worker
running other analysis code) run through the command line; here too, on an in-process cluster
with a timeout of a few seconds, a cluster that loses its last worker mid-run.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from analysis.app.engine import Engine
from tests.robust_cases import assert_clean, params
from tests.robust_cases_app import GROUP_DASK, _cluster

distributed = pytest.importorskip("distributed", reason="distributed (the dask extra) is not installed")

TIMEOUT_S = 2.0


@pytest.mark.parametrize("case", params(GROUP_DASK))
def test_case(case, tmp_path):
    assert_clean(case, tmp_path)


def sleepy(path: Path) -> str:
    """A task that outlives its worker."""
    time.sleep(3 * TIMEOUT_S)
    return str(path)


def test_losing_the_last_worker_loses_the_tasks_left_after_the_timeout(tmp_path):
    with _cluster(1) as cluster:
        worker = next(iter(cluster.workers.values()))
        threading.Timer(1.0, lambda: cluster.sync(worker.close, executor_wait=False)).start()
        started = time.monotonic()
        (outcome,) = Engine(address=cluster.scheduler_address, timeout_s=TIMEOUT_S).map(
            sleepy, [tmp_path], lost=lambda why: f"lost: {why}")
        assert outcome[1].startswith("lost: ") and "no worker" in outcome[1]
        assert time.monotonic() - started < 3 * TIMEOUT_S + 3
