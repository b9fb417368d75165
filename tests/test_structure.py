"""The run's structure found in the trace: steps, warm-up, phases and attention parts by role, on
small exports written the way users' own scripts name their ranges (or leave them out)."""
from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from analysis.app.analyze import analyze_trace
from analysis.core import attribution
from analysis.core.attribution import ops_in_windows
from analysis.core.phases import label_ops
from analysis.core.range_names import RangeNames
from analysis.core.structure_text import family_label, name_families
from analysis.load import RangeFilter, load_trace
from analysis.load.export_map import RUNTIME, STRINGS
from analysis.report.structure_lines import describe
from tests.synthetic import PUSH_POP, build_export, global_tid

PID, MAIN, AUTOGRAD = 100, 100, 101
OPTIMIZER_KERNEL = "multi_tensor_apply_kernel<AdamW>"
KERNELS = ("gemm_kernel", "softmax_warp_forward", OPTIMIZER_KERNEL)


class Script:
    """Writes a trace as a training script would: ranges on the main thread, kernels launched
    inside them (the backward's from the autograd thread), 10 µs per kernel."""

    def __init__(self, pid=PID):
        self.now, self.ranges, self.kernels, self.pid = 1_000, [], [], pid

    def kernel(self, tid=MAIN, name=KERNELS[0], count=1, duration=10):
        tid += self.pid - PID  # the main and autograd threads of this script's process
        for _ in range(count):
            corr = len(self.kernels) + 1
            self.kernels.append((self.now + 500, self.now + 500 + duration, self.now, self.pid, tid, corr, name))
            self.now += 20

    def range(self, name, body=None, tid=MAIN):
        tid += self.pid - PID
        start = self.now
        self.now += 5
        if body is not None:
            body()
        self.now += 5
        if name is not None:
            self.ranges.append((name, start, self.now, self.pid, tid, tid, PUSH_POP))
        self.now += 5

    def iteration(self, forward="forward", backward="backward", optimizer="optimizer_step", loss=None,
                  extra_kernels=0):
        self.range(forward, lambda: self.kernel(count=3 + extra_kernels))
        if loss:
            self.range(loss, lambda: self.kernel())
        self.range(backward, lambda: self.kernel(tid=AUTOGRAD, count=4))
        self.range(optimizer, lambda: self.kernel(name=OPTIMIZER_KERNEL, count=2))

    def labelled(self, tmp_path, names=RangeNames()):
        """The labelled ops of the trace written so far; kernel names beyond :data:`KERNELS` get
        string ids after theirs."""
        strings = tuple(dict.fromkeys(KERNELS + tuple(kernel[-1] for kernel in self.kernels)))
        path = build_export(tmp_path / "trace.sqlite", kernels=self.kernels, ranges=self.ranges, strings=strings)
        return label_ops(load_trace(path, RangeFilter()), names)


def measured_steps(labelled) -> list[str]:
    steps = labelled.structure.steps
    return list(steps.loc[steps["measured"], "name"])


def test_a_phase_only_the_warmup_runs_is_said_to_be_in_no_measured_step(tmp_path):
    """A forward-only benchmark whose warm-up iterations train (``Warm-up Step <i>`` around
    ``Forward`` and ``Backward``), the 5 measured ones ``Forward`` alone: the structure line lists
    the backward it found, and says that no measured step holds one."""
    script = Script()
    for i in range(3):
        script.range(f"Warm-up Step {i}", lambda: [script.range("Forward", lambda: script.kernel(count=3)),
                                                   script.range("Backward", lambda: script.kernel(tid=AUTOGRAD, count=4))])
    for i in range(5):
        script.range(f"step_{i}", lambda: script.range("Forward", lambda: script.kernel(count=3)))
    labelled = script.labelled(tmp_path)
    line = describe(labelled.structure.record(), labelled.measured_passes)
    assert labelled.measured_passes == {"forward": 5}
    assert "forward `Forward`, backward `Backward` (none in the measured steps)" in line
    assert "(none in the measured steps)" not in describe(labelled.structure.record())


def test_a_range_only_inside_the_warmup_is_the_warmups_not_unused(tmp_path):
    """``warmup`` around 3 ``full_steps`` (warm-up iterations named after the mode, no phase
    range inside), then 5 ``step_<i>``: ``full_steps`` lies only in the warm-up, so it is the
    warm-up's, not a name left unused; a range also in the measured steps still is."""
    script = Script()
    script.range("warmup", lambda: [script.range("full_steps", lambda: script.kernel(count=9)) for _ in range(3)])
    for i in range(5):
        script.range(f"step_{i}", lambda: (script.iteration(), script.range("log_metrics", lambda: None)))
    structure = script.labelled(tmp_path).structure
    assert "full_steps" not in structure.unused and "log_metrics" in structure.unused


def test_the_warmup_iterations_in_one_range_each_keep_their_own_hand_written_update(tmp_path):
    """``warmup`` around 3 iterations with no range: the forward and the loss (4 kernels), the
    backward from the autograd thread (4), a hand-written update from the main thread (5 kernels,
    none fused); then 4 ``step_<i>`` alike, ranged. Each warm-up iteration starts where its forward
    does, as many launches before its backward as a measured one's: 13 kernels each. Before, each
    ended with its backward, so the first lacked its update and the last held two (7, 13, 19)."""
    script = Script()

    def iteration():
        script.kernel(count=4)
        script.kernel(tid=AUTOGRAD, count=4)
        script.kernel(name="update_elementwise", count=5)

    script.range("warmup", lambda: [iteration() for _ in range(3)])
    for i in range(4):
        script.range(f"step_{i}", lambda: [script.range("forward", lambda: script.kernel(count=3)),
                                          script.range("loss", lambda: script.kernel()),
                                          script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4)),
                                          script.range("optimizer", lambda: script.kernel(name="update_elementwise",
                                                                                          count=5))])
    labelled = script.labelled(tmp_path)
    table = labelled.structure.step_table
    assert [row["kernels"] for row in table if not row["measured"]] == [13, 13, 13]
    assert [row["kernels"] for row in table if row["measured"]] == [13] * 4


def test_a_warmup_range_around_steps_named_with_a_space(tmp_path):
    script = Script()
    script.range("warmup", lambda: [script.range(f"step {i}", script.iteration) for i in range(3)])
    for i in range(3, 8):
        script.range(f"step {i}", script.iteration)
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [f"step {i}" for i in range(3, 8)]
    assert labelled.measured_passes == {"forward": 5, "backward": 5, "optimizer_step": 5}
    assert "inside `warmup`" in labelled.structure.warmup_rule


@pytest.mark.parametrize("warmup_name", ["{phase} warmup", "warmup_{phase}", "Warm-up {phase}"])
def test_phases_named_apart_in_the_warmup_iterations(tmp_path, warmup_name):
    """The warm-up iterations' phases carry a warm-up word beside the phase's name
    (`forward pass warmup` and `forward pass`): they are the same phases, and the iterations before
    the plain names first appear are warm-up, not the first measured one."""
    script = Script()
    for _ in range(3):
        script.iteration(*(warmup_name.format(phase=p) for p in ("forward pass", "backward pass", "optimizer step")))
    for _ in range(4):
        script.iteration("forward pass", "backward pass", "optimizer step")
    labelled = script.labelled(tmp_path)
    assert list(labelled.structure.steps["measured"]) == [False] * 3 + [True] * 4
    assert labelled.measured_passes == {"forward": 4, "backward": 4, "optimizer_step": 4}
    assert labelled.structure.phase_names["forward"] == sorted(["forward pass", warmup_name.format(phase="forward pass")])


def test_a_warmup_step_range_is_no_optimizer_step(tmp_path):
    script = Script()
    for _ in range(2):
        script.range("warmup_step", script.iteration)
    for i in range(4):
        script.range(f"step_{i}", script.iteration)
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [f"step_{i}" for i in range(4)]
    assert labelled.structure.phase_names["optimizer_step"] == ["optimizer_step"]


def test_forwards_ahead_of_their_backwards_are_training_ones(tmp_path):
    """A pipeline schedule runs two micro-batches' forwards before the first backward (1F1B):
    each backward takes the latest forward not yet taken, so every forward is a training pass;
    an evaluation forward after the optimizer step, which no backward takes, is an inference one."""
    script = Script()

    def forward():
        script.range("forward", lambda: script.kernel(count=3))

    def backward():
        script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4))

    for i in range(4):
        script.range(f"step_{i}", lambda: (forward(), forward(), backward(), forward(), backward(), backward(),
                                           script.range("optimizer_step", lambda: script.kernel(name=OPTIMIZER_KERNEL))))
        forward()  # an evaluation pass between the steps
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert labelled.measured_passes == {"forward": 9, "backward": 9, "optimizer_step": 3}
    assert labelled.structure.inference_passes == 4


def test_measure_ranges_with_the_warmup_outside_them(tmp_path):
    script = Script()
    for _ in range(2):
        script.iteration(forward="fwd", backward="bwd", optimizer="opt")
    for i in range(4):
        script.range(f"measure_{i}", lambda: script.iteration(forward="fwd", backward="bwd", optimizer="opt"))
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [f"measure_{i}" for i in range(4)]
    assert labelled.measured_passes == {"forward": 4, "backward": 4, "optimizer_step": 4}
    assert labelled.structure.phase_names == {"forward": ["fwd"], "backward": ["bwd"], "optimizer_step": ["opt"]}


def test_unindexed_train_step_with_step_as_the_optimizer_and_a_departing_first_step(tmp_path):
    script = Script()
    script.range("train_step", lambda: script.iteration(forward="model_eval", optimizer="step", extra_kernels=2))
    for _ in range(4):
        script.range("train_step", lambda: script.iteration(forward="model_eval", optimizer="step"))
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [f"train_step #{i}" for i in range(1, 5)]
    assert labelled.measured_passes == {"forward": 4, "backward": 4, "optimizer_step": 4}
    assert labelled.structure.phase_names["optimizer_step"] == ["step"]
    assert labelled.structure.phase_names["forward"] == ["model_eval"]


def unranged_iteration(script: Script) -> None:
    """A warm-up iteration with no range at all: forward, backward (the autograd thread), optimizer."""
    script.kernel(count=3)
    script.kernel(tid=AUTOGRAD, count=4)
    script.kernel(name=OPTIMIZER_KERNEL, count=2)


@pytest.mark.parametrize("departing", [False, True])
def test_iterations_with_no_range_before_the_step_ranges_are_warmup(tmp_path, departing):
    """A script whose warm-up iterations have no range and whose measured steps have theirs: the
    iterations before the first step range are found by their backward passes and are warm-up;
    the rule that reads the step ranges still applies to them (a first step that departs from the
    steady state is warm-up too)."""
    script = Script()
    script.kernel(count=5)  # the model's set-up
    for _ in range(3):
        unranged_iteration(script)
    for i in range(6):
        script.range(f"step_{i}", lambda: script.iteration(extra_kernels=8 if departing and i == 0 else 0))
    labelled = script.labelled(tmp_path)
    first = 1 if departing else 0
    assert measured_steps(labelled) == [f"step_{i}" for i in range(first, 6)]
    assert labelled.measured_passes == {"forward": 6 - first, "backward": 6 - first, "optimizer_step": 6 - first}
    rule = labelled.structure.warmup_rule
    assert rule.startswith("the 3 iterations before the first step, with no step or phase range, found from the kernels; ")
    assert rule.endswith("departs from the later steps' (a count outside theirs, a time over 1.5× their median and 3 "
                         "median absolute deviations above it)" if departing else
                         "no leading step departs from the later steps' kernel count, kernel time or CPU span")
    steps = labelled.structure.steps
    assert (~steps["measured"]).sum() == 3 + first
    assert list(steps["name"])[:3] == [f"(iteration with no step range) #{k}" for k in range(3)]


def test_set_up_kernels_before_the_step_ranges_are_no_iteration(tmp_path):
    """Kernels before the first step range with no backward among them (the model's set-up, a
    forward with no gradient) make no warm-up iteration."""
    script = Script()
    script.kernel(count=40)
    for i in range(4):
        script.range(f"step_{i}", script.iteration)
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [f"step_{i}" for i in range(4)]
    assert len(labelled.structure.steps) == 4
    assert labelled.structure.warmup_rule == "no leading step departs from the later steps' kernel count, kernel time or CPU span"


def test_phase_ranges_inside_another_phase_are_named_as_held_not_unused(tmp_path):
    """A loss range and a model-call range inside each forward range: the forward counts their
    kernels, and the structure says so instead of listing them unused; a range of no phase stays
    unused."""
    script = Script()

    def forward():
        script.range("model_forward", lambda: script.kernel(count=3))
        script.range("loss_computation", lambda: script.kernel())

    for i in range(4):
        script.range(f"step_{i}", lambda: [script.range("zero_grad"), script.range("forward", forward),
                                           script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4))])
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    record = labelled.structure.record()
    assert labelled.measured_passes == {"forward": 3, "backward": 3}
    assert record["held_names"] == [{"phase": "forward", "inside": "forward", "names": ["model_forward"]},
                                    {"phase": "loss", "inside": "forward", "names": ["loss_computation"]}]
    assert record["unused_names"] == ["zero_grad"]
    assert "; inside the forward's ranges, counted there: forward `model_forward`, loss `loss_computation`; " \
           "unused: `zero_grad`" in describe(record)


def test_an_empty_warmup_range_runs_no_warmup(tmp_path):
    """A benchmark run with no warm-up iteration still opens its warm-up range, around nothing:
    that range is no warm-up step, and the steps after it are the measured ones, the first (cold,
    with more kernels) among them."""
    script = Script()
    script.range("warmup")
    for i in range(3):
        script.range(f"step_{i}", lambda: script.iteration(extra_kernels=8 if i == 0 else 0))
    labelled = script.labelled(tmp_path)
    assert list(labelled.structure.steps["name"]) == [f"step_{i}" for i in range(3)]
    assert measured_steps(labelled) == [f"step_{i}" for i in range(3)]
    assert labelled.structure.warmup_rule == "the steps after `warmup`, which holds none of them: every step is measured"


@pytest.mark.parametrize("warmup", [0, 1])
def test_a_step_from_the_kernels_is_in_the_measure_range_that_holds_most_of_it(tmp_path, warmup):
    """Iterations with no range of their own, each making its inputs first, the measured ones
    inside a ``measurement`` range whose first inputs were made before it: the first measured
    iteration found from the kernels begins with those launches, before the range, and is still
    one of the measured (with a warm-up iteration before them, that one alone is warm-up)."""
    script = Script()

    def iteration(inputs=True):
        if inputs:
            script.kernel(name="distribution_elementwise_grid_stride_kernel", count=2)
        unranged_iteration(script)

    for _ in range(warmup):
        iteration()
    script.kernel(name="distribution_elementwise_grid_stride_kernel", count=2)
    script.range("measurement", lambda: [iteration(inputs=i > 0) for i in range(3)])
    labelled = script.labelled(tmp_path)
    assert list(labelled.structure.steps["measured"]) == [False] * warmup + [True] * 3
    assert labelled.measured_passes == {"forward": 3, "backward": 3, "optimizer_step": 3}
    rule = labelled.structure.warmup_rule
    assert rule.startswith("outside `measurement`") if warmup else rule.startswith("no leading step departs")


@pytest.mark.parametrize("count", [2, 3])
def test_a_leading_step_departs_only_from_two_later_steps_or_the_last_of_two(tmp_path, count):
    """Steps whose kernel counts fall, the first the most: of three, the first departs from the
    two after it, and the second is measured, though its count differs from the last's (one step
    is no steady state to depart from); of two, the first departs from the last."""
    script = Script()
    for i, extra in enumerate([12, 2, 0][-count:]):
        script.range(f"step_{i}", lambda: script.iteration(extra_kernels=extra))
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [f"step_{i}" for i in range(1, count)]
    assert labelled.structure.warmup_rule.startswith("1 leading step whose kernel count")


def test_steps_that_differ_among_themselves_leave_out_only_the_step_that_stands_out(tmp_path):
    """Batches of varying length: the later steps' kernel counts and times differ several-fold
    among themselves, so a step like one of them is measured; only the first, with more kernels
    than any later step, is warm-up (the most common count or the median alone would take all but
    the last few for warm-up)."""
    script = Script()
    extras = [40, 12, 0, 6, 2, 10, 0, 12, 4]
    for i, extra in enumerate(extras):
        script.range(f"step_{i}", lambda: script.iteration(extra_kernels=extra))
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [f"step_{i}" for i in range(1, len(extras))]
    assert labelled.structure.warmup_rule.startswith("1 leading step whose kernel count")


def timed_step(script: Script, name: str, extra: int = 0, duration: int = 10) -> None:
    """One step range holding a forward of 3 + ``extra`` kernels, a backward and an optimizer
    step, every kernel ``duration`` ns long."""
    script.range(name, lambda: (
        script.range("forward", lambda: script.kernel(count=3 + extra, duration=duration)),
        script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4, duration=duration)),
        script.range("optimizer_step", lambda: script.kernel(name=OPTIMIZER_KERNEL, count=2, duration=duration))))


