"""The stages an analysis announces (analysis.load.progress), in the order it runs them, read from
the export, with its tables kept and served, and from a compressed input; and the command line's
progress bar, which names them while it analyzes in its own process and keeps its clock moving."""
from __future__ import annotations

import io
import lzma
import shutil
import threading

import pytest

from analysis.app import cli
from analysis.app.analyze import stored_summary
from analysis.app.engine import Engine
from analysis.load import progress as progress_module
from analysis.load.input_cache import InputCache
from analysis.load.progress import listening, stage
from analysis.load.table_cache import TableCache

TRAIN = "small_ctx128_train_fp32.sqlite"
READ = ("reading kernels", "reading launch calls", "reading NVTX ranges", "reading the other tables")


@pytest.fixture(autouse=True)
def own_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("CS336_PROFILE_CACHE", str(tmp_path / "cache-home"))


def heard_while(run) -> list[str]:
    heard: list[str] = []
    with listening(heard.append):
        run()
    return heard


def test_a_trace_read_from_its_export_announces_its_stages_in_order(fixture_trace):
    heard = heard_while(lambda: stored_summary(fixture_trace(TRAIN)))
    assert heard == [f"{TRAIN}: {what}" for what in (*READ, "finding its structure", "summarizing")]


def test_kept_tables_are_announced_as_kept_then_as_read(fixture_trace, tmp_path):
    tables = TableCache(tmp_path / "tables", min_rows=0)
    first = heard_while(lambda: stored_summary(fixture_trace(TRAIN), tables=tables))
    assert first == [f"{TRAIN}: {what}" for what in (*READ, "keeping its loaded tables", "ordering its operations",
                                                     "keeping its loaded tables", "finding its structure", "summarizing")]
    again = heard_while(lambda: stored_summary(fixture_trace(TRAIN), tables=tables))
    assert again == [f"{TRAIN}: {what}" for what in ("reading its kept tables", "finding its structure", "summarizing")]


def test_a_compressed_input_is_announced_while_it_is_decompressed(fixture_trace, tmp_path):
    packed = tmp_path / f"{TRAIN}.xz"
    with open(fixture_trace(TRAIN), "rb") as source, lzma.open(packed, "wb") as out:
        shutil.copyfileobj(source, out)
    inputs = InputCache(folder=tmp_path / "inputs")
    heard = heard_while(lambda: stored_summary(packed, inputs=inputs))
    assert heard[:2] == [f"{packed.name}: decompressing", f"{packed.name}: reading kernels"]
    assert heard_while(lambda: stored_summary(packed, inputs=inputs))[0] == f"{packed.name}: reading kernels"  # kept


class FakeBar:
    """What the command line's progress bar is asked to do, with the thread that asked."""

    ncols = None  # a terminal of unknown width: no text is cut

    def __init__(self):
        self.postfixes: list[str] = []
        self.refreshed = threading.Event()

    def set_postfix_str(self, text: str) -> None:
        self.postfixes.append(text)

    def refresh(self) -> None:
        self.refreshed.set()


def test_the_bar_names_each_stage_and_its_clock_moves_while_traces_run_here(monkeypatch):
    monkeypatch.setattr(cli, "TICK_S", 0.01)
    bar = FakeBar()
    with cli._stages_shown(bar):
        stage("run.sqlite: reading kernels")
        stage("bad\nname.sqlite: summarizing")
        assert bar.refreshed.wait(5)
    # each stage as one printable line; the bar's text cleared once the traces are done
    assert bar.postfixes == ["run.sqlite: reading kernels", "bad\\nname.sqlite: summarizing", ""]
    assert bar.bar_format == cli.STAGE_BAR_FORMAT  # no rate of traces beside a stage
    assert "progress clock" not in {thread.name for thread in threading.enumerate()}
    stage("after.sqlite: summarizing")  # no one listens any more
    assert bar.postfixes[-1] == ""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal, stages", [(False, True), (True, False), (True, True)])
def test_stages_are_shown_only_on_a_terminal_for_traces_run_in_this_process(monkeypatch, terminal, stages):
    monkeypatch.setattr(cli.sys, "stderr", Terminal() if terminal else io.StringIO())
    with cli._progress_bar(2, stages=stages) as bar:
        assert bool(progress_module._listeners) == (terminal and stages)
        assert isinstance(bar, cli._Lines) != terminal
        assert (getattr(bar, "bar_format", None) == cli.STAGE_BAR_FORMAT) == (terminal and stages)
    assert not progress_module._listeners


@pytest.mark.parametrize("what, columns, shown", [
    ("reading kernels", None, "gpt2_ddp2_flags2026.sqlite.xz: reading kernels"),
    ("reading kernels", 120, "gpt2_ddp2_flags2026.sqlite.xz: reading kernels"),
    ("reading kernels", 80, "…gs2026.sqlite.xz: reading kernels"),  # the name loses its start first
    ("reading kernels", 30, "…xz: reading kernels"),  # never fewer than 20 characters
    ("keeping its loaded tables", 30, "keeping its loaded t"),  # no room for the name: the stage alone
])
def test_a_stage_is_cut_to_the_terminals_width_trace_name_first(what, columns, shown):
    text = cli.fitted(f"gpt2_ddp2_flags2026.sqlite.xz: {what}", columns)
    assert text == shown
    assert columns is None or len(text) <= max(cli.MIN_STAGE_CHARS, columns - cli.BAR_CHARS)


def test_traces_run_in_this_process_one_at_a_time_with_one_trace_or_one_job_and_no_cluster():
    assert Engine(jobs=4).in_process(1) and Engine(jobs=1).in_process(5)
    assert not Engine(jobs=4).in_process(2)
    assert not Engine(jobs=1, address="tcp://127.0.0.1:8786").in_process(1)
