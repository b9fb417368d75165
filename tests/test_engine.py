"""Per-trace analysis on a Dask cluster gives the summaries of the local run; the client alone
writes the results cache; an unusable scheduler costs one line."""
from __future__ import annotations

import json

import pytest

from analysis.app import cli
from analysis.app.engine import SCHEDULER_FILE_ENV

distributed = pytest.importorskip("distributed", reason="distributed (the dask extra) is not installed")
dask = pytest.importorskip("dask", reason="dask (the dask extra) is not installed")

TRAIN = "small_ctx128_train_fp32.sqlite"
FORWARD = "small_ctx256_forward_fp32.sqlite"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two in-process workers (threads): tasks really go through the scheduler and back."""
    scheduler_file = tmp_path_factory.mktemp("dask") / "scheduler.json"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  scheduler_kwargs={"scheduler_file": str(scheduler_file)}) as local:
        yield local, scheduler_file


def _summaries(out):
    return {path.name: json.loads(path.read_text()) for path in sorted(out.glob("*.json"))}


def test_dask_gives_the_local_summaries_and_the_client_writes_the_cache(cluster, fixture_trace, tmp_path):
    local, _ = cluster
    traces = [str(fixture_trace(TRAIN)), str(fixture_trace(FORWARD))]
    assert cli.main([*traces, "--out", str(tmp_path / "local"), "--jobs", "1", "--no-cache"]) == 0
    with local.get_client() as client, distributed.get_task_stream(client=client) as tasks:
        assert cli.main([*traces, "--out", str(tmp_path / "dask"), "--scheduler", local.scheduler_address]) == 0
    assert sorted(str(task["key"]).split("-")[0] for task in tasks.data) == ["analyze_one", "analyze_one"]
    assert _summaries(tmp_path / "dask") == _summaries(tmp_path / "local")
    with cli.ResultsCache(tmp_path / "dask" / cli.RESULTS_DB) as cache:
        assert {trace for (trace,) in cache.db.execute("SELECT trace FROM traces")} == {TRAIN, FORWARD}


def test_scheduler_file_from_the_environment(cluster, fixture_trace, tmp_path, monkeypatch):
    _, scheduler_file = cluster
    monkeypatch.setenv(SCHEDULER_FILE_ENV, str(scheduler_file))
    assert cli.main([str(fixture_trace(FORWARD)), "--out", str(tmp_path), "--no-cache"]) == 0
    assert (tmp_path / "small_ctx256_forward_fp32.json").is_file()


def test_a_missing_scheduler_file_is_one_line(tmp_path, capsys):
    missing = tmp_path / "scheduler.json"
    assert cli.main(["any.sqlite", "--out", str(tmp_path), "--scheduler-file", str(missing)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"analyze-nsys: no Dask scheduler file at {missing}"]


def test_an_unreachable_scheduler_is_one_line(tmp_path, capsys):
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        assert cli.main(["any.sqlite", "--out", str(tmp_path), "--scheduler", "tcp://127.0.0.1:9"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("analyze-nsys: cannot reach the Dask scheduler at tcp://127.0.0.1:9: ")