@pytest.mark.parametrize("both", [True, False])
def test_ranks_of_one_job_take_runs_only_where_every_rank_finds_them(tmp_path, both):
    """Two ranks of 14 steps each; the first rank's kernels take twice as long from step 7 on (as
    a wait for the other rank can make them), the second's too or not: runs are taken only where
    both ranks find them, so every rank's figures cover the same steps."""
    ranks = [Script(PID), Script(PID + 1000)]
    for rank, script in enumerate(ranks):
        for i in range(14):
            timed_step(script, "train_step", duration=20 if i >= 7 and (rank == 0 or both) else 10)
    path = build_export(tmp_path / "trace.sqlite", kernels=[k for r in ranks for k in r.kernels],
                        ranges=[g for r in ranks for g in r.ranges], strings=KERNELS)
    labelled = label_ops(load_trace(path, RangeFilter()))
    steps = labelled.structure.steps
    assert int(steps["measured"].sum()) == (14 if both else 28)
    assert ("runs one after another" in labelled.structure.warmup_rule) == both


@pytest.mark.parametrize("warmup", ["unmarked", "named"])
@pytest.mark.parametrize("second", ["more kernels", "longer kernels"])
def test_runs_one_after_another_under_one_name_measure_the_last(tmp_path, second, warmup):
    """A sweep in one process (a model of each size, or each batch length, trained in turn under
    the same step range): its steps fall into two runs, apart in every kernel count or every kernel
    time; averaging them would mix different work, so only the last run is measured, whether or not
    a name marks each run's warm-up step."""
    script = Script()
    for run in range(2):
        for i in range(7):
            extra, duration = (6, 10) if run and second == "more kernels" else (0, 20 if run else 10)
            timed_step(script, "warmup_step" if warmup == "named" and i == 0 else "train_step", extra, duration)
    labelled = script.labelled(tmp_path)
    steps = labelled.structure.steps.sort_values("start_ns")
    left_out = 7 + (warmup == "named")  # the first run, and the last run's own warm-up step where named
    assert list(steps["measured"]) == [False] * left_out + [True] * (14 - left_out)
    assert labelled.structure.warmup_rule.startswith("the steps form 2 runs one after another")


def test_a_new_runs_first_step_nearer_its_run_starts_it(tmp_path):
    """Three steps of 10 kernels, then seven of 6, the first of which launches 7 (a first step that
    departs a little from its run, as a loop's first timed step that still adds into the warm-up's
    gradients does): the second run starts at that step, so it is the second run's departing
    warm-up step, not a step of the first run."""
    script = Script()
    for i in range(10):
        timed_step(script, "train_step", extra=7 if i < 3 else (1 if i == 3 else 0))
    labelled = script.labelled(tmp_path)
    assert list(labelled.structure.steps.sort_values("start_ns")["measured"]) == [False] * 4 + [True] * 6
    assert labelled.structure.warmup_rule.startswith("the steps form 2 runs one after another (16, then 9 kernels")
    assert "its warm-up: 1 leading step whose kernel count" in labelled.structure.warmup_rule


def test_an_inference_forward_is_never_averaged_with_training_forwards(tmp_path):
    script = Script()
    for i in range(4):
        script.range("forward", lambda: script.kernel(count=7))  # an inference pass
        script.range(f"iter{i}", lambda: script.iteration(loss="loss"))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert labelled.structure.inference_passes == 4
    assert labelled.measured_passes == {"forward": 3, "loss": 3, "backward": 3, "optimizer_step": 3}
    forward = labelled.ops[(labelled.ops["phase"] == "forward") & labelled.ops["measured"]]
    assert len(forward) == 3 * 3  # the training forwards' 3 kernels each, none of the inference passes' 7


def test_namespaced_names_say_their_role_by_their_last_part(tmp_path):
    """``train/forward`` is a forward; ``train/step_<i>`` and ``eval/step_<i>`` are two families,
    so the evaluation steps (an inference forward each) do not hide the training steps."""
    script = Script()
    for i in range(4):
        script.range(f"train/step_{i}", lambda: script.iteration(
            forward="train/forward", backward="train/backward", optimizer="train/optimizer_step"))
        script.range(f"eval/step_{i}", lambda: script.range("eval/forward", lambda: script.kernel(count=7)))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert measured_steps(labelled) == [f"train/step_{i}" for i in range(1, 4)]
    assert labelled.measured_passes == {"forward": 3, "backward": 3, "optimizer_step": 3}
    assert labelled.structure.inference_passes == 4


@pytest.mark.parametrize("step, forward, backward, optimizer", [
    ("TrainStep{i}", "Forward", "Backward", "OptimizerStep"),  # camel case
    ("Step{i}", "ForwardPass", "BackwardPass", "OptimizerStep"),
    ("train_iter_{i}", "train_forward", "train_backward", "train_optimizer_step"),  # the phase of training named
    ("it{i}", "fw", "bw", "update"),
    ("STEP_{i}", "FORWARD", "BACKWARD", "OPTIMIZER_STEP"),
    ("step-{i}", "forward-pass", "backward-pass", "optimizer-step"),
    ("iter {i}", "model forward pass", "model backward pass", "model optimizer"),  # each phase the model's
    ("step {i}", "run_forward", "run_backward", "run_optimizer"),  # a function's name, as @nvtx.annotate gives it
    ("step {i}", "Forward Propagation", "Back Propagation", "Adam Update"),
    ("step {i}", "Forward Pass with autocast", "back", "opt_step"),  # a clause after the phase's name; `back`
    ("step {i}", "forward_for_backward", "backward_with_scaler", "optimizer_step"),  # clauses joined by `_`
    ("step {i}", "forwad pass", "backwrad pass", "optimize step"),  # a letter's slips; the verb of the optimizer
    ("step {i}", "Foward", "Bakward", "optimzer"),
    ("step {i}", "Forward-Pass", "Backward-Pass", "Optimizer-Pass"),
    ("step {i}", "benchmark_forward", "backward", "optimizer_step"),  # a timing word before one phase's name
    ("step {i}", "timed_fwd", "profile_bwd", "measure_opt"),
])
def test_common_naming_conventions_name_every_phase(tmp_path, step, forward, backward, optimizer):
    script = Script()
    for i in range(4):
        script.range(step.format(i=i), lambda: script.iteration(forward=forward, backward=backward, optimizer=optimizer))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert measured_steps(labelled) == [step.format(i=i) for i in range(1, 4)]
    assert labelled.structure.phase_names == {"forward": [forward], "backward": [backward], "optimizer_step": [optimizer]}


def test_a_step_named_train_step_is_never_the_optimizer(tmp_path):
    script = Script()
    for _ in range(4):
        script.range("train_step", lambda: script.iteration(forward="forward", optimizer="optimizer"))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert len(measured_steps(labelled)) == 3
    assert labelled.structure.phase_names["optimizer_step"] == ["optimizer"]


def test_step_ranges_holding_ranges_of_unknown_names_stay_the_steps(tmp_path):
    """Phase ranges named in no known way (each step holds one of each) are parts of the steps,
    not steps of three runs: the phases come from the kernels, the warm-up is still left out."""
    script = Script()
    for i in range(4):
        script.range(f"step_{i}", lambda: script.iteration(forward="alpha", backward="beta", optimizer="gamma"))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert measured_steps(labelled) == ["step_1", "step_2", "step_3"]
    assert labelled.measured_passes == {"forward": 3, "backward": 3, "optimizer_step": 3}
    assert labelled.structure.source == "kernels"


def test_step_families_one_after_the_other_are_several_runs(tmp_path):
    script = Script()
    for run in ("small", "medium"):
        for i in range(3):
            script.range(f"{run}_iter_{i}", script.iteration)
    structure = script.labelled(tmp_path).structure
    assert not structure.has_steps
    assert structure.step_rule.startswith("ranges of 2 different runs")


@pytest.mark.parametrize("warmup, step", [("burn_in_{i}", "step_{i}"), ("warmup/step_{i}", "train/step_{i}"),
                                           ("train/warmup_{i}", "train/step_{i}"), ("WarmUpStep{i}", "TrainStep{i}"),
                                           ("dry_run_{i}", "step_{i}"), ("untimed_{i}", "timed_{i}"),
                                           ("benchmark.warmup.step", "benchmark.measure.step")])  # dotted parts
def test_warmup_steps_named_in_other_ways(tmp_path, warmup, step):
    script = Script()
    for i in range(2):
        script.range(warmup.format(i=i), script.iteration)
    for i in range(2, 6):
        script.range(step.format(i=i), script.iteration)
    labelled = script.labelled(tmp_path)
    measured = [step.format(i=i) for i in range(2, 6)]
    assert [name.split(" #")[0] for name in measured_steps(labelled)] == measured
    assert labelled.structure.warmup_rule.startswith("named")


def test_a_warmup_range_around_iterations_beside_step_ranges_holds_them(tmp_path):
    """``warmup`` around 3 iterations whose phases (``warmup_step_<i>/forward`` …) have no step
    range, then ``step_<i>`` ranges: the warm-up range holds 3 warm-up iterations, not one step of
    three models."""
    script = Script()
    script.range("warmup", lambda: [script.iteration(f"warmup_step_{i}/forward", f"warmup_step_{i}/backward",
                                                     f"warmup_step_{i}/optimizer_step") for i in range(3)])
    for i in range(5):
        script.range(f"step_{i}", lambda: script.iteration(f"step_{i}/forward", f"step_{i}/backward", f"step_{i}/optimizer_step"))
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [f"step_{i}" for i in range(5)]
    assert labelled.structure.warmup_rule == "inside `warmup`"
    assert int((~labelled.structure.steps["measured"]).sum()) == 3
    assert labelled.structure.phase_names["forward"] == ["step_<i>/forward"]


def test_a_backward_with_no_range_comes_from_the_kernels(tmp_path):
    """Only the forward has a range: the backward (launches from the autograd thread) and the
    fused optimizer after it come from the kernels."""
    script = Script()
    for i in range(4):
        script.range(f"step_{i}", lambda: (script.range("forward", lambda: script.kernel(count=3)),
                                           script.kernel(tid=AUTOGRAD, count=4),
                                           script.kernel(name=OPTIMIZER_KERNEL, count=2)))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert measured_steps(labelled) == ["step_1", "step_2", "step_3"]
    assert labelled.measured_passes == {"forward": 3, "backward": 3, "optimizer_step": 3}
    assert labelled.structure.source == "ranges+kernels"
    backward = labelled.ops[(labelled.ops["phase"] == "backward") & labelled.ops["measured"]]
    assert len(backward) == 3 * 4 and set(backward["launch_tid"]) == {AUTOGRAD}


def accumulating_step(script, micro_batches, micro_batch_name=None):
    """One optimizer step after ``micro_batches`` forward and backward passes, each pass in a
    range ``micro_batch_name`` when given."""
    for _ in range(micro_batches):
        script.range(micro_batch_name, lambda: (script.range("forward", lambda: script.kernel(count=3)),
                                                script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4))))
    script.range("optimizer", lambda: script.kernel(name=OPTIMIZER_KERNEL, count=2))


@pytest.mark.parametrize("micro_batch_name", ["microbatch", None])
def test_gradient_accumulation_step_ranges_hold_their_micro_batches(tmp_path, micro_batch_name):
    script = Script()
    for i in range(4):
        script.range(f"step {i}", lambda: accumulating_step(script, 3, micro_batch_name))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert measured_steps(labelled) == ["step 1", "step 2", "step 3"]
    assert labelled.measured_passes == {"forward": 9, "backward": 9, "optimizer_step": 3}
    measured = labelled.ops[labelled.ops["measured"]]
    assert len(measured) == 3 * (3 * (3 + 4) + 2)  # every kernel of the measured steps, the optimizer's included
    assert "one optimizer step after several forward and backward passes" in labelled.structure.step_rule


@pytest.mark.parametrize("ranges", [True, False])
def test_gradient_accumulation_steps_made_from_the_phases_end_at_each_optimizer_step(tmp_path, ranges):
    """No step ranges: the phases' own ranges, or the kernels alone (no NVTX at all)."""
    script = Script()
    for _ in range(4):
        accumulating_step(script, 2)
    if not ranges:
        script.ranges = []
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert len(labelled.structure.steps) == 4
    assert labelled.measured_passes == {"forward": 6, "backward": 6, "optimizer_step": 3}
    assert labelled.structure.step_rule.startswith("made from the phases: each optimizer step ends a step")


def closure_step(script, accumulating=0):
    """A step as PyTorch Lightning runs one: ``accumulating`` passes of their own, then the optimizer's
    step whose closure runs the forward (with a kernel of its own after it), the loss and the
    backward before the update (``optimizer.step(closure)``)."""
    for _ in range(accumulating):
        script.range("forward", lambda: script.kernel(count=3))
        script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4))
    script.range("optimizer_step", lambda: (script.range("forward", lambda: script.kernel(count=3)), script.kernel(),
                                            script.range("loss", lambda: script.kernel()),
                                            script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4)),
                                            script.kernel(name=OPTIMIZER_KERNEL, count=2)))


@pytest.mark.parametrize("step_ranges, accumulating", [(True, 0), (False, 0), (False, 1)])
def test_an_optimizer_step_running_a_closure_holds_passes_of_their_own(tmp_path, step_ranges, accumulating):
    """The forward, loss and backward inside the optimizer's range are passes; the optimizer step
    is the update after them, and steps made from the phases start at each step's first forward."""
    script = Script()
    for i in range(4):
        if step_ranges:
            script.range(f"batch_{i}", lambda: closure_step(script, accumulating))
        else:
            closure_step(script, accumulating)
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    passes = 1 + accumulating
    assert labelled.measured_passes == {"forward": 3 * passes, "loss": 3, "backward": 3 * passes, "optimizer_step": 3}
    assert len(labelled.structure.steps) == 4
    measured = labelled.ops[labelled.ops["measured"]]
    counts = measured["phase"].value_counts().to_dict()
    assert counts == {"forward": 3 * 3 * passes, "loss": 3, "backward": 3 * 4 * passes, "optimizer_step": 3 * 2, "": 3}
    update = labelled.ops[labelled.ops["phase"] == "optimizer_step"]
    assert set(update["demangled_name"]) == {OPTIMIZER_KERNEL}
    assert any("optimizer steps run their step's passes in a closure" in note for note in labelled.notes)


@pytest.mark.parametrize("closure", [False, True])
def test_micro_batches_in_ranges_of_their_own_with_every_second_updating_are_no_steps(tmp_path, closure):
    """``batch_<i>`` around each micro-batch (PyTorch Lightning's batch hooks with
    ``accumulate_grad_batches=2``), the optimizer step in every second one: the steps are made from
    the phases, one update and two micro-batches each."""
    script = Script()
    for i in range(4):
        script.range(f"batch_{2 * i}", lambda: (script.range("forward", lambda: script.kernel(count=3)),
                                                script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4))))
        script.range(f"batch_{2 * i + 1}", lambda: closure_step(script) if closure else script.iteration())
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert len(labelled.structure.steps) == 4
    assert labelled.measured_passes["forward"] == 6 and labelled.measured_passes["optimizer_step"] == 3
    assert any(note.startswith("`batch_<i>` ranges are micro-batches") for note in labelled.notes)


def test_a_warmup_range_around_accumulating_iterations_counts_their_updates(tmp_path):
    """A ``warmup`` range around two iterations of three micro-batches each holds two warm-up
    iterations, not one per backward run."""
    script = Script()
    script.range("warmup", lambda: [accumulating_step(script, 3) for _ in range(2)])
    for i in range(3):
        script.range(f"step {i}", lambda: accumulating_step(script, 3))
    labelled = script.labelled(tmp_path)
    steps = labelled.structure.steps
    assert list(steps.loc[~steps["measured"], "name"]) == ["warmup #0", "warmup #1"]
    assert measured_steps(labelled) == ["step 0", "step 1", "step 2"]
    assert labelled.structure.warmup_rule == "inside `warmup`"


@pytest.mark.parametrize("name", ["epoch{e}_step{s}", "Epoch {e} Batch {s}", "epoch_{e}/iter_{s}"])
def test_steps_named_by_epoch_and_step_are_one_family(tmp_path, name):
    """An outer loop's index in the step's name (``epoch1_step2``): the epochs' ranges are the steps
    of one loop, not runs of different work, and no epoch's first range is a range turned on
    after a warm-up."""
    script = Script()
    for e in range(2):
        for s in range(3):
            script.range(name.format(e=e, s=s), script.iteration)
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [name.format(e=e, s=s) for e in range(2) for s in range(3)]
    assert labelled.measured_passes == {"forward": 6, "backward": 6, "optimizer_step": 6}


@pytest.mark.parametrize("name", ["rank{r}_step_{i}", "[rank {r}] step {i}"])
def test_steps_named_by_rank_are_one_family_whichever_rank_starts_first(tmp_path, name):
    """Two ranks, each naming its steps with its rank (``rank1_step_3``), rank 1 starting first:
    the ranks' families lie in processes of their own, so they are one family, not two runs."""
    ranks = [Script(PID), Script(PID + 100)]
    ranks[1].now -= 500
    for i in range(4):
        for rank, script in enumerate(ranks):
            script.range(name.format(r=rank, i=i), script.iteration)
    path = build_export(tmp_path / "trace.sqlite", kernels=ranks[0].kernels + ranks[1].kernels,
                        ranges=ranks[0].ranges + ranks[1].ranges, strings=KERNELS)
    labelled = label_ops(load_trace(path, RangeFilter()))
    assert len(labelled.structure.steps) == 8 and labelled.structure.steps["measured"].all()
    assert labelled.measured_passes == {"forward": 8, "backward": 8, "optimizer_step": 8}


