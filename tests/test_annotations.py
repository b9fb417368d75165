"""What the runner tells NVTX: range names and nesting, and the marks' JSON (recorded, no profiler)."""
from __future__ import annotations

import json

import pytest
import torch

from cs336_profile import annotate
from cs336_profile.bench import run_config
from tests.cpu_torch import tiny

CONFIG_MARK_KEYS = {"event", "size", "context_length", "batch_size", "mode", "dtype", "compile", "attention",
                    "device", "gpu_name", "warmup_steps", "measured_steps", "vocab_size", "d_model", "d_ff",
                    "num_layers", "num_heads", "rope_theta", "nvtx_annotations", "handout", "checkpoint_every"}
ATTENTION = ("attention", ["computing attention scores", "computing softmax", "final matmul"])


class RecordingNvtx:
    """Stands in for the nvtx module: builds the tree of ranges and keeps the marks in order."""

    def __init__(self):
        self.root: list = []
        self.stack = [self.root]
        self.events: list[tuple[str, object]] = []  # ("push", name) and ("mark", (domain, message))

    def push_range(self, message=None, **_):
        node = (message, [])
        self.stack[-1].append(node)
        self.stack.append(node[1])
        self.events.append(("push", message))

    def pop_range(self, **_):
        self.stack.pop()

    def mark(self, message=None, domain=None, **_):
        self.events.append(("mark", (domain, message)))


@pytest.fixture
def recorder(monkeypatch):
    recording = RecordingNvtx()
    monkeypatch.setattr(annotate, "nvtx", recording)
    return recording


def names(nodes) -> list[str]:
    return [name for name, _ in nodes]


def steps(root) -> list:
    """Warm-up step nodes, then the measured ones from inside `measured_steps`."""
    measured = [children for name, children in root if name == "measured_steps"]
    return [node for node in root if node[0] != "measured_steps"] + [node for nodes in measured for node in nodes]


def test_steps_phases_and_attention_ranges_nest_as_documented(recorder):
    run_config(tiny(mode="train"))
    assert len(recorder.stack) == 1  # every range was popped
    assert names(recorder.root) == ["warmup_0", "measured_steps"]  # a capture range can start at the second
    assert names(steps(recorder.root)) == ["warmup_0", "step_0", "step_1"]
    for _, phases in steps(recorder.root):
        assert names(phases) == ["forward", "loss", "backward", "optimizer_step"]
        forward = phases[0][1]
        assert names(forward) == ["attention"] * 2  # one per layer of the tiny model
        for name, parts in forward:
            assert (name, names(parts)) == ATTENTION
            assert all(children == [] for _, children in parts)


def test_forward_mode_has_only_forward_ranges(recorder):
    run_config(tiny(mode="forward", warmup_steps=0, measured_steps=1))
    assert [(step, names(phases)) for step, phases in steps(recorder.root)] == [("step_0", ["forward"])]


def test_config_mark_opens_the_measured_steps_and_describes_the_run(recorder):
    run_config(tiny(mode="forward-backward", handout="2026"))
    first_measured = recorder.events.index(("push", "measured_steps")) + 1
    kind, (domain, message) = recorder.events[first_measured]
    assert kind == "mark" and domain == "cs336_profile"
    config = json.loads(message)
    assert CONFIG_MARK_KEYS <= set(config)
    assert config["event"] == "config" and config["mode"] == "forward-backward"
    assert (config["size"], config["d_model"], config["num_layers"], config["vocab_size"]) == ("tiny", 64, 2, 10_000)
    assert config["gpu_name"] is None and config["nvtx_annotations"] is True
    assert (config["handout"], config["checkpoint_every"]) == ("2026", 0)


def test_a_step_timing_mark_follows_each_measured_step(recorder):
    result = run_config(tiny(mode="train"))
    marks = [json.loads(message) for kind, (domain, message) in
             (event for event in recorder.events if event[0] == "mark") if domain == "cs336_profile"]
    timings = [mark for mark in marks if mark["event"] == "step_timing"]
    assert [mark["step"] for mark in timings] == [0, 1]
    assert all(set(mark["phases_ms"]) == {"forward", "loss", "backward", "optimizer_step", "step"} for mark in timings)
    measured = [row for row in result.steps if row["step_kind"] == "measured"]
    assert [mark["phases_ms"]["forward"] for mark in timings] == [row["forward_ms"] for row in measured]
    # In order: range pushes by name, marks by event.
    sequence = [value if kind == "push" else json.loads(value[1])["event"] for kind, value in recorder.events]
    top_level = [name for name in sequence if name in ("config", "warmup_0", "step_0", "step_1", "step_timing")]
    assert top_level == ["warmup_0", "config", "step_0", "step_timing", "step_1", "step_timing"]


def test_switching_annotations_off_emits_nothing(recorder):
    run_config(tiny(nvtx_annotations=False))
    assert recorder.events == [] and recorder.root == []
    assert annotate.is_enabled()  # the switch is restored afterwards


def test_layer_ranges_wrap_each_block(recorder):
    run_config(tiny(mode="forward", warmup_steps=0, measured_steps=1, layer_ranges=True))
    forward = steps(recorder.root)[0][1][0][1]
    assert names(forward) == ["layer_0", "layer_1"]
    assert names(forward[0][1]) == ["attention"]


def test_no_ranges_inside_code_being_compiled(recorder, monkeypatch):
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    with annotate.nvtx_range("attention"):
        pass
    assert recorder.events == []