def test_steps_named_by_their_configuration_stay_runs_apart(tmp_path):
    """Numbers that name configurations (``attn d=16 s=256 iter=<i>``, then ``s=1024``) count no
    loop: ranges of different runs, and the whole capture is analyzed, as before."""
    script = Script()
    for size in (256, 1024):
        for i in range(3):
            script.range(f"attn d=16 s={size} iter={i}", script.iteration)
    labelled = script.labelled(tmp_path)
    assert not labelled.has_steps
    assert "different runs" in labelled.structure.step_rule


def test_ranges_of_one_pass_that_hold_the_optimizer_stay_steps_inside_a_container(tmp_path):
    """A range around several full steps is a container, whatever it holds, not one step."""
    script = Script()
    script.range("train", lambda: [script.range(f"iter_{i}", script.iteration) for i in range(4)])
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert measured_steps(labelled) == [f"iter_{i}" for i in range(1, 4)]


def forward_regions(tmp_path, parts: tuple[str, ...], softmax_at: int = 1) -> list[str]:
    """The attention part of each kernel of the first forward, where each forward holds one range
    of each of ``parts`` in turn (a softmax kernel in the one at ``softmax_at``, a matmul in the
    others), in 3 steps with a backward each."""
    script = Script()

    def forward():
        for i, part in enumerate(parts):
            script.range(part, lambda name=KERNELS[1 if i == softmax_at else 0]: script.kernel(name=name))

    for i in range(3):
        script.range(f"step_{i}", lambda: [script.range("forward", forward), script.range("backward", lambda: script.kernel(tid=AUTOGRAD))])
    labelled = script.labelled(tmp_path)
    return labelled.ops.loc[labelled.ops["phase"] == "forward", "region"].astype(str).tolist()[:len(parts)]


PARTS = ["computing attention scores", "computing softmax", "final matmul"]


def test_attention_parts_by_family(tmp_path):
    assert forward_regions(tmp_path, ("attention_scores_matmul", "attention_softmax", "attention_value_matmul")) == PARTS


@pytest.mark.parametrize("scores, softmax, final", [
    ("attn_scores", "attn_probs", "attn_output"),
    ("attention_scores_computation", "attention_weights_computation", "attention_output_computation"),
    ("bmm1", "softmax", "bmm2"),
    ("compute attention scores", "compute softmax", "final matmal"),  # a letter's slip
    ("attention scores", "Computing softmax", "Computing matmul with values (V matrix)"),
    ("compute attention_scores", "compute attention_weights", "compute attention_output"),
])
def test_attention_parts_named_for_the_probabilities_and_numbered_matmuls(tmp_path, scores, softmax, final):
    """The attention probabilities (weights) are the softmax's output, so a range named for them is
    the softmax part; the matmuls beside it may be numbered with no ``_`` (``bmm1``, ``bmm2``), and
    the output computed after it is the final matmul."""
    assert forward_regions(tmp_path, (scores, softmax, final)) == PARTS


def test_the_q_k_v_projections_are_no_attention_part(tmp_path):
    """``Compute Q, K, V`` (the projections before the attention) names q and k as the scores'
    names do, and v with them: no part; ``attention scores`` after it is the scores."""
    regions = forward_regions(tmp_path, ("Compute Q, K, V", "attention scores", "softmax", "matmul"), softmax_at=2)
    assert regions == ["", *PARTS]


@pytest.mark.parametrize("scores, softmax, final, layer_norm", [
    ("Q @ K^T matrix calculation", "softmax process", "softmax_attention_score_matrix @ V sum calculation", "ln_final"),
    ("attn_scores", "attn_softmax", "attn @ v", "final_norm"),
])
def test_attention_parts_written_as_products_and_a_final_norm_that_is_none(tmp_path, scores, softmax, final, layer_norm):
    """A name written as a product says its part by the right operand, whatever words come before;
    a name with "final" that names no matmul (the last layer norm) is no part."""
    assert forward_regions(tmp_path, (scores, softmax, final, layer_norm)) == [*PARTS, ""]


@pytest.mark.parametrize("pattern, shown", [
    ("{}_forward_only_false_model.d_model_512_use_optimizer_true", "`<phase>_forward_only_false_model_d_model_512"),
    ("my_{}", "`my_<phase>`")])
def test_phase_names_tagged_with_the_runs_settings_name_their_phases(tmp_path, pattern, shown):
    """``forward_<settings>``, ``backward_<settings>``, ``optimizer_<settings>``: one tag after each
    phase's name, shared by them all (a settings string that itself holds ``forward``); or one
    before it (``my_forward``, ``my_backward``, ``my_optimizer_step``)."""
    script = Script()
    for _ in range(4):
        script.iteration(pattern.format("forward"), pattern.format("backward"), pattern.format("optimizer"))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert labelled.measured_passes == {"forward": 3, "backward": 3, "optimizer_step": 3}
    assert labelled.structure.source == "ranges"
    assert any(note.startswith(f"phase ranges named {shown}") for note in labelled.notes)


@pytest.mark.parametrize("names, forwards", [
    (("small_forward",), 4),  # a forward-only benchmark with the model's size in its one phase's name
    (("forward_bf16",), 4),
    (("attention_forward",), 0),  # a module's forward: no pass
    (("attn_forward", "mlp_forward"), 0),  # two tags name the forward: parts of the model
])
def test_a_forward_named_with_a_tag_alone(tmp_path, names, forwards):
    """Where no name says a phase and the only tagged names say the forward, the one tag's ranges
    are the forward passes, unless the tag names a part of the model or several tags name it."""
    script = Script()
    for _ in range(5):
        script.range(names[0], lambda: [script.kernel(count=3), *(script.range(name, script.kernel) for name in names[1:])])
        script.kernel()  # the next inputs, outside the ranges
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert labelled.measured_passes.get("forward", 0) == forwards
    assert labelled.structure.phase_names.get("forward", []) == (list(names) if forwards else [])


@pytest.mark.parametrize("beside", [None, "train_loop", "record_param_comms, op_id = 9"])
def test_record_function_scopes_under_emit_nvtx_are_the_users_ranges(tmp_path, beside):
    """``emit_nvtx`` names each ``record_function`` scope ``<scope>, op_id = <n>`` (a new number
    each time) beside PyTorch's op ranges: where every range of the user's is such a scope and one
    names a phase, the scopes are the user's ranges (``warmup`` around the warm-up iterations);
    beside a range of another name they are left out, as PyTorch's own scopes (``record_param_comms``)
    alone are."""
    script, op_id = Script(), iter(range(1, 10_000))

    def scoped(name):
        return f"{name}, op_id = {next(op_id)}"

    def iteration(prefix=""):
        script.range(scoped(f"{prefix}forward"), lambda: [script.kernel(count=3), script.range(f"aten::mm, seq = 1, op_id = {next(op_id)}")])
        script.range(scoped(f"{prefix}backward"), lambda: script.kernel(tid=AUTOGRAD, count=4))
        script.range(f"MmBackward0, op_id = {next(op_id)}", tid=AUTOGRAD)

    if beside:
        script.range(beside if beside != "train_loop" else "train_loop", script.kernel)
    script.range(scoped("warmup"), lambda: [iteration("warmup_") for _ in range(2)])
    script.range(scoped("benchmark"), lambda: [iteration() for _ in range(4)])
    labelled = script.labelled(tmp_path)
    if beside == "train_loop":  # a range of the user's beside the scopes: they are left out
        assert labelled.structure.phase_names.get("forward", []) == ["(forward, from kernels)"]
        return
    assert labelled.structure.warmup_rule == "inside `warmup`"
    assert labelled.measured_passes == {"forward": 4, "backward": 4}
    assert labelled.structure.phase_names == {"forward": ["forward", "warmup_forward"], "backward": ["backward", "warmup_backward"]}


@pytest.mark.parametrize("pattern, shown", [("step_{i}_{phase}", "step_<i>_forward"), ("[iter {i}] {phase}", "[iter <i>] forward"),
                                            ("Step {i}: {phase}", "Step <i>: forward"), ("epoch0_it{i}/{phase}", "epoch<i>_it<i>/forward")])
@pytest.mark.parametrize("step_ranges", [True, False])
def test_phase_names_that_start_with_their_iterations_number_are_one_phase(tmp_path, pattern, shown, step_ranges):
    """``step_3_forward``, ``step_3_backward``, ``step_3_optimizer``: each iteration's number in its
    phases' names. Every iteration's ranges are the same phases, not ranges that first appear in
    the last one (which made every earlier iteration warm-up), and the first, slower step alone
    is warm-up."""
    script = Script()
    for i in range(6):
        names = [pattern.format(i=i, phase=phase) for phase in ("forward", "backward", "optimizer")]
        step = lambda names=names, i=i: script.iteration(*names, extra_kernels=30 if i == 0 else 0)  # noqa: E731
        script.range(f"step_{i}", step) if step_ranges else step()
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 5, "backward": 5, "optimizer_step": 5}
    assert labelled.structure.phase_names["forward"] == [shown]
    assert labelled.structure.source == "ranges"


@pytest.mark.parametrize("forward, backward, shown", [("micro_{k}_forward", "micro_{k}_backward", ["micro_<i>_forward"]),
                                                     ("accum_{k}/fwd", "accum_{k}/bwd", ["accum_<i>/fwd"]),
                                                     ("part_{k}_a", "part_{k}_b", ["(forward, from kernels)"])])
def test_micro_batches_in_ranges_named_by_their_number(tmp_path, forward, backward, shown):
    """Two micro-batches a step, each pass in a range named with the micro-batch's number: a
    phase's name after it (``micro_0_forward``) or none known (``part_0_a``, whose families are
    both micro-batches and parts of the steps: the analysis stopped with a KeyError)."""
    script = Script()
    for i in range(5):
        def step():
            for k in range(2):
                script.range(forward.format(k=k), lambda: script.kernel(count=3 + (30 if i == 0 else 0)))
                script.range(backward.format(k=k), lambda: script.kernel(tid=AUTOGRAD, count=4))
            script.range("optimizer", lambda: script.kernel(name=OPTIMIZER_KERNEL, count=2))
        script.range(f"step_{i}", step)
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [f"step_{i}" for i in range(1, 5)]
    assert labelled.measured_passes == {"forward": 8, "backward": 8, "optimizer_step": 4}
    assert labelled.structure.phase_names["forward"] == shown


@pytest.mark.parametrize("warmup, count, shown", [("warmup_{i}", 2, "warmup_<i>"), ("warmup_{i}", 1, "warmup_<i>"),
                                                   ("warmup", 1, "warmup")])
def test_ranges_around_the_warmup_iterations_alone_are_no_steps(tmp_path, warmup, count, shown):
    """A range per warm-up iteration (``warmup_<i>``), or one ``warmup`` around a single one, and
    the measured iterations in no range: those ranges were taken for the steps, so the warm-up was
    measured and the measured iterations left out. They mark the warm-up; the steps come from the
    phases."""
    script = Script()
    for i in range(count):
        script.range(warmup.format(i=i), lambda: script.iteration(extra_kernels=10))
    for _ in range(4):
        script.iteration()
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 4, "backward": 4, "optimizer_step": 4}
    assert labelled.structure.warmup_rule == f"inside `{shown}`"


@pytest.mark.parametrize("joined", ["forward+loss", "Forward & Loss", "fwd, loss", "forward_and_loss", "fwd_loss", "Forward/Loss"])
def test_a_range_around_the_forward_and_the_loss_is_the_forward(tmp_path, joined):
    script = Script()
    for i in range(4):
        script.range(f"step_{i}", lambda: script.iteration(joined, "backward", "optimizer"))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert labelled.measured_passes == {"forward": 3, "backward": 3, "optimizer_step": 3}
    assert labelled.structure.phase_names["forward"] == [joined]


@pytest.mark.parametrize("inner_steps", [True, False])
def test_a_step_that_trains_two_models_holds_a_pass_of_each(tmp_path, inner_steps):
    """A GAN's ``iteration_<i>`` holds ``D_step`` (``D_forward``, ``D_backward``, ``D_optimizer``)
    then ``G_step`` (the same with ``G_``): both tags name the phases, each iteration is one step of
    two passes of each phase, and ``D_step``/``G_step`` are its parts, not two runs."""
    script = Script()
    for i in range(4):
        def iteration():
            for model, extra in (("D", 0), ("G", 2)):
                body = lambda model=model, extra=extra: script.iteration(  # noqa: E731
                    f"{model}_forward", f"{model}_backward", f"{model}_optimizer", extra_kernels=extra)
                script.range(f"{model}_step", body) if inner_steps else body()
        script.range(f"iteration_{i}", iteration)
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert measured_steps(labelled) == [f"iteration_{i}" for i in range(1, 4)]
    assert labelled.measured_passes == {"forward": 6, "backward": 6, "optimizer_step": 6}
    assert labelled.structure.phase_names["forward"] == ["D_forward", "G_forward"]
    assert "per model (2 models" in labelled.structure.step_rule
    assert any("2 tags name the same phases" in note for note in labelled.notes)
    assert labelled.structure.unused == []


def test_a_loop_of_alike_passes_in_one_range_is_no_step_of_several_models(tmp_path):
    """A range around three alike iterations (one name each phase) is a container, not one step
    of three models."""
    script = Script()
    for i in range(3):
        script.range(f"iteration_{i}", lambda: [script.iteration() for _ in range(3)])
    labelled = script.labelled(tmp_path)
    assert not labelled.structure.step_ranges and "models" not in labelled.structure.step_rule


@pytest.mark.parametrize("periods, extra, grouped", [(6, 2, True), (3, 2, False), (6, 0, False)])
def test_updates_whose_kernel_counts_repeat_every_two_are_one_step(tmp_path, periods, extra, grouped):
    """No step ranges, two models updated in turn (their passes launch different numbers of
    kernels): each two updates are one step once the counts repeat for enough periods; alike
    updates, or too few periods, stay one step each."""
    script = Script()
    for _ in range(periods):
        script.iteration(extra_kernels=0)
        script.iteration(extra_kernels=extra)
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    steps = labelled.structure.steps
    assert len(steps) == (periods if grouped else 2 * periods)
    assert ("every 2 updates are one step" in labelled.structure.step_rule) == grouped
    if grouped:
        assert labelled.measured_passes["optimizer_step"] == 2 * (periods - 1)


@pytest.mark.parametrize("warmup", [None, 1])
def test_step_numbers_that_start_over_are_several_runs(tmp_path, warmup):
    """``step_0`` … ``step_3`` twice (one script benchmarking two models in turn, each counted
    from 0): two runs, and only the last is measured, even where the warm-up steps are given (the
    first of each process, which the first run holds)."""
    script = Script()
    for extra in (0, 2):
        for i in range(4):
            script.range(f"step_{i}", lambda extra=extra: script.iteration(extra_kernels=extra))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=warmup))
    steps = labelled.structure.steps.sort_values("start_ns")
    assert list(steps["measured"]) == [False] * 4 + [True] * 4
    assert labelled.structure.warmup_rule.startswith("the numbering of `step_<i>` starts over once: 2 runs")


@pytest.mark.parametrize("names", [("warmup_0", "warmup_1", "step_0", "step_1", "step_2", "step_3"),
                                   ("warmup_small_128", "warmup_small_128") + ("step_small_128",) * 4])
def test_warmup_numbers_then_step_numbers_are_one_run(tmp_path, names):
    """``warmup_0``, ``warmup_1``, then ``step_0`` … ``step_3``: each family counts once, one run;
    a number every range of a family shares (``step_small_128``) is no count that starts over."""
    script = Script()
    for name in names:
        script.range(name, script.iteration)
    measured = measured_steps(script.labelled(tmp_path))
    assert len(measured) == 4 and {step.split(" #")[0] for step in measured} == set(names[2:])


@pytest.mark.parametrize("tag", ["", "_small_128"])
def test_loss_names_with_a_verb(tmp_path, tag):
    """``computing_loss``, ``calculating_loss``: losses, plain or tagged as the other phases are."""
    script = Script()
    for i in range(3):
        script.range(f"step_{i}", lambda: script.iteration(f"forward{tag}", f"backward{tag}", f"optimizer{tag}",
                                                           loss=f"computing_loss{tag}" if tag else "calculating_loss"))
    assert script.labelled(tmp_path).measured_passes.get("loss") == 3


def export_with_host_calls(tmp_path, script: Script, calls: list[tuple[str, int]]):
    """The script's trace with runtime rows for the program's own calls (name, time): the
    profiler's start and stop, waits for the GPU, event records."""
    strings = tuple(dict.fromkeys(KERNELS + tuple(kernel[-1] for kernel in script.kernels)))
    path = build_export(tmp_path / "trace.sqlite", kernels=script.kernels, ranges=script.ranges, strings=strings)
    conn = sqlite3.connect(path)
    for k, (name, time) in enumerate(calls):
        conn.execute(f"INSERT INTO {STRINGS.name} VALUES (?, ?)", (100 + k, name))
        conn.execute(f"INSERT INTO {RUNTIME.name} VALUES (?, ?, ?, ?, ?)",
                     (time, time + 5, global_tid(PID, MAIN), 10_000 + k, 100 + k))
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("stop", [True, False])
def test_steps_outside_the_programs_profiler_window_are_warmup(tmp_path, stop):
    """Six alike ``train_step`` ranges, ``cudaProfilerStart`` before the third and
    ``cudaProfilerStop`` after the fifth: the steps outside are warm-up (or, with no stop, the
    two before the start), as nsys's --capture-range=cudaProfilerApi would have left them out."""
    script = Script()
    calls = []
    for i in range(6):
        if i == 2:
            calls.append(("cudaProfilerStart_v4000", script.now))
        script.range("train_step", script.iteration)
        if i == 4 and stop:
            calls.append(("cudaProfilerStop_v4000", script.now))
    labelled = label_ops(load_trace(export_with_host_calls(tmp_path, script, calls), RangeFilter()))
    assert list(labelled.structure.steps["measured"]) == [False, False, True, True, True, not stop]
    assert labelled.structure.warmup_rule.startswith("outside the program's cudaProfilerStart")


def test_a_profiler_window_opened_in_each_run_measures_the_last_runs_steps_inside_it(tmp_path):
    """Two models in turn, each ``step_0`` … ``step_5`` with ``cudaProfilerStart`` before its
    fifth step and no stop (a script that starts profiling after its warm-up in every run): the
    last run is measured from its own start call, not from the first run's."""
    script = Script()
    calls = []
    for extra in (0, 2):
        for i in range(6):
            if i == 4:
                calls.append(("cudaProfilerStart_v4000", script.now))
            script.range(f"step_{i}", lambda extra=extra: script.iteration(extra_kernels=extra))
    labelled = label_ops(load_trace(export_with_host_calls(tmp_path, script, calls), RangeFilter()))
    steps = labelled.structure.steps.sort_values("start_ns")
    assert list(steps["measured"]) == [False] * 10 + [True] * 2
    assert labelled.structure.warmup_rule.startswith("the numbering of `step_<i>` starts over once: 2 runs")
    assert "its warm-up: outside the program's cudaProfilerStart" in labelled.structure.warmup_rule


def timed_loop(tmp_path, warmup: int, timed: int, calls_after) -> list[bool]:
    """Which of ``warmup`` + ``timed`` alike iterations with no step range are measured, where
    ``calls_after(i, timed_loop)`` gives the runtime calls the program makes after iteration i
    (0 before the first), ``timed_loop`` saying whether the calls come from the timed loop's part."""
    script, calls = Script(), []
    for i in range(warmup + timed + 1):
        calls += [(name, script.now) for name in calls_after(i, i >= warmup)]
        script.now += 50
        if i < warmup + timed:
            script.iteration()
    labelled = label_ops(load_trace(export_with_host_calls(tmp_path, script, calls), RangeFilter()))
    return list(labelled.structure.steps.sort_values("start_ns")["measured"]), labelled.structure.warmup_rule


def test_steps_before_a_loop_timed_by_cuda_events_are_warmup(tmp_path):
    """Eight alike iterations with no step range; the program records a CUDA event after the
    third and after the last (a timer around the loop): the first three are warm-up, however
    alike they are."""
    measured, rule = timed_loop(tmp_path, 3, 5, lambda i, timed: ["cudaEventRecordWithFlags_v11010"] * (i in (3, 8)))
    assert measured == [False] * 3 + [True] * 5
    assert rule.startswith("3 leading steps before a timed loop: CUDA events are recorded after them and after the last")


@pytest.mark.parametrize("timer", ["cudaDeviceSynchronize_v3020", "cudaEventRecord_v3020 cudaEventSynchronize_v3020"])
def test_steps_no_wait_follows_before_steps_each_followed_by_one_are_warmup(tmp_path, timer):
    """Seven alike iterations with no step range; a synchronize follows each of the last five
    (a loop that times each step, by the host's clock or by an event recorded after each step and
    waited for) and none of the first two: those two are warm-up."""
    measured, rule = timed_loop(tmp_path, 2, 5, lambda i, timed: timer.split() * (i > 2))
    assert measured == [False] * 2 + [True] * 5
    assert rule.startswith("2 leading steps before a timed loop: no wait for the GPU follows them")


def test_steps_before_steps_each_waited_for_before_and_after_are_warmup(tmp_path):
    """Seven alike iterations with no step range; the last five each between two synchronizes (a
    timer around each): the second warm-up step is followed by one wait, the next step's own, so
    it is warm-up too."""
    measured, rule = timed_loop(tmp_path, 2, 5, lambda i, timed: ["cudaDeviceSynchronize_v3020"] * ((2 <= i < 7) + (i >= 3)))
    assert measured == [False] * 2 + [True] * 5
    assert rule.startswith("2 leading steps before a timed loop: no wait for the GPU follows them but the next step's own")


@pytest.mark.parametrize("calls", ["sync after each", "sync after the warm-up and the last", "record before all",
                                   "record after the warm-up alone", "record between every timed step",
                                   "sync after one timed step"])
def test_calls_that_do_not_mark_a_timed_loop_leave_the_warmup_to_the_other_rules(tmp_path, calls):
    """Waits and records that do not set leading steps apart leave them to the departing rule (no
    step departs here): a wait after every step (``.item()`` each step), waits after the warm-up
    and after the last step alone (a timer around the loop read by the host), an event recorded
    before the first step, one recorded after the warm-up with none after the last step, events
    recorded between all the later steps (a side stream's, as a prefetch records them), a wait
    after one step of the timed loop alone."""
    def made(i, timed):
        return {"sync after each": ["cudaStreamSynchronize_v3020"] * (i > 0),
                "sync after the warm-up and the last": ["cudaDeviceSynchronize_v3020"] * (i in (3, 8)),
                "record before all": ["cudaEventRecord_v3020"] * (i in (0, 8)),
                "record after the warm-up alone": ["cudaEventRecord_v3020"] * (i == 3),
                "record between every timed step": ["cudaEventRecord_v3020"] * timed,
                "sync after one timed step": ["cudaDeviceSynchronize_v3020"] * (i == 5)}[calls]
    measured, rule = timed_loop(tmp_path, 3, 5, made)
    assert measured == [True] * 8
    assert rule == "no leading step departs from the later steps' kernel count, kernel time or CPU span"


def test_an_update_with_no_fused_kernel_is_told_by_the_forwards_that_follow_it(tmp_path):
    """No NVTX; a hand-written optimizer (a loop over the parameters: elementwise kernels, no
    ``multi_tensor_apply``) after each backward, the first iteration's batch made on the GPU
    before its forward. Every later forward launches the update's kernels, then the first
    forward's: that lead is the update of the iteration before, so each step holds its own update
    (the last one's too) and no forward holds one."""
    script = Script()
    script.kernel(name="randint_kernel", count=2)
    for _ in range(5):
        script.kernel(count=3)
        script.kernel(name="softmax_warp_forward", count=2)
        script.kernel(tid=AUTOGRAD, count=6)
        script.kernel(name="adam_elementwise_kernel", count=4)
        script.kernel(name="sqrt_elementwise_kernel", count=2)
        script.now += 1000
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes.get("optimizer_step") == len(labelled.structure.steps[labelled.structure.steps["measured"]])
    kernels = labelled.ops.groupby("step", sort=False).size()
    assert kernels.tolist() == [19] + [17] * 4  # the first step also holds the batch's 2 kernels
    forward = labelled.ops[labelled.ops["phase"] == "forward"]
    assert not forward["demangled_name"].str.contains("elementwise").any()


def warmup_updates_then_plain_iterations(tmp_path, wait_after_update: bool):
    """No NVTX: 3 warm-up iterations that take the student's loss and step a hand-written optimizer
    (a loop over the parameters: elementwise kernels, no ``multi_tensor_apply``), then 5 timed
    ones with another loss and no update; a synchronize after each iteration, or (else) one after
    each loss, before the backward (a ``.item()``). Their labelled ops."""
    script, calls = Script(), []
    for i in range(8):
        script.kernel(count=3)
        script.kernel(name="student_loss_kernel" if i < 3 else "cross_entropy_kernel")
        if not wait_after_update:
            calls.append(("cudaStreamSynchronize_v3020", script.now))
            script.now += 40
        script.kernel(tid=AUTOGRAD, count=6)
        if i < 3:
            script.kernel(name="adam_elementwise_kernel", count=4)
            script.kernel(name="sqrt_elementwise_kernel", count=2)
        if wait_after_update:
            calls.append(("cudaDeviceSynchronize_v3020", script.now))
        script.now += 1000
    return label_ops(load_trace(export_with_host_calls(tmp_path, script, calls), RangeFilter()))


def test_an_update_in_the_warmup_alone_is_told_by_the_wait_after_it(tmp_path):
    """Warm-up iterations that update, then timed ones that do not (a benchmark that steps its
    optimizer only while warming up), a synchronize after each: the forwards differ (two losses),
    so they cannot tell the update; the wait after each update does. Each iteration is a step (the
    timed ones are no micro-batches of one update: more passes follow the last update than any
    update took), the warm-up steps hold their update, and no forward holds one."""
    labelled = warmup_updates_then_plain_iterations(tmp_path, wait_after_update=True)
    kernels = labelled.ops.groupby("step", sort=False).size()
    assert kernels.tolist() == [16] * 3 + [10] * 5
    updates = labelled.ops[labelled.ops["phase"] == "optimizer_step"]
    assert len(updates) == 18 and updates["demangled_name"].str.contains("elementwise").all()
    forward = labelled.ops[labelled.ops["phase"] == "forward"]
    assert not forward["demangled_name"].str.contains("elementwise").any()
    assert list(labelled.structure.steps.sort_values("start_ns")["measured"]) == [False] * 3 + [True] * 5


def test_passes_after_the_last_update_fewer_than_an_update_took_are_its_micro_batches(tmp_path):
    """No NVTX; gradient accumulation, 3 forward and backward passes to each fused update, 4
    updates, then 2 more passes the capture ends before updating: fewer than an update took, so
    they are one step's micro-batches, not two steps: 5 steps."""
    script = Script()
    for update in range(5):
        for _ in range(3 if update < 4 else 2):
            script.kernel(count=3)
            script.kernel(tid=AUTOGRAD, count=4)
        if update < 4:
            script.kernel(name=OPTIMIZER_KERNEL, count=2)
    labelled = script.labelled(tmp_path)
    assert labelled.ops.groupby("step", sort=False).size().tolist() == [23] * 4 + [14]


def test_a_wait_before_each_backward_tells_no_update(tmp_path):
    """The same iterations with the wait after each loss instead (a ``.item()`` before the
    backward): the kernels after it are no forward, so what comes before it is no update; no
    optimizer step is found, and no forward is cut short."""
    labelled = warmup_updates_then_plain_iterations(tmp_path, wait_after_update=False)
    assert "optimizer_step" not in set(labelled.ops["phase"])
    forward = labelled.ops[labelled.ops["phase"] == "forward"]
    assert forward["demangled_name"].isin(["student_loss_kernel", "cross_entropy_kernel"]).sum() == 8


def test_an_update_is_told_by_the_wait_after_it_though_another_follows_the_forward(tmp_path):
    """No NVTX; 3 warm-up iterations whose update clips the gradients first (2 more kernels, so
    the forwards cannot tell the update), then 5 alike; a synchronize after each update and another
    after each forward, before the loss (a script timing its phases). The update is what comes
    before the wait that leaves the model's kernels after it, not before the last one, which leaves
    the loss alone (before, no update was found and every forward held the previous one)."""
    script, calls = Script(), []
    for i in range(8):
        script.kernel(count=3)
        calls.append(("cudaDeviceSynchronize_v3020", script.now))
        script.now += 40
        script.kernel(name="cross_entropy_kernel")
        script.kernel(tid=AUTOGRAD, count=6)
        if i < 3:
            script.kernel(name="clip_elementwise_kernel", count=2)
        script.kernel(name="adam_elementwise_kernel", count=4)
        calls.append(("cudaDeviceSynchronize_v3020", script.now))
        script.now += 1000
    labelled = label_ops(load_trace(export_with_host_calls(tmp_path, script, calls), RangeFilter()))
    updates = labelled.ops[labelled.ops["phase"] == "optimizer_step"]
    assert len(updates) == 3 * 6 + 5 * 4 and updates["demangled_name"].str.contains("elementwise").all()
    forward = labelled.ops[labelled.ops["phase"] == "forward"]
    assert not forward["demangled_name"].str.contains("elementwise").any()


def test_three_passes_whose_first_update_is_untold_are_still_a_loop(tmp_path):
    """No NVTX; 1 warm-up and 2 timed iterations of a hand-written update (its first run makes
    the optimizer's state: 2 more kernels, so the forwards cannot tell the update), a synchronize
    after each timed iteration only: the waits tell the timed updates, not the warm-up's, so the
    first step made from the phases holds two passes. Three training passes are a loop: the
    steps are kept (before, two steps were "too few" and the trace had none), the last measured."""
    script, calls = Script(), []
    for i in range(3):
        script.kernel(count=3)
        script.kernel(name="cross_entropy_kernel")
        script.kernel(tid=AUTOGRAD, count=6)
        if i == 0:
            script.kernel(name="zeros_like_kernel", count=2)
        script.kernel(name="adam_elementwise_kernel", count=4)
        if i > 0:
            calls.append(("cudaDeviceSynchronize_v3020", script.now))
        script.now += 1000
    labelled = label_ops(load_trace(export_with_host_calls(tmp_path, script, calls), RangeFilter()))
    steps = labelled.structure.steps
    assert "too few" not in labelled.structure.step_rule
    assert list(steps["measured"]) == [False, True]
    assert labelled.measured_passes == {"forward": 1, "backward": 1, "optimizer_step": 1}
    measured = labelled.ops[labelled.ops["measured"]]
    assert len(measured) == 4 + 6 + 4


def test_an_update_is_told_by_the_forwards_after_a_set_up_longer_than_the_model(tmp_path):
    """No NVTX; the weights initialized on the GPU (12 kernels) before the first forward (3), then
    6 iterations, each a hand-written update (4 elementwise kernels) after its backward (6): every
    forward after the first launches the previous update, then the model's 3 kernels, the end it
    shares with the first forward. That end is the model though shorter than half the first
    forward (the set-up is longer), since the backward launches no more than four times as many:
    every update is found (before, none was)."""
    script = Script()
    script.kernel(name="init_kernel", count=12)
    for _ in range(6):
        script.kernel(count=3)
        script.kernel(tid=AUTOGRAD, count=6)
        script.kernel(name="adam_elementwise_kernel", count=4)
    labelled = script.labelled(tmp_path)
    updates = labelled.ops[labelled.ops["phase"] == "optimizer_step"]
    assert len(updates) == 6 * 4 and (updates["demangled_name"] == "adam_elementwise_kernel").all()
    forward = labelled.ops[labelled.ops["phase"] == "forward"]
    assert not forward["demangled_name"].str.contains("elementwise").any()


def test_the_last_update_is_told_though_a_kernel_of_it_runs_as_another_variant(tmp_path):
    """No NVTX; 5 iterations, each a hand-written update of 10 elementwise kernels after the
    backward; in the last, one of them runs as PyTorch's other variant of the same kernel
    (``vectorized_elementwise_kernel``, as a tensor's alignment decides). The forwards tell the
    updates before them; the last iteration's, after its backward, is 9 in 10 alike: it is its
    update too (before, its step held no update)."""
    script = Script()
    for i in range(5):
        script.kernel(count=3)
        script.kernel(tid=AUTOGRAD, count=6)
        script.kernel(name="adam_elementwise_kernel", count=9)
        script.kernel(name="vectorized_elementwise_kernel" if i == 4 else "adam_elementwise_kernel")
    labelled = script.labelled(tmp_path)
    updates = labelled.ops[labelled.ops["phase"] == "optimizer_step"]
    assert len(updates) == 5 * 10
    assert labelled.ops.groupby("step", sort=False).size().tolist()[1:] == [19] * 4


def test_a_region_named_after_the_backward_around_the_loss_backward_and_update_is_no_pass(tmp_path):
    """``forward stage of llm``, then ``backward:`` around ``compute loss``, ``loss.backward
    compute:`` and ``optimize step:``: the region is no backward and no step; the ranges inside
    it are the loss, the backward and the update, and each forward starts a step."""
    script = Script()
    for _ in range(4):
        script.range("forward stage of llm", lambda: script.kernel(count=3))
        script.range("backward:", lambda: (script.range("compute loss", lambda: script.kernel()),
                                           script.range("loss.backward compute:", lambda: script.kernel(tid=AUTOGRAD, count=4)),
                                           script.range("optimize step:", lambda: script.kernel(name=OPTIMIZER_KERNEL, count=2))))
    labelled = script.labelled(tmp_path)
    assert labelled.structure.phase_names == {"forward": ["forward stage of llm"], "loss": ["compute loss"],
                                              "backward": ["loss.backward compute:"], "optimizer_step": ["optimize step:"]}
    assert labelled.structure.steps["range_name"].unique().tolist() == ["(iteration)"]
    assert len(labelled.structure.steps) == 4


@pytest.mark.parametrize("iterations", [2, 3])
def test_kernels_alone_need_three_iterations_to_be_steps(tmp_path, iterations):
    """No NVTX at all: iterations found from the kernels (a forward, a backward from the autograd
    thread, the optimizer's kernels) are steps from three on; fewer (a benchmark's repeated calls
    run together) are no steps, and their phases are left out too."""
    script = Script()
    for _ in range(iterations):
        script.kernel(count=12)
        script.kernel(tid=AUTOGRAD, count=12)
        script.kernel(name=OPTIMIZER_KERNEL, count=2)
        script.now += 1000
    labelled = script.labelled(tmp_path)
    assert labelled.has_steps == (iterations == 3)
    assert bool(labelled.measured_passes) == (iterations == 3)
    assert ("too few to be a loop's steps" in labelled.structure.step_rule) == (iterations == 2)


@pytest.mark.parametrize("between", [0, 6])
def test_kernels_between_steps_made_from_the_phases_are_noted(tmp_path, between):
    """No step ranges: a step made from the phases ends with its optimizer step, so kernels after
    it and before the next forward (a ZeRO optimizer's broadcast) lie in no step; a note says how
    much, once it is over the share."""
    from analysis.core.timings import RunRecord
    from analysis.trace.nsys_inputs import NsysInputs
    from analysis.trace.phase_breakdown import between_steps_notes

    script = Script()
    for _ in range(5):
        script.iteration()
        script.kernel(count=between)
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    notes = between_steps_notes(NsysInputs.build(labelled, RunRecord(), None))
    assert len(notes) == (1 if between else 0)
    if between:  # 3 gaps between the 4 measured steps, 6 kernels each, against 4 steps of 9, all as long: 50%
        assert notes[0].startswith("kernels in no step ran between the measured steps, 50.0% as much")
        assert "100.0% of that time launched outside any range (ranges around whole steps aside) (after the " \
               "optimizer step that ends each step made from the phases)" in notes[0]


def test_kernels_between_steps_with_no_optimizer_found_are_placed_after_the_backward(tmp_path):
    """No step ranges and no optimizer phase (a forward and a backward range each iteration, then
    kernels on the main thread, as many as the iteration's index and a few: not one update's
    sequence repeated): the note places the unheld kernels after each step's backward, not after
    an optimizer step the trace does not have."""
    from analysis.core.timings import RunRecord
    from analysis.trace.nsys_inputs import NsysInputs
    from analysis.trace.phase_breakdown import between_steps_notes

    script = Script()
    for i in range(5):
        script.range("forward", lambda: script.kernel(count=3))
        script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4))
        script.kernel(count=6 + i)  # in no range
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert "optimizer_step" not in labelled.measured_passes
    (note,) = between_steps_notes(NsysInputs.build(labelled, RunRecord(), None))
    assert "(after each step's backward, where an optimizer that no range names" in note
    assert "after the optimizer step" not in note


def test_the_note_on_kernels_between_steps_names_the_range_that_launched_them(tmp_path):
    """A rollout between the steps (``rollout`` > ``sample``) inside a range around the whole run:
    the note names the outermost range that holds no step, not the run's range nor the inner one."""
    from analysis.core.timings import RunRecord
    from analysis.trace.nsys_inputs import NsysInputs
    from analysis.trace.phase_breakdown import between_steps_notes

    script = Script()

    def run():
        for i in range(5):
            script.range("rollout", lambda: script.range("sample", lambda: script.kernel(count=6)))
            script.range(f"step_{i}", script.iteration)

    script.range("main", run)
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    (note,) = between_steps_notes(NsysInputs.build(labelled, RunRecord(), None))
    assert note.endswith("100.0% of that time launched inside `rollout`; no figure holds them")


def test_a_shared_tag_needs_two_phases(tmp_path):
    """``forward_hook_a`` alone names no phase by a tag: one phase's names are not a run's tag."""
    script = Script()
    for _ in range(3):
        script.iteration("forward_hook_a", "bwd_pass_b", "update_c")
    labelled = script.labelled(tmp_path)
    assert not any(note.startswith("phase ranges named") for note in labelled.notes)


@pytest.mark.parametrize("calls, first, last, layers, split", [
    (4, "token_embeddings", "lm_head", 2, True),
    (1, "token_embeddings", "lm_head", 2, False),
    (4, "qkv projections", "output projection", 1, False),  # a loop over layers with no layer range
    (4, "layer_0", "layer_1", 2, False),
    (4, "computing attention scores", "final matmul", 2, False)])
def test_a_forward_range_around_several_calls_of_the_model_holds_one_pass_per_call(
        tmp_path, calls, first, last, layers, split):
    """One ``forward`` range around a loop of model calls: the model's first and last ranges, as
    many as the calls and one after the other, each call holding its layers' ranges, make each
    call a pass. Ranges of each layer of one call (nothing repeats between them), block ranges,
    attention parts, or one call split nothing."""
    script = Script()

    def model_calls():
        for _ in range(calls):
            script.range(first, lambda: script.kernel())
            for _ in range(layers):
                script.range("ln", lambda: script.kernel(count=2))
            script.range(last, lambda: script.kernel())

    script.range("forward", model_calls)
    labelled = script.labelled(tmp_path)
    forward = labelled.phase_ranges[labelled.phase_ranges["phase"] == "forward"]
    assert len(forward) == (calls if split else 1)
    assert any("holds 4 calls of the model" in note for note in labelled.notes) == split
    if split:  # every call's kernels, the first call's with what came before it
        assert (labelled.ops.loc[labelled.ops["phase"] == "forward", "phase_range_id"].value_counts() == 2 + 2 * layers).all()


def test_phases_in_a_step_namespace_with_block_ranges_named_by_direction(tmp_path):
    """``step/forward``, ``step/loss``, ``step/backward``, ``step/optimizer_step`` inside
    ``profile/train_step``, and module hooks' ``block/<ii>/forward`` (main thread) and
    ``block/<ii>/backward`` (autograd thread): the ``step`` namespace names no optimizer step, and a
    block's range is its share of a pass, not a pass."""
    script = Script()

    def train_step():
        script.range("step/zero_grad", lambda: script.kernel())
        script.range("step/forward", lambda: [script.range(f"block/{k:02d}/forward", lambda: script.kernel(count=2))
                                              for k in range(2)])
        script.range("step/loss", lambda: script.kernel())
        script.range("step/backward", lambda: [script.range(f"block/{k:02d}/backward", lambda: script.kernel(
            tid=AUTOGRAD, count=2), tid=AUTOGRAD) for k in (1, 0)])
        script.range("step/optimizer_step", lambda: script.kernel(name=OPTIMIZER_KERNEL, count=2))

    for _ in range(3):
        script.range("profile/train_step", train_step)
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [f"profile/train_step #{i}" for i in range(3)]
    assert labelled.measured_passes == {"forward": 3, "loss": 3, "backward": 3, "optimizer_step": 3}
    assert labelled.structure.phase_names == {"forward": ["step/forward"], "loss": ["step/loss"],
                                              "backward": ["step/backward"], "optimizer_step": ["step/optimizer_step"]}
    assert (labelled.ops.loc[labelled.ops["phase"] == "backward", "launch_tid"] == AUTOGRAD).sum() == 3 * 4


@pytest.mark.parametrize("calls, alike, step_ranges", [(3, True, True), (3, False, True), (1, True, True),
                                                       (3, True, False), (1, False, False)])
def test_a_warmup_range_around_forward_calls_holds_one_iteration_per_call(tmp_path, calls, alike, step_ranges):
    """A forward-only benchmark: ``warmup`` around 3 model calls with no range of their own, each
    opening the model's 2 attention ranges as every measured step does: 3 warm-up iterations, each
    its own call's kernels where the calls launch alike (else cut where its first range opens);
    one call is one iteration, also where the measured calls have a ``forward`` range and no step
    range (the steps made from the phases: before, such a range around one call that launches
    more than a measured one, its set-up's kernels, held none)."""
    script = Script()

    def model(extra=0):
        script.kernel(count=1 + extra)  # the embedding, before the first attention range
        for _ in range(2):
            script.range("attn", lambda: script.kernel(count=2))

    script.range("warmup", lambda: [model(extra=int(not alike and i == 0)) for i in range(calls)])
    for i in range(4):
        script.range(f"step_{i}" if step_ranges else None, lambda: script.range("forward", model))
    labelled = script.labelled(tmp_path)
    steps = labelled.structure.steps
    assert len(measured_steps(labelled)) == 4
    assert not step_ranges or measured_steps(labelled) == [f"step_{i}" for i in range(4)]
    warm = steps[~steps["measured"]]
    assert len(warm) == calls
    kernels = labelled.ops[labelled.ops["step"].isin(warm["name"])].groupby("step", sort=False).size().tolist()
    assert kernels == ([5] * calls if alike else [6] if calls == 1 else [6 + 1, 5, 5 - 1])


def loop_in_a_phase_range(script: Script, phase: str, backward: bool, outside: int = 0, differing: bool = False,
                          marks: int = 0) -> None:
    """A benchmark whose warm-up runs 3 iterations with no range (a forward and a backward each)
    and whose measured loop lies in one range named like a phase (``forward`` or ``backward``:
    what the loop times) around ``it0`` … ``it3``, each a forward and, with ``backward``, the
    autograd thread's backward; ``outside`` kernels launched in the phase range before the loop,
    with ``differing`` the last iteration one kernel more, and ``marks`` ranges ``log`` that
    launch nothing after the loop, in the phase range."""
    for _ in range(3):
        script.kernel(count=3)
        script.kernel(tid=AUTOGRAD, count=4)

    def loop():
        script.kernel(count=outside)
        for i in range(4):
            script.range(f"it{i}", lambda: (script.kernel(count=3 + (differing and i == 3)),
                                            script.kernel(tid=AUTOGRAD, count=4 * backward)))
        for _ in range(marks):
            script.range("log", lambda: None)
    script.range(phase, loop)


@pytest.mark.parametrize("marks", [0, 2])
def test_a_forward_range_around_a_loop_of_forward_iterations_holds_one_pass_per_iteration(tmp_path, marks):
    """``forward`` around ``it<i>`` that launch the same kernels and all of the range's: each is a
    measured step and its forward pass; the unranged iterations before them are the warm-up. Ranges
    of another name beside the loop (``log`` twice, launching nothing) change nothing."""
    script = Script()
    loop_in_a_phase_range(script, "forward", backward=False, marks=marks)
    labelled = script.labelled(tmp_path)
    steps = labelled.structure.steps
    assert measured_steps(labelled) == [f"it{i}" for i in range(4)]
    assert int((~steps["measured"]).sum()) == 3
    assert labelled.measured_passes == {"forward": 4}
    assert (labelled.ops.loc[labelled.ops["measured"], "phase"] == "forward").sum() == 4 * 3
    assert any("`forward` holds 4 iterations `it<i>`" in note for note in labelled.notes)


@pytest.mark.parametrize("phase", ["backward", "forward"])
def test_a_phase_range_around_a_loop_of_whole_iterations_is_no_pass(tmp_path, phase):
    """``backward`` (or ``forward``) around ``it<i>`` that each launch a forward and, from the
    autograd thread, a backward: the range marks the loop, not a pass; each iteration is a step
    with both passes."""
    script = Script()
    loop_in_a_phase_range(script, phase, backward=True)
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [f"it{i}" for i in range(4)]
    assert int((~labelled.structure.steps["measured"]).sum()) == 3
    assert labelled.measured_passes == {"forward": 4, "backward": 4}
    assert any(f"`{phase}` holds 4 iterations `it<i>`" in note for note in labelled.notes)


@pytest.mark.parametrize("outside, differing", [(1, False), (0, True)])
def test_a_phase_range_around_iterations_that_are_parts_of_it_stays_one_pass(tmp_path, outside, differing):
    """A forward range with a kernel outside its ``it<i>`` ranges (an embedding before its
    layers), or whose ranges launch different kernels, is one pass, as it says."""
    script = Script()
    loop_in_a_phase_range(script, "forward", backward=False, outside=outside, differing=differing)
    labelled = script.labelled(tmp_path)
    assert len(labelled.phase_ranges[labelled.phase_ranges["phase"] == "forward"]) == 1
    assert not any("holds 4 iterations" in note for note in labelled.notes)


def forward_calls(script: Script, calls: int, tid: int = MAIN) -> None:
    """``calls`` calls of a model with no range of their own: an embedding, two alike layers, a head."""
    for _ in range(calls):
        script.kernel(name="embedding_kernel", tid=tid)
        script.kernel(count=2, tid=tid)
        script.kernel(name="softmax_warp_forward", count=2, tid=tid)
        script.kernel(name="head_kernel", tid=tid)


def test_a_forward_range_around_unranged_calls_holds_one_pass_per_call(tmp_path):
    """A forward-only benchmark: ``warmup`` around 3 calls of the model and ``benchmark_forward``
    around 5, none with a range of its own, every kernel from the main thread. Each range's
    kernels repeat one call's 6 five (three) times over: 5 measured forward passes, 3 warm-up."""
    script = Script()
    script.range("warmup", lambda: forward_calls(script, 3))
    script.range("benchmark_forward", lambda: forward_calls(script, 5))
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 5}
    assert int((~labelled.structure.steps["measured"]).sum()) == 3
    forwards = labelled.phase_ranges[labelled.phase_ranges["phase"] == "forward"]
    assert len(forwards) == 5
    kernels = labelled.ops[labelled.ops["measured"]].groupby("step", sort=False).size()
    assert kernels.tolist() == [6] * 5
    assert any("`benchmark_forward` launches the same kernels 5 times over" in note for note in labelled.notes)


def test_a_measured_range_around_unranged_calls_holds_one_forward_pass_per_call(tmp_path):
    """A forward-only benchmark whose one range, ``measurement``, is around its 5 timed calls,
    none with a range of its own, every kernel from the main thread: 5 forward passes, each a
    measured step; the 3 calls before it, alike, are its warm-up, found from the kernels."""
    script = Script()
    forward_calls(script, 3)
    script.range("measurement", lambda: forward_calls(script, 5))
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 5}
    assert labelled.structure.steps.sort_values("start_ns")["measured"].tolist() == [False] * 3 + [True] * 5
    assert any("the measured range `measurement` launches the same kernels 5 times over" in note for note in labelled.notes)


def test_a_forward_range_around_cuda_graph_replays_holds_one_pass_per_replay(tmp_path):
    """A compiled model replayed as a CUDA graph: each call an input copy and one whole graph's
    execution (``[CUDA graph 1]``), two kernels a call, fewer than a call's sequence needs
    otherwise; the graph is a call's work by itself: 5 passes."""
    script = Script()
    script.range("benchmark_forward", lambda: [(script.kernel(name="copy_kernel"), script.kernel(name="[CUDA graph 1]"))
                                               for _ in range(5)])
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 5}


def test_a_warmup_range_whose_first_call_differs_holds_as_many_calls_as_end_it(tmp_path):
    """``warmup`` around 3 calls whose first launches 4 more kernels before its run (a compile, a
    library's set-up), then ``benchmark_forward`` around 5 alike: the warm-up's kernels end with 3
    repeats of a measured call's, the first call's extra kernels before them: 3 warm-up calls."""
    script = Script()
    script.range("warmup", lambda: (script.kernel(name="autotune_kernel", count=4), forward_calls(script, 3)))
    script.range("benchmark_forward", lambda: forward_calls(script, 5))
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 5}
    assert int((~labelled.structure.steps["measured"]).sum()) == 3


@pytest.mark.parametrize("warmup_calls", [3, 0])
def test_unranged_calls_before_a_forward_only_benchmarks_steps_are_its_warmup(tmp_path, warmup_calls):
    """A forward-only benchmark: the model's set-up (4 fills), ``warmup_calls`` calls of the model
    with no range, then 5 calls each in a ``forward`` range. The kernels before the first step end
    with that many repeats of a measured call's: each is a warm-up iteration, and the set-up none."""
    script = Script()
    script.kernel(name="fill_kernel", count=4)
    forward_calls(script, warmup_calls)
    for _ in range(5):
        script.range("forward", lambda: forward_calls(script, 1))
    labelled = script.labelled(tmp_path)
    steps = labelled.structure.steps.sort_values("start_ns")
    assert list(steps["measured"]) == [False] * warmup_calls + [True] * 5
    assert labelled.measured_passes == {"forward": 5}
    if warmup_calls:
        assert labelled.structure.warmup_rule.startswith("the 3 iterations before the first step, with no step or phase range")
        warm = labelled.ops[labelled.ops["step"].str.startswith("(iteration with no step range)")]
        assert len(warm) == 6 * 3 and not warm["demangled_name"].eq("fill_kernel").any()


@pytest.mark.parametrize("after", [0, 2])
def test_a_loop_of_calls_with_no_range_is_one_forward_pass_per_call(tmp_path, after):
    """A forward-only benchmark with no range at all (``--trace=cuda``, or ranges around
    attention parts alone), every kernel from the main thread, no wait for the GPU: the model's
    set-up (4 fills), 8 calls of one sequence of 6 kernels (most of the kernels), and ``after``
    kernels of a summary after the loop. Each call is a forward pass and a step, the set-up and
    the summary in none."""
    script = Script()
    script.kernel(name="fill_kernel", count=4)
    script.range("attention", lambda: None)
    forward_calls(script, 8)
    script.kernel(name="reduce_kernel", count=after)
    labelled = script.labelled(tmp_path)
    steps = labelled.structure.steps
    assert len(steps) == 8 and labelled.structure.source == "kernels"
    assert labelled.ops.groupby("step", sort=False).size().loc[steps["name"]].tolist() == [6] * 8
    assert (labelled.ops.loc[labelled.ops["step"] != "", "phase"] == "forward").all()
    outside = labelled.ops[labelled.ops["demangled_name"].isin(["fill_kernel", "reduce_kernel"])]
    assert len(outside) == 4 + after and (outside["step"] == "").all() and (outside["phase"] == "").all()
    assert any("repeat one sequence of 6 kernels 8 times over" in note for note in labelled.notes)


def test_the_last_of_three_calls_is_as_long_as_the_calls_before_it_but_the_first(tmp_path):
    """Three calls of the model with no range (1 warm-up and 2 timed), the first slow on the
    host (a cold start: 5,000 ns after its kernels' launches): the last call, whose end no next call
    marks, is as long as the middle one; the first, left out, would make it half as long as
    itself (the median of two), and the last call would then seem to depart from nothing."""
    script = Script()
    script.kernel(name="fill_kernel", count=4)
    forward_calls(script, 1)
    script.now += 5_000
    forward_calls(script, 2)
    script.now += 100_000  # the script's report after the loop launches nothing
    labelled = script.labelled(tmp_path)
    steps = labelled.structure.steps.sort_values("start_ns")
    spans = (steps["end_ns"] - steps["start_ns"]).tolist()
    assert len(spans) == 3 and spans[2] == spans[1]


def test_two_calls_in_a_measured_range_after_one_with_no_range_are_steps(tmp_path):
    """``measurement`` around 2 calls of the model, none with a range of its own, after 1 warm-up
    call: the range of yours tells the calls, so two are not too few to be steps (kernels alone,
    with no range, would be); the call before it is the warm-up."""
    script = Script()
    forward_calls(script, 1)
    script.range("measurement", lambda: forward_calls(script, 2))
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 2}
    assert labelled.structure.steps.sort_values("start_ns")["measured"].tolist() == [False, True, True]


def test_a_loop_of_calls_whose_every_kernel_recurs_in_a_call_is_read(tmp_path):
    """A forward-only loop with no range whose call launches no kernel name once (each recurs in
    every layer, the embedding's and the head's too): 3 layers of a matmul and a softmax, then two
    adds, 8 calls and a synchronize after each. No name keeps one spacing to its next launch; the
    matmul keeps one to its third next, the call's length: 8 passes of 8 kernels."""
    script, calls = Script(), []
    for _ in range(8):
        for _ in range(3):
            script.kernel(name="gemm_kernel")
            script.kernel(name="softmax_warp_forward")
        script.kernel(name="add_kernel", count=2)
        calls.append(("cudaDeviceSynchronize_v3020", script.now))
        script.now += 40
    labelled = label_ops(load_trace(export_with_host_calls(tmp_path, script, calls), RangeFilter()))
    assert labelled.structure.source == "kernels" and len(labelled.structure.steps) == 8
    assert labelled.ops.groupby("step", sort=False).size().tolist() == [8] * 8
    assert any("repeat one sequence of 8 kernels 8 times over" in note for note in labelled.notes)


@pytest.mark.parametrize("waits", [True, False])
def test_a_loop_of_calls_after_a_long_setup_is_read_where_each_call_is_waited_for(tmp_path, waits):
    """A compiled model's benchmark: 60 kernels of set-up (a compile's autotuning), a first call
    whose first kernel differs, then 6 alike calls. With a synchronize after each call, the calls
    are the 6 alike (the first is none: counted back from the loop's end); with none, a sequence
    that repeats in a fifth of the kernels is not taken for the model's call."""
    script, calls = Script(), []
    for i in range(30):
        script.kernel(name="autotune_kernel" if i % 3 else "fill_kernel", count=2)
    script.kernel(name="compile_kernel")
    forward_calls(script, 1)
    script.kernels[-6] = (*script.kernels[-6][:-1], "embedding_first_kernel")  # the first call's own
    for _ in range(6):
        forward_calls(script, 1)
        calls += [("cudaDeviceSynchronize_v3020", script.now)] * waits
        script.now += 40
    labelled = label_ops(load_trace(export_with_host_calls(tmp_path, script, calls), RangeFilter()))
    if waits:
        assert len(labelled.structure.steps) == 6 and labelled.measured_passes["forward"] >= 5
        kernels = labelled.ops[labelled.ops["step"] != ""].groupby("step", sort=False).size()
        assert kernels.tolist() == [6] * 6
        assert any("with a wait for the GPU between every two" in note for note in labelled.notes)
    else:
        assert len(labelled.structure.steps) == 0
        assert not any("repeat one sequence" in note for note in labelled.notes)


@pytest.mark.parametrize("case", ["calls unalike", "a second thread", "one call"])
def test_kernels_with_no_range_that_do_not_repeat_are_no_passes(tmp_path, case):
    """No forward pass is made from kernels with no range where the calls differ (each launches
    one more kernel than the last), where a second thread launches too (a backward on the autograd
    thread: the training rules' case), or where the model is called once."""
    script = Script()
    for call in range(1 if case == "one call" else 6):
        forward_calls(script, 1)
        script.kernel(name="extra_kernel", count=call if case == "calls unalike" else 0)
        if case == "a second thread":
            script.kernel(tid=AUTOGRAD, name="backward_kernel", count=4)
    labelled = script.labelled(tmp_path)
    assert not any("repeat one sequence" in note for note in labelled.notes)
    assert "forward" not in labelled.measured_passes or case == "a second thread"


@pytest.mark.parametrize("case", ["one call", "calls unalike", "a second thread"])
def test_a_forward_range_whose_kernels_do_not_repeat_alone_stays_one_pass(tmp_path, case):
    """The range stays one pass where its kernels are one call's, where the last call launches one
    kernel more, or where the process launches from a second thread too (a backward pass on the
    autograd thread elsewhere in it: a training run, whose forward ranges are not split so)."""
    script = Script()
    script.range("benchmark_forward", lambda: (forward_calls(script, 1 if case == "one call" else 5),
                                               script.kernel(count=int(case == "calls unalike"))))
    if case == "a second thread":
        script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4))
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes["forward"] == 1
    assert not any("launches the same kernels" in note for note in labelled.notes)


@pytest.mark.parametrize("warmup_range", [True, False])
def test_forwards_after_a_training_warmup_are_the_measured_passes(tmp_path, warmup_range):
    """A forward-only benchmark that warms up with training iterations (``Warm-up`` around
    ``Warm-up Step <i>`` with ``Forward`` and ``Backward``), then times 5 ``Forward`` ranges that no
    backward takes: those are its measured passes, each a step. Where no range names the training
    iterations warm-up (``Train Step <i>``), the same forwards after them are evaluation passes."""
    script = Script()

    def warmup():
        for i in range(3):
            script.range(f"{'Warm-up' if warmup_range else 'Train'} Step {i + 1}", lambda: (script.range("Forward", lambda: script.kernel(count=3)),
                                                           script.range("Backward", lambda: script.kernel(tid=AUTOGRAD, count=4))))
    script.range("Warm-up" if warmup_range else None, warmup)
    for _ in range(5):
        script.range("Forward", lambda: script.kernel(count=3))
    labelled = script.labelled(tmp_path)
    if warmup_range:
        assert labelled.measured_passes == {"forward": 5}
        assert int((~labelled.structure.steps["measured"]).sum()) == 3
        assert labelled.structure.inference_passes == 0
        assert any("a forward-only benchmark warmed up by training" in note for note in labelled.notes)
    else:
        assert labelled.structure.inference_passes == 5
        assert not any("warmed up by training" in note for note in labelled.notes)


@pytest.mark.parametrize("warmup_steps", [1, 3])
def test_a_range_around_a_training_warmup_and_the_timed_forwards_is_no_step(tmp_path, warmup_steps):
    """``Run Benchmark`` around the whole run: ``Warm-up`` around ``warmup_steps`` training
    iterations (``Forward``, ``Backward``, a fused update), then ``Benchmark Forward Only`` around 2
    timed ``Forward`` calls that no backward takes. With one warm-up iteration, ``Run Benchmark``
    holds 3 forwards, 1 backward and 1 update: no gradient accumulation step (its forwards lack
    their backwards), so the timed forwards are the measured steps, as with three."""
    script = Script()

    def run():
        def warmup():
            for i in range(warmup_steps):
                script.range(f"Warm-up Step {i + 1}", lambda: (
                    script.range("Forward", lambda: script.kernel(count=3)),
                    script.range("Backward", lambda: script.kernel(tid=AUTOGRAD, count=4)),
                    script.kernel(name=OPTIMIZER_KERNEL, count=2)))
        script.range("Warm-up", warmup)
        script.range("Benchmark Forward Only", lambda: [script.range("Forward", lambda: script.kernel(count=3))
                                                        for _ in range(2)])
    script.range("Run Benchmark", run)
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 2}
    assert int((~labelled.structure.steps["measured"]).sum()) == warmup_steps
    assert "Run Benchmark" not in set(labelled.structure.steps["range_name"])


def test_a_region_named_after_a_benchmark_of_two_phases_is_no_phase(tmp_path):
    """``Benchmark Forward+Backward`` around 5 iterations of ``Forward`` and ``Backward`` (no step
    range), after ``Warm-up`` around 3 ``Warm-up Step <i>``: a timing word before ``forward``
    and a second phase after it name two phases, so the region is no backward; 5 measured steps."""
    script = Script()

    def iteration():
        script.range("Forward", lambda: script.kernel(count=3))
        script.range("Backward", lambda: script.kernel(tid=AUTOGRAD, count=4))
    script.range("Warm-up", lambda: [script.range(f"Warm-up Step {i + 1}", iteration) for i in range(3)])
    script.range("Benchmark Forward+Backward", lambda: [iteration() for _ in range(5)])
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 5, "backward": 5}
    assert int((~labelled.structure.steps["measured"]).sum()) == 3
    assert labelled.structure.phase_names["backward"] == ["Backward"]


def test_phase_ranges_only_in_the_warmup_leave_the_measured_ranges_iterations_to_the_kernels(tmp_path):
    """A script that annotates only its warm-up iterations (``Forward Pass`` and ``Backward Pass``
    inside ``Warmup Phase``) and times the others inside ``Timing Phase`` with no range: the warm-up
    ones are warm-up, the timed ones the measured steps, found from the kernels."""
    script = Script()
    script.range("Warmup Phase", lambda: [script.iteration("Forward Pass", "Backward Pass", None) for _ in range(3)])

    def unranged():
        script.kernel(count=3)
        script.kernel(tid=AUTOGRAD, count=4)
        script.kernel(name=OPTIMIZER_KERNEL, count=2)

    script.range("Timing Phase", lambda: [unranged() for _ in range(4)])
    labelled = script.labelled(tmp_path)
    steps = labelled.structure.steps
    assert (len(steps), int(steps["measured"].sum())) == (7, 4)
    assert labelled.structure.warmup_rule == "inside `Warmup Phase`"
    assert labelled.measured_passes == {"forward": 4, "backward": 4, "optimizer_step": 4}
    assert len(labelled.ops[labelled.ops["measured"]]) == 4 * (3 + 4 + 2)
    assert any(note.startswith("the phase ranges lie outside `Timing Phase`") for note in labelled.notes)


def test_pytorch_labels_only(tmp_path):
    script = Script()

    def model():
        for _ in range(2):
            script.range("torch.nn.modules.Module.__call__", lambda: script.kernel(count=2))

    def optimizer():
        script.range("torch.optim.Adam.step", lambda: script.kernel(name=OPTIMIZER_KERNEL, count=2))

    for _ in range(5):
        script.range("torch.nn.modules.Module.__call__", model)
        script.range("torch.autograd.backward", lambda: script.kernel(tid=AUTOGRAD, count=4))
        script.range("Optimizer.step#AdamW.step", lambda: script.range("torch.optim.AdamW.step", optimizer))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert labelled.structure.source == "pytorch"
    assert labelled.measured_passes == {"forward": 4, "backward": 4, "optimizer_step": 4}
    optimizer_kernels = labelled.ops[(labelled.ops["phase"] == "optimizer_step") & labelled.ops["measured"]]
    assert len(optimizer_kernels) == 4 * 2  # the nested optimizer ranges count their kernels once


@pytest.mark.parametrize("optimizer", ["Optimization", "weights_update", "update_weights", "apply_gradients",
                                       "sgd_step", "AdamW.step", "update_step"])
def test_optimizer_steps_by_other_names(tmp_path, optimizer):
    """Names users give the update: the optimization, a weight update, applying the gradients."""
    script = Script()
    for i in range(3):
        script.range(f"step_{i}", lambda: script.iteration(optimizer=optimizer))
    assert script.labelled(tmp_path).measured_passes.get("optimizer_step") == 3


@pytest.mark.parametrize("backward", ["grad", "compute_gradients", "grads"])
def test_a_backward_named_for_the_gradients(tmp_path, backward):
    """``grad`` (``compute_gradients``) is the backward pass, and ``step`` after it the optimizer."""
    script = Script()
    for i in range(3):
        script.range(f"iter_{i}", lambda: script.iteration(backward=backward, optimizer="step"))
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 3, "backward": 3, "optimizer_step": 3}
    assert labelled.structure.phase_names["backward"] == [backward]


def test_an_optimizer_step_in_no_range_after_ranged_passes_comes_from_its_fused_kernels(tmp_path):
    """Users who annotate only the passes: the forward and backward ranged, the fused optimizer's
    kernels after them in no range; the optimizer step is found from those kernels."""
    script = Script()
    for i in range(4):
        script.range(f"step_{i}", lambda: [script.range("forward", lambda: script.kernel(count=3)),
                                          script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4)),
                                          script.kernel(name=OPTIMIZER_KERNEL, count=2)])
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 4, "backward": 4, "optimizer_step": 4}
    assert labelled.structure.phase_names["optimizer_step"] == ["(optimizer_step, from kernels)"]


@pytest.mark.parametrize("ranged", [True, False])
def test_an_optimizer_step_after_the_step_range_is_its_steps(tmp_path, ranged):
    """``train_step`` around the forward and backward only, the optimizer step after it (ranged
    ``optimizer``, or its fused kernels in no range): each step runs on to the update's end, so the
    updates are measured with their steps, and a note says so."""
    script = Script()
    for i in range(4):
        script.range(f"train_step_{i}", lambda: [script.range("forward", lambda: script.kernel(count=3)),
                                                script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4))])
        update = lambda: script.kernel(name=OPTIMIZER_KERNEL, count=2)  # noqa: E731
        script.range("optimizer", update) if ranged else update()
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 4, "backward": 4, "optimizer_step": 4}
    assert labelled.ops["measured"].all()
    assert any("the step ranges leave out" in note for note in labelled.notes)


def test_ranges_around_the_warmup_iterations_alone_are_no_steps_that_the_measured_passes_follow(tmp_path):
    """A benchmark under PyTorch's labels: ``full_steps`` around each of 3 warm-up iterations
    (labels alone inside), the 5 measured ones after them in ``measure``, each ``forward pass``,
    ``backward pass``, ``optimizer step``. The loss label makes ``full_steps`` hold a phase, but the
    measured passes all follow the last of them: they are no steps (before, that last one took
    the 5 iterations as one measured step). The steps come from the phases, the warm-up from
    ``warmup``."""
    script = Script()

    def labelled_iteration():
        script.range("torch.nn.modules.Module.__call__", lambda: script.kernel(count=3))
        script.range("torch.nn.functional.cross_entropy", lambda: script.kernel())
        script.range("torch.autograd.backward", lambda: script.kernel(tid=AUTOGRAD, count=4))
        script.range("torch.optim.Adam.step", lambda: script.kernel(name=OPTIMIZER_KERNEL, count=2))

    script.range("warmup", lambda: [script.range("full_steps", labelled_iteration) for _ in range(3)])
    script.range("measure", lambda: [script.iteration("forward pass", "backward pass", "optimizer step")
                                     for _ in range(5)])
    labelled = script.labelled(tmp_path)
    steps = labelled.structure.steps
    assert not labelled.structure.step_ranges
    assert len(measured_steps(labelled)) == 5 and (~steps["measured"]).sum() == 3
    assert labelled.measured_passes == {"forward": 5, "backward": 5, "optimizer_step": 5}
    assert any(note.startswith("`full_steps` ranges are no steps") for note in labelled.notes)


@pytest.mark.parametrize("forward, outer", [("forward", "bwd+opt"), ("Forward", "Backward")])
def test_an_update_with_no_range_after_the_backward_in_one_range_is_a_pass_of_its_own(tmp_path, forward, outer):
    """``step_<i>`` around a forward and a range around the backward and the optimizer step, the
    update's fused kernels launched from the main thread after the backward's. ``bwd+opt`` names two
    phases: it is part of a step, not one, and the phases it holds come from the kernels.
    ``Backward`` around ``loss.backward()`` and ``optimizer.step()`` is the backward, which ends
    where the update found from its kernels starts (before, the backward's figures held the
    update's kernels, though the same run under PyTorch's labels split them)."""
    script = Script()
    for i in range(4):
        script.range(f"step_{i}", lambda: [script.range(forward, lambda: script.kernel(count=3)),
                                          script.range(outer, lambda: [script.kernel(tid=AUTOGRAD, count=4),
                                                                       script.kernel(name=OPTIMIZER_KERNEL, count=2)])])
    labelled = script.labelled(tmp_path)
    kernels = labelled.ops[labelled.ops["measured"]].groupby("phase", observed=True).size().to_dict()
    assert measured_steps(labelled) == [f"step_{i}" for i in range(4)]
    assert labelled.measured_passes == {"forward": 4, "backward": 4, "optimizer_step": 4}
    assert kernels == {"forward": 12, "backward": 16, "optimizer_step": 8}
    assert labelled.structure.phase_names["optimizer_step"] == ["(optimizer_step, from kernels)"]


def test_names_in_other_scripts(tmp_path):
    """Chinese names (``预热 <i>`` warm-up, ``步骤 <i>`` steps holding ``前向传播``, ``损失计算``,
    ``反向传播``, ``优化器``): before, every one of them normalized to nothing, one family, and an
    optimizer range was taken for the steps."""
    script = Script()
    for i in range(5):
        script.range(f"预热 {i}" if i < 2 else f"步骤 {i}",
                     lambda: script.iteration("前向传播", "反向传播", "优化器", loss="损失计算"))
    labelled = script.labelled(tmp_path)
    assert measured_steps(labelled) == [f"步骤 {i}" for i in range(2, 5)]
    assert labelled.measured_passes == {"forward": 3, "loss": 3, "backward": 3, "optimizer_step": 3}
    assert labelled.structure.phase_names["backward"] == ["反向传播"]


def _optimizer_in_backward(s):
    s.range("forward", lambda: s.kernel(count=3))
    s.range("backward", lambda: [s.kernel(tid=AUTOGRAD, count=4), s.range("optimizer", lambda: s.kernel(name=OPTIMIZER_KERNEL, count=2))])


def _backward_in_loss(s):
    s.range("forward", lambda: s.kernel(count=3))
    s.range("loss", lambda: [s.kernel(count=1), s.range("backward", lambda: s.kernel(tid=AUTOGRAD, count=4))])
    s.range("optimizer", lambda: s.kernel(name=OPTIMIZER_KERNEL, count=2))


def _backward_in_forward(s):
    s.range("forward", lambda: [s.kernel(count=3), s.range("backward", lambda: s.kernel(tid=AUTOGRAD, count=4))])
    s.range("optimizer", lambda: s.kernel(name=OPTIMIZER_KERNEL, count=2))


@pytest.mark.parametrize("iteration", [_optimizer_in_backward, _backward_in_loss, _backward_in_forward])
def test_a_later_phase_inside_an_earlier_ones_range_is_a_pass_of_its_own(tmp_path, iteration):
    """``optimizer`` inside ``backward``, ``backward`` inside ``loss`` (``loss.backward()`` in the
    loss's range) or inside ``forward``: the inner range is a pass of its own and the outer one
    ends where it starts (a loss inside the forward stays the forward's, as before)."""
    script = Script()
    for i in range(4):
        script.range(f"step_{i}", lambda: iteration(script))
    labelled = script.labelled(tmp_path)
    kernels = labelled.ops[labelled.ops["measured"]].groupby("phase", observed=True).size().to_dict()
    assert labelled.measured_passes["backward"] == 4 and kernels["backward"] == 16
    assert labelled.measured_passes["optimizer_step"] == 4 and kernels["optimizer_step"] == 8
    assert kernels["forward"] == 12


def test_no_nvtx_at_all(tmp_path):
    script = Script()
    for _ in range(4):
        script.iteration(forward=None, backward=None, optimizer=None)
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert labelled.structure.source == "kernels"
    assert describe(labelled.structure.record()).startswith("structure from kernels alone (no NVTX range names a step or phase): ")
    assert labelled.measured_passes == {"forward": 3, "backward": 3, "optimizer_step": 3}
    backward = labelled.ops[(labelled.ops["phase"] == "backward") & labelled.ops["measured"]]
    assert len(backward) == 3 * 4


def test_flags_override_and_a_flag_matching_nothing_names_the_nearest(tmp_path):
    script = Script()
    for i in range(3):
        script.range(f"step_{i}", lambda: script.iteration(forward="fwd_pass", backward="bwd_pass", optimizer="opt_step"))
    labelled = script.labelled(tmp_path, RangeNames(phases=("fwd_pass", "bwd_pass", "optimiser"),
                                                    regions=("scores", "sofmax", "final")))
    assert labelled.measured_passes == {"forward": 3, "backward": 3}
    assert any("`optimiser`" in note and "`opt_step`" in note for note in labelled.notes)
    assert any(note.startswith("no range is named `sofmax`") for note in labelled.notes)


@pytest.mark.parametrize("names", [("a", "a"), ("",)])
def test_bad_phase_names_are_refused(names):
    with pytest.raises(ValueError):
        RangeNames(phases=names)


def test_many_ranges_of_a_phase_name_inside_the_steps_count_no_extra_pass(tmp_path):
    """20,000 short ranges named `forward` inside the measured steps (a trace that names an inner
    helper like its phase): nested ones belong to the real forward, the siblings after it are kept
    apart as inference passes, and every phase still counts one pass per step."""
    from tests import bad_inputs as make

    step = make.STEP_NS
    extra = [("forward", 2 * step + 50 * i, 2 * step + 50 * i + 5, make.PID, make.TID, None, PUSH_POP)
             for i in range(20_000)]
    path = make.runner_trace(tmp_path / "many.sqlite", steps=3, extra_ranges=extra)
    labelled = label_ops(load_trace(path, RangeFilter()))
    assert labelled.measured_passes == {"forward": 3, "loss": 3, "backward": 3, "optimizer_step": 3}
    assert labelled.structure.inference_passes > 0


def test_optimizer_dot_step_and_block_ranges(tmp_path):
    """`optimizer.step` is the optimizer; `block_<i>` ranges inside the forward are the blocks."""
    script = Script()

    def forward():
        for block in range(3):
            script.range(f"block_{block}", lambda: script.kernel(count=2))

    for i in range(3):
        script.range(f"step {i}", lambda: [script.range("forward_pass", forward),
                                           script.range("loss.backward", lambda: script.kernel(tid=AUTOGRAD, count=4)),
                                           script.range("optimizer.step", lambda: script.kernel(name=OPTIMIZER_KERNEL))])
    structure = script.labelled(tmp_path, RangeNames(warmup_steps=0)).structure
    assert structure.phase_names == {"forward": ["forward_pass"], "backward": ["loss.backward"],
                                     "optimizer_step": ["optimizer.step"]}
    assert structure.block_family == "block_<i>"
    assert sorted(structure.block_ranges.value_counts().to_dict().items()) == [(0, 3), (1, 3), (2, 3)]


@pytest.mark.parametrize("in_launch_order", [False, True])
def test_step_figures_match_the_attribution_rule_kernel_by_kernel(in_launch_order, monkeypatch):
    """Counting by the stretches between step bounds, or launch by launch a chunk at a time, gives
    what the rule gives kernel by kernel: nested and touching windows, launches on a bound or
    missing (-1), several processes, ops out of launch order or in it, memcpys left out, and the
    communication kernels' time out of the work."""
    from analysis.core.structure import _step_figures
    rng = np.random.default_rng(7)
    windows = pd.DataFrame({"pid": [1, 1, 1, 1, 2, 2, 2], "start_ns": [0, 100, 100, 40, 50, 120, -10],
                            "end_ns": [100, 200, 150, 60, 120, 300, 30]})
    count = 5_000
    ops = pd.DataFrame({"pid": rng.choice([1, 2, 3], count), "launch_start_ns": rng.integers(-1, 320, count),
                        "dur_ns": rng.integers(1, 1_000, count),
                        "op_kind": rng.choice(["kernel", "memcpy"], count, p=[0.9, 0.1]),
                        "demangled_name": pd.Categorical(rng.choice(["sgemm", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"],
                                                                    count, p=[0.8, 0.2]))})
    ops.loc[::50, "launch_start_ns"] = -1
    if in_launch_order:
        ops = ops.sort_values(["pid", "launch_start_ns"], kind="stable", ignore_index=True)
    monkeypatch.setattr(attribution, "CHUNK_OPS", 700)  # launches out of order are read a chunk at a time
    figures = _step_figures(windows, ops)
    kernels = ops[ops["op_kind"] == "kernel"]
    holder = ops_in_windows(kernels, windows)
    held = holder >= 0
    assert figures["kernels"].tolist() == np.bincount(holder[held], minlength=len(windows)).tolist()
    assert figures["kernel_ns"].tolist() == np.bincount(
        holder[held], weights=kernels["dur_ns"].to_numpy()[held], minlength=len(windows)).tolist()
    # work leaves out the communication kernels' time
    work = held & (kernels["demangled_name"] == "sgemm").to_numpy()
    assert figures["work_ns"].tolist() == np.bincount(
        holder[work], weights=kernels["dur_ns"].to_numpy()[work], minlength=len(windows)).tolist()


def test_rows_starting_inside_each_window():
    """Rows of the window's process starting in ``[start, end)``, in their own order."""
    from analysis.core.structure import _starting_inside
    rows = pd.DataFrame({"pid": [1, 2, 1, 1, 1], "start_ns": [30, 10, 10, 20, 50]})
    windows = pd.DataFrame({"pid": [1, 2, 1, 3], "start_ns": [10, 0, 30, 0], "end_ns": [30, 100, 30, 100]})
    assert [list(found) for found in _starting_inside(rows, windows)] == [[2, 3], [1], [], []]


def whole_run(script, name, set_up_kernels=0, warmup_pass=False):
    """One ``name`` range around a whole run: ``set_up_kernels`` kernels of set-up (a model built,
    parameters broadcast), optionally an unranged warm-up pass, then one ranged training pass."""
    def body():
        script.kernel(count=set_up_kernels)
        if warmup_pass:
            script.kernel(count=3)
            script.kernel(tid=AUTOGRAD, count=4)
        script.range("forward pass", lambda: script.kernel(count=3))
        script.range("backward pass", lambda: script.kernel(tid=AUTOGRAD, count=4))
    script.range(name, body)


def test_a_range_around_the_whole_run_with_an_unranged_warmup_pass_is_no_step(tmp_path):
    """The warm-up pass has no ranges but its backward still launches from the autograd thread:
    the range around both passes is the run, the step is made from the ranged pass alone, and the
    warm-up pass before it, found from the kernels, is a warm-up step."""
    script = Script()
    whole_run(script, "train_step", warmup_pass=True)  # a step's name does not save it: it holds two passes
    labelled = script.labelled(tmp_path)
    steps = labelled.structure.steps
    assert list(steps["range_name"]) == ["(iteration with no step range)", "(iteration)"]
    assert list(steps["measured"]) == [False, True]
    assert any("`train_step` is no step" in note and "warm-up pass" in note for note in labelled.notes)
    measured = labelled.ops[labelled.ops["measured"]]
    assert len(measured) == 3 + 4 and set(measured["phase"]) == {"forward", "backward"}


def test_a_range_around_set_up_and_one_pass_is_no_step_unless_named_a_step(tmp_path):
    """A lone range whose phases fill under half of it holds the set-up too: the run, unless its
    name says step."""
    script = Script()
    whole_run(script, "distributed_training", set_up_kernels=20)
    labelled = script.labelled(tmp_path)
    assert list(labelled.structure.steps["range_name"]) == ["(iteration)"]
    assert any("`distributed_training` is no step: one per process, its phases fill" in n for n in labelled.notes)
    assert len(labelled.ops[labelled.ops["measured"]]) == 3 + 4

    named = Script()
    whole_run(named, "train_step", set_up_kernels=20)
    (tmp_path / "named").mkdir()
    labelled = named.labelled(tmp_path / "named")
    assert list(labelled.structure.steps["range_name"]) == ["train_step"]
    assert len(labelled.ops[labelled.ops["measured"]]) == 20 + 3 + 4


def test_a_lone_step_filled_by_its_phases_stays_a_step(tmp_path):
    script = Script()
    script.range("profile", lambda: script.iteration(forward="forward pass", backward="backward pass"))
    labelled = script.labelled(tmp_path)
    assert list(labelled.structure.steps["range_name"]) == ["profile"]
    assert not any("is no step" in note for note in labelled.notes)


@pytest.mark.parametrize(("name", "phase"), [
    ("comm + optimizer", "optimizer_step"), ("grad sync and update", "optimizer_step"),
    ("train/all_reduce & optimizer step", "optimizer_step"), ("data, loss", "loss"),
    ("forward and backward", None), ("zero_grad + step", None), ("land", None)])
def test_a_name_of_joined_parts_is_the_one_phase_they_name(tmp_path, name, phase):
    script = Script()
    for i in range(3):
        script.range(f"step_{i}", lambda: script.iteration(optimizer=name))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    names = labelled.structure.phase_names
    assert (names.get(phase) == [name]) if phase else all(name not in found for found in names.values())


def iteration_with_embed_range(script, sync_range=None):
    """A training iteration with no phase ranges, a non-fused optimizer (plain kernels on the main
    thread) and, optionally, a range around the gradient sync between the backward and the optimizer."""
    script.range("embed", lambda: script.kernel(count=3))
    script.kernel(tid=AUTOGRAD, count=4)
    script.range(sync_range, lambda: script.kernel(count=2))
    script.kernel(count=5)  # the optimizer, parameter by parameter


@pytest.mark.parametrize("model_range, forward_kernels", [
    ("embed", 2 + 2), ("attention", 1 + 2 + 2), ("attention/Computing matrix multiplication", 1 + 2 + 2)])
def test_a_forward_from_the_kernels_starts_at_the_models_first_range_unless_it_is_attention(
        tmp_path, model_range, forward_kernels):
    """Iterations with no phase range: a non-fused optimizer's launches before each forward are
    not the forward's where a range marks the model's start (``embed``); an attention range, or
    one inside it, starts inside the model, after the embedding's launch, which stays the forward's."""
    script = Script()
    outer, _, inner = model_range.partition("/")

    def part():
        script.range(outer, lambda: script.range(inner, lambda: script.kernel(count=2)) if inner else script.kernel(count=2))

    for _ in range(4):
        script.kernel()  # the embedding, or the optimizer's last launch where `embed` opens the model
        part()
        part() if outer == "attention" else script.kernel(count=2)
        script.kernel(tid=AUTOGRAD, count=4)
    labelled = script.labelled(tmp_path)
    forward = labelled.ops[(labelled.ops["phase"] == "forward") & labelled.ops["measured"]]
    assert forward.groupby("step").size().unique().tolist() == [forward_kernels]


def test_a_range_only_the_later_iterations_hold_tells_their_warmup(tmp_path):
    """The script turned a range on after its warm-up: the iterations before it first appears are
    warm-up. A short range that a phase found from the kernels merely starts in is no step."""
    script = Script()
    for i in range(6):
        iteration_with_embed_range(script, sync_range="grad_all_reduce" if i >= 2 else None)
    labelled = script.labelled(tmp_path)
    structure = labelled.structure
    assert list(structure.steps["range_name"].unique()) == ["(iteration)"] and len(structure.steps) == 6
    assert list(structure.steps["measured"]) == [False, False, True, True, True, True]
    assert structure.warmup_rule == "the steps before `grad_all_reduce` first appears (it is in every later step)"
    assert "grad_all_reduce" not in structure.unused
    assert describe(structure.record()).startswith("structure from the kernels (no range marks one pass of a phase): ")
    # The forward found from the kernels starts at the model's own range, not at the previous
    # iteration's gradient sync and optimizer launches.
    forward = labelled.ops[labelled.ops["measured"] & (labelled.ops["phase"] == "forward")]
    assert len(forward) == 4 * 3


def test_a_range_in_some_later_iterations_only_tells_nothing(tmp_path):
    script = Script()
    for i in range(6):
        iteration_with_embed_range(script, sync_range="grad_all_reduce" if i in (2, 4, 5) else None)
    structure = script.labelled(tmp_path).structure
    assert not structure.warmup_rule.startswith("the steps before")


def test_names_that_differ_only_in_a_bracketed_last_part_are_one_family():
    names = ["all_reduce grad [layers.0.attn.q_proj.weight]", "all_reduce grad [layers.1.ffn.w1.weight]",
             "attention sublayer", "step 3", "step 4"]
    assert [family_label(n) for n in name_families(names)] == ["all_reduce grad [<…>]", "attention sublayer", "step <i>"]


def _inference_loop(tmp_path, calls: int, name="generate_{}", inner=None):
    """``calls`` ranges of forward-only work (no phase named, no backward), the first one slower
    to start (a departing warm-up call); ``inner`` names a range around each call's kernels."""
    script = Script()
    for call in range(calls):
        body = (lambda: script.kernel(count=5)) if inner is None else \
            (lambda: script.range(inner.format(call), lambda: script.kernel(count=5)))
        script.range(name.format(call), body)
        if call == 0:
            script.now += 5_000  # the first call's set-up after its kernels
            script.ranges[-1] = (*script.ranges[-1][:2], script.now, *script.ranges[-1][3:])
    return script.labelled(tmp_path)


def test_an_inference_loop_has_its_indexed_ranges_as_steps(tmp_path):
    labelled = _inference_loop(tmp_path, 4)
    assert measured_steps(labelled) == ["generate_1", "generate_2", "generate_3"]
    assert labelled.measured_passes == {} and labelled.structure.step_ranges
    assert describe(labelled.structure.record()).startswith(
        "structure from NVTX ranges: steps `generate_<i>` ×4: 1 warm-up")


def test_ranges_around_one_call_each_leave_the_calls_the_steps(tmp_path):
    labelled = _inference_loop(tmp_path, 4, inner="decode_{}")
    assert list(labelled.structure.steps["range_name"]) == [f"generate_{i}" for i in range(4)]


@pytest.mark.parametrize("calls, name", [(2, "generate_{}"), (4, "layer_{}"), (4, "request")])
def test_no_steps_without_phases_from_too_few_blocks_or_unindexed_ranges(tmp_path, calls, name):
    """Two calls are too few to tell warm-up; ``layer_<i>`` are blocks; ``request`` repeated is
    neither indexed nor named like a step."""
    labelled = _inference_loop(tmp_path, calls, name=name)
    assert not labelled.has_steps and not labelled.structure.step_ranges


def test_a_slash_between_phase_names_joins_them_and_a_range_around_both_is_a_part(tmp_path):
    """``Calculate Loss/Sync`` is the loss (a ``/`` after a phase's name is no namespace);
    ``Forward/Backward Pass`` names two phases, so none, and it is a part of ``Epoch <i>``, which
    holds the optimizer step after it: the epochs are the steps, the kernels give forward and backward."""
    script = Script()
    for i in range(4):
        script.range(f"Batch {i}", lambda: script.iteration(forward="Forward", loss="Calculate Loss/Sync",
                                                            backward="Backward", optimizer="Optimizer Step"))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert labelled.structure.phase_names["loss"] == ["Calculate Loss/Sync"]

    script = Script()
    for i in range(4):
        def epoch():
            script.range("Forward/Backward Pass", lambda: (script.kernel(count=3), script.kernel(tid=AUTOGRAD, count=4)))
            script.range("Optimizer Step", lambda: script.kernel(name=OPTIMIZER_KERNEL, count=2))
        script.range(f"Epoch {i}", epoch)
    (tmp_path / "epochs").mkdir()
    labelled = script.labelled(tmp_path / "epochs", RangeNames(warmup_steps=1))
    assert measured_steps(labelled) == ["Epoch 1", "Epoch 2", "Epoch 3"]
    assert labelled.measured_passes == {"forward": 3, "backward": 3, "optimizer_step": 3}
    assert "Forward/Backward Pass" not in sum(labelled.structure.phase_names.values(), [])


def test_forward_ranges_alone_make_the_steps_of_an_inference_run(tmp_path):
    script = Script()
    for _ in range(4):
        script.range("forward", lambda: script.kernel(count=3))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert labelled.structure.step_rule == "made from the phases: each forward is a step (no backward: an inference run)"
    assert len(measured_steps(labelled)) == 3 and labelled.measured_passes == {"forward": 3}


@pytest.mark.parametrize("last", ["cut", "later work", "alike"])
def test_a_last_step_the_capture_cut_off_is_left_out(tmp_path, last):
    """Five alike ``train_step`` ranges, the last holding only its forward (nsys's --duration
    stopped the records inside it): left out, neither warm-up nor measured, and a note says why.
    Work launched after it (a step with fewer kernels that was not cut), or a last step like the
    others, stays measured."""
    script = Script()
    for _ in range(4):
        script.range("train_step", script.iteration)
    if last == "alike":
        script.range("train_step", script.iteration)
    else:
        script.range("train_step", lambda: script.range("forward", lambda: script.kernel(count=3)))
    if last == "later work":
        script.kernel()
    labelled = script.labelled(tmp_path)
    steps = labelled.structure.steps.sort_values("start_ns")
    cut = last == "cut"
    assert list(steps["measured"]) == [True] * 4 + [not cut]
    assert list(steps["cut"]) == [False] * 4 + [cut]
    record = labelled.structure.record()
    assert (record["warmup_steps"], record["measured_steps"], record["cut_steps"]) == (0, 5 - cut, int(cut))
    assert [row["cut"] for row in record["step_table"]] == [False] * 4 + [cut]
    assert bool([n for n in labelled.notes if n.startswith("the last step is left out where the capture's end cut it off")
                 and "`train_step #4` (pid 100) holds 3 kernels against 9 in each other step" in n]) == cut
    assert ("1 cut off by the capture's end" in describe(record)) == cut
    assert labelled.measured_passes["backward"] == 4 + (last == "alike")


def test_without_steps_only_the_programs_profiler_window_is_measured(tmp_path):
    """Backward ranges alone (no forward, so no steps), ``cudaProfilerStart`` before the third
    and ``cudaProfilerStop`` after the fourth: only the two inside are measured, as nsys's
    --capture-range=cudaProfilerApi would have recorded, and the note says so."""
    script = Script()
    calls = []
    for i in range(5):
        if i == 2:
            calls.append(("cudaProfilerStart_v4000", script.now))
        script.range("Backward", lambda: script.kernel(tid=AUTOGRAD, count=4))
        if i == 3:
            calls.append(("cudaProfilerStop_v4000", script.now))
    labelled = label_ops(load_trace(export_with_host_calls(tmp_path, script, calls), RangeFilter()))
    assert not labelled.has_steps
    assert labelled.measured_passes == {"backward": 2}
    assert int(labelled.ops["measured"].sum()) == 8
    assert [n for n in labelled.notes if n.startswith("no steps: only the program's cudaProfilerStart–cudaProfilerStop "
                                                      "window (what --capture-range=cudaProfilerApi records) is analyzed")]


def test_a_numbering_that_starts_over_after_a_named_warmup_is_one_run(tmp_path):
    """``step_0`` … ``step_2`` inside ``warmup_phase``, then ``step_0`` … ``step_4`` inside
    ``measurement_phase``: the numbering starts over after the warm-up, which the warm-up range
    tells; no runs are named."""
    script = Script()
    script.range("warmup_phase", lambda: [script.range(f"step_{i}", script.iteration) for i in range(3)])
    script.range("measurement_phase", lambda: [script.range(f"step_{i}", script.iteration) for i in range(5)])
    labelled = script.labelled(tmp_path)
    assert list(labelled.structure.steps.sort_values("start_ns")["measured"]) == [False] * 3 + [True] * 5
    assert labelled.structure.warmup_rule == "inside `warmup_phase`"


def test_step_names_that_say_warmup_after_the_step_word(tmp_path):
    """``step_warmup`` ×2 then ``step_measured`` ×3: one run, its warm-up named so (not two runs
    of different names, which would leave the whole capture analyzed)."""
    script = Script()
    for name in ["step_warmup"] * 2 + ["step_measured"] * 3:
        script.range(name, script.iteration)
    labelled = script.labelled(tmp_path)
    assert list(labelled.structure.steps.sort_values("start_ns")["measured"]) == [False] * 2 + [True] * 3
    assert labelled.structure.warmup_rule == "named `step_warmup`"


@pytest.mark.parametrize("around", ["last steps", "every step"])
def test_a_range_around_each_processes_last_steps_makes_the_steps_before_warmup(tmp_path, around):
    """Six alike ``train_step`` ranges, the last four inside one ``naive_ddp`` range (a benchmark
    that wraps its measured iterations in a range named after what it measures): the two before
    are warm-up. Ranges of one family around every step (``epoch_0``, ``epoch_1``) say nothing."""
    script = Script()
    if around == "last steps":
        for _ in range(2):
            script.range("train_step", script.iteration)
        script.range("naive_ddp", lambda: [script.range("train_step", script.iteration) for _ in range(4)])
    else:
        for epoch in range(2):
            script.range(f"epoch_{epoch}", lambda: [script.range("train_step", script.iteration) for _ in range(3)])
    labelled = script.labelled(tmp_path)
    measured = list(labelled.structure.steps.sort_values("start_ns")["measured"])
    if around == "last steps":
        assert measured == [False] * 2 + [True] * 4
        assert labelled.structure.warmup_rule == "outside `naive_ddp`, the range around each process's last steps"
    else:
        assert measured == [True] * 6


def test_a_process_with_no_ranges_beside_a_ranged_one_gets_its_steps_from_its_kernels(tmp_path):
    """Two processes of one job, the ranges opened on the first alone (``if rank == 0``): the
    second's steps and phases come from its kernels (a forward from the main thread, a backward
    from the autograd thread, the fused optimizer's run), and a note says so."""
    ranked, bare = Script(), Script(pid=200)
    for _ in range(4):
        ranked.range("train_step", ranked.iteration)
        bare.kernel(count=3)
        bare.kernel(tid=AUTOGRAD, count=4)
        bare.kernel(name=OPTIMIZER_KERNEL, count=2)
        bare.now += 1000
    path = build_export(tmp_path / "trace.sqlite", kernels=ranked.kernels + bare.kernels, ranges=ranked.ranges,
                        strings=KERNELS)
    labelled = label_ops(load_trace(path, RangeFilter()))
    steps = labelled.structure.steps
    assert steps.groupby("pid").size().to_dict() == {100: 4, 200: 4}
    assert labelled.measured_passes == {"forward": 8, "backward": 8, "optimizer_step": 8}
    assert [n for n in labelled.notes if n.startswith("process 200 holds none of the step ranges (they are in process "
                                                      "100 alone")]


def test_a_step_family_around_another_kind_marked_inside_some_of_its_ranges_is_the_steps(tmp_path):
    """``measured_step`` ranges, the first four around ``inference`` (a forward) and the last four
    around ``training`` (a whole step), as a script that benchmarks inference and then training
    does: ``measured_step`` holds every step (``training`` marks a kind of them, not other steps)
    and the training ones are measured; before, the two names were two runs of different names and
    the whole capture was analyzed."""
    script = Script()
    for _ in range(4):
        script.range("measured_step", lambda: script.range("inference", lambda: script.range(
            "forward", lambda: script.kernel(count=3))))
    for _ in range(4):
        script.range("measured_step", lambda: script.range("training", script.iteration))
    labelled = script.labelled(tmp_path)
    steps = labelled.structure.steps.sort_values("start_ns")
    assert set(steps["range_name"]) == {"measured_step"}
    assert list(steps["measured"]) == [False] * 4 + [True] * 4


@pytest.mark.parametrize("factor", [2, 50])
def test_measured_steps_of_widely_different_kernel_time_are_noted(tmp_path, factor):
    """Six ``train_step`` ranges whose kernels alternate between two lengths (a benchmark over
    sizes in one loop): all measured, and a note says they may be different work when the
    longest takes 10× the shortest or more; batches of varying length (2×) get none."""
    script = Script()

    def step(duration):
        script.range("forward", lambda: script.kernel(count=3, duration=duration))
        script.range("backward", lambda: script.kernel(tid=AUTOGRAD, count=4, duration=duration))
        script.range("optimizer_step", lambda: script.kernel(name=OPTIMIZER_KERNEL, count=2, duration=duration))

    for i in range(6):
        script.range("train_step", lambda i=i: step(10 * (factor if i % 2 else 1)))
    labelled = script.labelled(tmp_path)
    assert labelled.structure.steps["measured"].all()
    noted = [n for n in labelled.notes if n.startswith("the measured steps of process 100 differ widely")]
    assert bool(noted) == (factor >= 10)


@pytest.mark.parametrize("varying", ["compute", "communication"])
def test_steps_noted_as_unlike_by_their_work_not_by_waits_in_communication_kernels(tmp_path, varying):
    """Six ``train_step`` ranges with an all-reduce in each backward: where the compute kernels
    alternate between two lengths 50× apart the note is made and says communication is left out;
    where only the all-reduce does (one rank waiting longer for the others in some steps, the
    same work in every step, as on an FSDP rank) there is no note."""
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    script = Script()

    def step(long):
        compute, wait = (500 if long and varying == "compute" else 10), (5000 if long and varying == "communication" else 10)
        script.range("forward", lambda: script.kernel(count=3, duration=compute))
        script.range("backward", lambda: (script.kernel(tid=AUTOGRAD, count=4, duration=compute),
                                          script.kernel(tid=AUTOGRAD, name=nccl, duration=wait)))
        script.range("optimizer_step", lambda: script.kernel(name=OPTIMIZER_KERNEL, count=2, duration=compute))

    for i in range(6):
        script.range("train_step", lambda i=i: step(i % 2 == 1))
    labelled = script.labelled(tmp_path)
    assert labelled.structure.steps["measured"].all()
    noted = [n for n in labelled.notes if n.startswith("the measured steps of process 100 differ widely")]
    assert len(noted) == (varying == "compute")
    assert all("ms of kernels (communication kernels left out) (50×)" in note for note in noted)


def test_steps_none_of_which_is_measured_leave_the_whole_capture_analyzed(tmp_path):
    """Three processes whose last step the capture's end cut off and whose others are warm-up
    (``warmup_0``, ``warmup_1``, ``iter 2``, each pass in ranges of unknown names): no step is
    measured. The summary stopped with a ZeroDivisionError (kernels per measured step); the whole
    capture is analyzed instead, and the rule says why."""
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    kernels, ranges = [], []
    for rank, offset in enumerate((0, 300, 600)):
        script = Script(pid=PID + 10 * rank)
        script.now += offset
        for i, name in enumerate(("warmup_0", "warmup_1", "iter 2")):
            def iteration(extra=10 if i == 0 else 0):
                script.range("mystery_a", lambda: script.kernel(count=3 + extra))
                script.range("mystery_b", lambda: (script.kernel(tid=AUTOGRAD, count=4),
                                                   script.kernel(tid=AUTOGRAD, name=nccl, duration=50)))
                script.range("optimizer", lambda: script.kernel(name=OPTIMIZER_KERNEL, count=2))
            script.range(name, iteration)
        kernels += [kernel + (rank, 7) for kernel in script.kernels]
        ranges += script.ranges
    summary = analyze_trace(build_export(tmp_path / "trace.sqlite", kernels=kernels, ranges=ranges, strings=KERNELS + (nccl,)))
    assert not summary["has_steps"] and summary["overall"]["scope"] == "whole capture"
    assert "but none of the 9 is measured" in summary["structure"]["step_rule"]


@pytest.mark.parametrize("warmup_range", [True, False])
def test_a_warmup_range_before_the_steps_that_holds_none_makes_every_step_measured(tmp_path, warmup_range):
    """A `warm-up` range around iterations that open no phase range, then the measured ones with
    their phases, the first of which departs (its optimizer's first step makes its state): the
    script said where its warm-up ends, so all 4 are measured, and the range's 2 iterations (its
    backward runs) are the warm-up steps. Without that range, those 2 iterations are found from
    the kernels before the first step, and the departing rule leaves the first measured one out."""
    script = Script()
    def unranged_iterations():
        for _ in range(2):
            script.kernel(count=3)
            script.kernel(tid=AUTOGRAD, count=4)
    script.range("warm-up" if warmup_range else None, unranged_iterations)
    for i in range(4):
        script.iteration(extra_kernels=10 if i == 0 else 0)
    labelled = script.labelled(tmp_path)
    measured = 4 if warmup_range else 3
    assert labelled.measured_passes == {"forward": measured, "backward": measured, "optimizer_step": measured}
    assert (labelled.structure.warmup_rule == "inside `warm-up`") == warmup_range
    assert int((~labelled.structure.steps["measured"]).sum()) == (2 if warmup_range else 3)


def test_the_timeline_shows_the_first_measured_step_that_launched_anything(tmp_path):
    """The first measured step's ranges launched no kernel (a skipped batch): the summary stopped
    with a ValueError (the minimum of no ops' starts); the timeline shows the next step."""
    script = Script()
    script.range("warmup_0", lambda: script.iteration(extra_kernels=10))
    script.range("step_1", lambda: [script.range(name) for name in ("forward", "backward", "optimizer_step")])
    for i in (2, 3, 4):
        script.range(f"step_{i}", script.iteration)
    path = build_export(tmp_path / "trace.sqlite", kernels=script.kernels, ranges=script.ranges, strings=KERNELS)
    assert analyze_trace(path)["timeline"]["title"] == "step_2"


@pytest.mark.parametrize("backward", ["Backward (with async all-reduce)", "backward [fp32]"])
def test_a_bracketed_qualifier_after_a_phases_name_says_no_phase(tmp_path, backward):
    """``Forward``, ``Backward (with async all-reduce)``, ``Optimizer Step`` (a student's DDP): the
    qualified backward was no phase (its kernels came from the autograd thread's launches, and the
    range was listed unused); it is the backward."""
    script = Script()
    for i in range(4):
        script.range(f"Training Step {i}", lambda: script.iteration("Forward", backward, "Optimizer Step"))
    labelled = script.labelled(tmp_path, RangeNames(warmup_steps=1))
    assert labelled.structure.phase_names["backward"] == [backward]
    assert labelled.measured_passes == {"forward": 3, "backward": 3, "optimizer_step": 3}


def test_step_ranges_inside_a_warmup_range_are_warmup_beside_a_warmup_range_of_no_steps(tmp_path):
    """A script that warms up twice (a student's forward-only benchmark, then its training one):
    `warmup` around iterations with no phase ranges, then `warmup` around 2 `fwd_back` steps, then
    `benchmark` around 3. The iterations of the first are warm-up, and so are the steps inside the
    second, which were measured."""
    script = Script()
    def unranged():
        for _ in range(2):
            script.kernel(count=3)
            script.kernel(tid=AUTOGRAD, count=4)
    script.range("warmup", unranged)
    script.range("warmup", lambda: [script.range("fwd_back", script.iteration) for _ in range(2)])
    script.range("benchmark", lambda: [script.range("fwd_back", script.iteration) for _ in range(3)])
    labelled = script.labelled(tmp_path)
    assert labelled.measured_passes == {"forward": 3, "backward": 3, "optimizer_step": 3}
    assert labelled.structure.warmup_rule == "inside `warmup`"


def test_kernels_in_no_step_are_told_apart_from_those_of_an_unnamed_step(tmp_path):
    """A step range without a name labels its ops "" as no step does: the kernels in no step are
    then found by the search itself, not by their step's name."""
    script = Script()
    script.range("", script.iteration)
    script.kernel(count=2)
    labelled = script.labelled(tmp_path)
    assert list(labelled.structure.steps["name"]) == [""]
    assert labelled.unstepped_holders.index.tolist() == [9, 10]
    assert labelled.ops["measured"].tolist() == [True] * 9 + [False] * 2
