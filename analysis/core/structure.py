"""Find a run's structure in the trace itself: steps, warm-up, phases, attention parts, blocks.

People name NVTX ranges as they like, or add none. The analysis looks for *roles*, not names,
with three sources: the user's ranges, then PyTorch's labels for the phases those lack, then the
kernels when neither has any phase:

1. **The user's own ranges** (every range that is neither an op-level range such as
   ``aten::mm, seq = 3`` nor one of PyTorch's function labels): phases by families of names
   (``forward`` / ``fwd`` / ``model_eval`` ..., ``loss``, ``backward`` / ``bwd``, ``optimizer_step``
   / ``optimizer.step`` / ``opt`` / ``step`` ...; of a namespaced name, its last ``/`` part:
   ``train/forward`` is a forward); steps are the repeated ranges that hold phases,
   indexed or not (``step_3``, ``step 3``, ``measure_3``, ``iter3``, ``train_step`` ×N); a range
   around several steps is a container (``warmup`` around the warm-up steps). With gradient
   accumulation a step holds several forward and backward passes and one optimizer step; ranges
   of one pass each inside it that hold no optimizer step are its micro-batches, not steps. Two
   or more families with one range inside each step (phase ranges of names not known) are parts
   of the steps, not steps.
2. **PyTorch's labels** (``nsys --pytorch=functions-trace``): the forward is the outermost
   ``torch.nn.modules.Module.__call__`` holding most module calls, backward ``torch.autograd.backward``,
   the optimizer the outermost ``torch.optim.<Name>.step`` (the nested ``Adam.step`` and
   ``Optimizer.step#…`` ranges hold the same kernels and are counted once).
3. **Kernels alone** (no NVTX): the backward is each run of launches from a thread other than the
   process's main thread (PyTorch's autograd thread), the optimizer the run of
   ``multi_tensor_apply_kernel`` launches after it, the forward the main thread's launches before.
   When the ranges and labels have phases but no backward, the kernels give the phases they lack.

A phase range inside another phase's range is part of it, but for the forward, loss and backward
an optimizer step runs in a closure (``optimizer.step(closure)``, PyTorch Lightning): they are
passes, and the optimizer step is what follows them. A forward or backward range around a loop
of whole iterations (``forward`` around ``it0`` … ``it9``, which launch the same kernels and all of
the range's) names what the loop times, not a pass: in a forward range whose iterations launch
from the main thread alone each iteration is a forward pass; otherwise the phases come from what
the iterations hold. So is a forward range around a loop of calls with no range of their own, in
a process with no autograd thread, whose kernels repeat one call's sequence k >= 2 times: each
repeat is a forward pass (so are a warm-up range's). A forward that a backward takes (each backward taking the latest forward
not yet taken, so a pipeline's forwards ahead of their backwards are all taken) is a *training*
forward; another forward (an inference pass) is left out of the training phases and counted on
its own. Without step ranges, steps are made from the phases: each training
forward starts one, and in a process with optimizer steps a training forward with no optimizer
step since the previous one continues its step (gradient accumulation). Warm-up steps are those
named warm-up or in ranges named warm-up beside the steps; else the iterations whose phases ran
before the first step range; else those outside a ``measured…`` range; else those before a timed
loop (:func:`_timed_loop`: CUDA events recorded after them and after the last step alone, or a
wait for the GPU after each later step alone); else the leading steps
whose kernel count, kernel time or CPU span departs from the later steps'; and beside whichever
rule reads the step ranges, the iterations with no step or phase range before them, found by their
backward passes from the kernels. ``RangeNames`` given
by the user (the command line's flags) override each role.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from analysis.core.classify import is_communication
from analysis.core.codes import distinct, lookup, per_name, run_starts, run_sums, value_codes
from analysis.core.intervals import covered_ns, within_earlier
from analysis.core.range_names import RangeNames
from analysis.core.structure_text import (
    INDEXED,
    family_label,
    name_families,
    name_stem,
    normal_name,
    role_name,
    shown_families,
)
from analysis.load.nvtx import OP_LEVEL, RECORD_FUNCTION_SCOPE
from analysis.load.tables import GRAPH_EXECUTION, sorted_by
from cs336_profile import contract

PHASES = contract.PHASES
# Canonical attention parts: ops are labelled with these whatever the trace calls its ranges.
REGIONS = (contract.ATTENTION_SCORES_RANGE, contract.SOFTMAX_RANGE, contract.FINAL_MATMUL_RANGE)

# PyTorch's own labels (functions trace; ``Optimizer.step#AdamW.step`` from record_function).
TORCH_LABEL = re.compile(r"^torch\.|^Optimizer\.|^ProfilerStep#")
MODULE_CALL = re.compile(r"^torch\.nn\.modules\.(?:module\.)?Module\.(?:__call__|_call_impl|_wrapped_call_impl)$")
AUTOGRAD_BACKWARD = re.compile(r"^torch\.(?:autograd\.backward|Tensor\.backward|autograd\.grad)$")
OPTIMIZER_STEP = re.compile(r"^torch\.optim\.[\w.]+\.step$|^Optimizer\.step#")
TORCH_LOSS = re.compile(r"^torch\.nn\.functional\.(?:cross_entropy|nll_loss|mse_loss|binary_cross_entropy\w*)$")
TORCH_SOFTMAX = re.compile(r"^torch\.nn\.functional\.(?:softmax|log_softmax)$")
TORCH_SDPA = "torch.nn.functional.scaled_dot_product_attention"

# Families of names, matched on a name's normal form (lower case, runs of other characters as
# ``_``) less a trailing index.
# A name may say the phase of training it is (``train_forward``) or that it is timed
# (``benchmark_forward``, ``timed_backward``); never a bare ``train_step``, a step.
TRAINING = r"(train(ing)?_|bench(mark(ed)?)?_|timed_|timing_|measured?_|profiled?_)?((run|do|compute|perform|execute)_)?"
PHASE_FAMILIES = {
    # Chinese names too (前向传播, 损失计算, 反向传播, 优化器): many of the course's students write them
    "forward": re.compile(rf"{TRAINING}(model_)?(forward|fwd|fw)(_pass|_only|_step|_stage|_prop(agation)?|(_and)?_loss)?|model_eval|inference|eval"
                          r"|(前向|正向)(传播|计算|过程)?"),
    "loss": re.compile(rf"{TRAINING}(compute_|computing_|calc_|calculate_|calculating_|cross_|ce_)?loss(_?fn|_function|_compute|_computation|_calc|_calculation)?"
                       r"|cross_entropy|criterion|(计算)?损失(计算|函数)?"),
    "backward": re.compile(rf"{TRAINING}(model_|loss_)?(backward|bwd|bw|back)(_pass|_step|_stage|_prop(agation)?|_compute)?|back_?prop(agation)?"
                           r"|(compute_|computing_|calc_)?grad(s|ient|ients)?|反向(传播|计算|过程)?"),
    "optimizer_step": re.compile(rf"{TRAINING}(model_)?((optimizer|optimi[sz]e|optim|opt|optimi[sz]ation)(_step|_update|_pass)?|(adam_?w?|sgd|lion|muon)(_step|_update)?)"
                                 r"|((param(eter)?s?|weights?)_)?update(_step)?|update_(param(eter)?s|weights)|apply_grad(ient)?s|step"
                                 r"|优化(器)?(步骤|更新|步)?|参数更新"),
}
# A bracketed qualifier of a name: ``Backward (with async all-reduce)``, ``forward [bf16]`` (not ``step (3)``).
QUALIFIER = re.compile(r"\([^()]*[^\W\d_][^()]*\)|\[[^\[\]]*[^\W\d_][^\[\]]*\]")  # with a letter in it
# A clause that qualifies a name: ``Forward Pass with autocast``, ``backward using the scaler``,
# ``forward_for_backward`` (the forward whose backward comes next), ``forward stage of llm``:
# words apart by spaces or ``_``.
QUALIFYING_CLAUSE = re.compile(r"[\s_]+(?:with|using|under|via|for|of)[\s_].*$", re.IGNORECASE)
# What joins the parts of a name that says two things (``comm + optimizer``, ``sync and step``).
JOINED_PARTS = re.compile(r"\s*(?:\+|&|,|\band\b)\s*", re.IGNORECASE)
# ``step`` names the optimizer only inside a training step, after its backward.
AMBIGUOUS_OPTIMIZER = "step"
# The iteration's number a name starts with, before what the range is (``step_3_forward``,
# ``[iter 3] backward``, ``epoch0_step5_optimizer``, as normal names; not a bare number: in
# ``transformer_block_11_forward`` the number is the block's).
ITERATION_NUMBER = re.compile(r"\d+(?=\D*[^\W\d_])")  # a number with a letter after it
ITERATION_TAG = re.compile(r"^(?:(?:train(?:ing)?_|warm(?:_?up)?_)?(?:step|iter(?:ation)?|it|batch|epoch|ep|micro(?:_?(?:batch|step))?|mb|accum(?:ulation)?(?:_?step)?)_?\d+_)+(?=[^\W\d_])")
# The phases an optimizer step's closure runs inside it (``optimizer.step(closure)``).
CLOSURE_PHASES = ("forward", "loss", "backward")
# A name that says it is a step (``train_step``, ``iteration_3``, ``batch``).
STEP_FAMILY = re.compile(r"(train(ing)?_)?(step|iter(ation)?|batch)(_.*)?")
WARMUP_FAMILY = re.compile(r"(warm(_?up)?|burn_?in|dry_?run|untimed)(_.*)?|预热.*")
# A warm-up word before or after a phase's name (``forward pass warmup``, ``warmup_backward``).
_WARMUP_WORDS = r"(?:warm(?:ing)?_?up|burn_?in|dry_?run|untimed)"
WARMUP_WORD = re.compile(rf"^{_WARMUP_WORDS}_|_{_WARMUP_WORDS}$")
# A step's word before the part that says warm-up or measured (``step_warmup``, ``iter_measured``).
STEP_WORD = re.compile(r"(train(ing)?_)?(step|iter(ation)?|batch)_")
# A range around the measured steps: steps outside it are warm-up.
MEASURED_FAMILY = re.compile(r"(measure(ments?|[ds])?|timed|timing|benchmark(ed)?|profiled?)(_(steps?|iters?|iterations?|loop|region|runs?|phase))?")
# NVTX domains of libraries, not of the user's code: their ranges are never a role.
LIBRARY_DOMAINS = frozenset({"nccl", "cccl", "cub", "cublas", "cublaslt", "cudnn", "nvshmem", "tensorrt"})
# Ranges libraries push in the default domain (NCCL's API calls in some nsys versions).
LIBRARY_NAME = re.compile(r"^nccl[A-Z]")
REGION_FAMILIES = (  # first match wins: a name with "softmax" in it is the softmax
    # the attention probabilities (weights) are the softmax's output
    (contract.SOFTMAX_RANGE, re.compile(r".*softmax.*|sm|(.*_)?(attn|attention)_(probs?|probabilities|weights)(_.*)?")),
    # q·k, not the q, k, v projections (``Compute Q, K, V``)
    (contract.ATTENTION_SCORES_RANGE, re.compile(r".*(score|(^|_)q_?k(t|_t)?(_(?!v(_|$))|$)|query_key).*")),
    (contract.FINAL_MATMUL_RANGE, re.compile(r".*((final|value)_?(matmul|mm|bmm|einsum|gemm|product)"
                                             r"|(matmul|mm|bmm|einsum|product)_(with|by|and)_(the_)?(values?|v)(_|$)"
                                             r"|(^|_)(pv|p_v|av|attn_v|attention_v|sv|weighted_sum|out_matmul|output_matmul)(_|$)).*")),
)
# A name written as a matrix product (``Q @ K^T``, ``attn @ V``): its right operand says the part,
# whatever the words before (``softmax_attention_score_matrix @ V`` is the final matmul).
PRODUCT = re.compile(r"@\s*(?P<right>[A-Za-z]\w*)")
PRODUCT_PARTS = {"k": contract.ATTENTION_SCORES_RANGE, "key": contract.ATTENTION_SCORES_RANGE,
                 "keys": contract.ATTENTION_SCORES_RANGE, "v": contract.FINAL_MATMUL_RANGE,
                 "value": contract.FINAL_MATMUL_RANGE, "values": contract.FINAL_MATMUL_RANGE}
# A range named like a plain matmul, which part it is told by its place beside the softmax.
PLAIN_MATMUL = re.compile(r"(.*_)?(((attn|attention)_)?(matmul|mm|bmm|einsum|gemm|matrix_multipl(y|ication))(_?\d+)?"
                          r"|(attn|attention)_out(put)?(_comput(e|ation))?)")
BLOCK_FAMILY = re.compile(r"(transformer_)?(layer|block|decoder_layer|encoder_layer|h)")
OPTIMIZER_KERNEL = "multi_tensor_apply_kernel"

# Leading steps whose kernel time or CPU span exceeds the later steps' median by this factor are warm-up.
WARMUP_TIME_FACTOR = 1.5
# ... and lies further above that median than this many median absolute deviations of theirs.
WARMUP_SPREAD_MADS = 3
# The later steps a leading step is compared with are at least this many where there are more
# steps (one step is no steady state: with one left, any difference would make the one before
# it depart); of two steps, the first may depart from the second.
WARMUP_STEADY_STEPS = 2

WINDOW_COLUMNS = ["range_id", "name", "range_name", "pid", "tid", "start_ns", "end_ns", "parent_id"]


@dataclass
class RunStructure:
    """What the trace's ranges (or kernels) say the run did.

    ``steps`` and ``phases`` are windows (:data:`WINDOW_COLUMNS` plus, for steps, ``measured``);
    a window made by the analysis, not read from a range, has a ``range_id`` past the trace's
    ranges. ``regions`` gives the canonical attention part (:data:`REGIONS`) of each range used as
    one, indexed by ``range_id``, and ``region_names`` the range names behind each part.
    ``record`` is what the summary and the pages show of it."""

    steps: pd.DataFrame
    phases: pd.DataFrame
    regions: pd.Series
    region_names: dict[str, list[str]]
    has_steps: bool
    step_ranges: bool  # the steps are ranges of the trace, not made from the phases
    source: str  # "ranges", "pytorch", "ranges+pytorch", "kernels" or "none"; "+kernels" when they fill in
    step_rule: str
    warmup_rule: str
    inference_passes: int = 0
    fused_attention: bool = False
    inference_names: list[str] = field(default_factory=list)
    block_family: str | None = None
    block_ranges: pd.Series = field(default_factory=lambda: pd.Series(dtype=np.int64))  # block index by range_id
    phase_names: dict[str, list[str]] = field(default_factory=dict)
    # Names of a phase whose ranges all lie inside a phase's windows, which count their kernels.
    held_names: list[dict] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    step_table: list[dict] = field(default_factory=list)
    # Without steps, the windows (one per process) that hold the measured work where the program
    # opened its own profiling window (:func:`_profiled_windows`); None: the whole capture.
    profiled: pd.DataFrame | None = None

    def record(self) -> dict:
        """The JSON-ready description of the structure (the summary's ``structure``)."""
        measured = self.steps[self.steps["measured"]] if len(self.steps) else self.steps
        cut = int(self.steps["cut"].sum()) if "cut" in self.steps else 0
        return {
            "source": self.source,
            "step_ranges": self.step_ranges,
            "step_rule": self.step_rule,
            "warmup_rule": self.warmup_rule,
            "step_names": sorted(set(map(str, self.steps["range_name"]))) if len(self.steps) else [],
            "steps": int(len(self.steps)),
            "processes": int(self.steps["pid"].nunique()) if len(self.steps) else 0,
            "warmup_steps": int(len(self.steps) - len(measured) - cut),
            "measured_steps": int(len(measured)),
            "cut_steps": cut,
            "phase_names": {phase: list(names) for phase, names in self.phase_names.items()},
            "attention_names": {part: list(self.region_names.get(part, [])) for part in REGIONS},
            "fused_attention": self.fused_attention,
            "block_family": self.block_family,
            "inference_passes": int(self.inference_passes),
            "inference_names": list(self.inference_names),
            "held_names": [dict(entry) for entry in self.held_names],
            "unused_names": list(self.unused),
            "step_table": list(self.step_table),
        }


def find_structure(ranges: pd.DataFrame, ops: pd.DataFrame, names: RangeNames = RangeNames(),
                   host_calls: pd.DataFrame | None = None) -> RunStructure:
    """The run's structure from ``ranges`` (:attr:`analysis.load.Trace.ranges`), ``ops`` (GPU
    operations with ``pid``, ``launch_tid``, ``launch_start_ns``, ``dur_ns``, ``demangled_name``)
    and the program's ``cudaProfilerStart``/``Stop`` calls, waits for the GPU and CUDA event records
    (:attr:`analysis.load.Trace.host_calls`)."""
    own, labels = _own_and_labels(ranges)
    notes: list[str] = []
    waits = _waits(host_calls)
    phases, source = _phases(own, labels, ops, names, notes, first_id=len(ranges), waits=waits)
    training = _training_forwards(phases)
    training |= _measured_after_training_warmup(phases, training, own, notes)
    inference = (phases["name"] == "forward").to_numpy() & ~training if training.any() else np.zeros(len(phases), bool)
    steps, step_rule, containers, several_runs = _steps(own, phases[~inference], ops, names, notes)
    step_ranges = steps is not None
    if not step_ranges and not several_runs and source == "none" and names.phases is None:
        # no range, label or thread marks a pass or a step: a forward-only loop's calls, if its kernels repeat
        phases = _repeated_calls(ops, waits, notes, first_id=len(ranges))
        source, training = ("kernels" if len(phases) else "none"), _training_forwards(phases)
        inference = np.zeros(len(phases), dtype=bool)
    if steps is None:
        steps = pd.DataFrame(columns=[*WINDOW_COLUMNS, "measured"]) if several_runs else \
            _steps_from_phases(phases, training, len(ranges) + len(phases))
        if len(steps) and len(steps) < training.sum():
            step_rule = ("made from the phases: each optimizer step ends a step, "
                         "the forward and backward passes since the previous one its micro-batches")
        elif len(steps):
            backward = (phases["name"] == "backward").to_numpy().any()  # else every forward is one (inference)
            step_rule = ("made from the phases: each training forward starts a step" if backward
                         else "made from the phases: each forward is a step (no backward: an inference run)")
        # iterations: the steps, or the training passes where a step holds several (the first
        # iterations' hand-written updates untold, their passes joined to the first update told);
        # calls that a range of yours named for measuring holds are yours to count, not a guess
        if source == "kernels" and not _named(MEASURED_FAMILY, phases["range_name"]).any() \
                and 0 < (most := max(_most_per_process(steps), _most_per_process(phases[training]))) < UNPHASED_STEPS_MIN:
            # phases found from the kernels, left out with their steps: the source stays "kernels"
            step_rule = (f"the kernels alone give {most} iteration{'s' if most > 1 else ''} at most in a process: too few "
                         "to be a loop's steps, as when a benchmark's repeated calls run together; no phase is taken either")
            phases, steps, inference = phases.iloc[:0], steps.iloc[:0], inference[:0]
        if (period := _update_period(steps, phases, ops)) > 1:
            steps = _grouped_steps(steps, period, len(ranges) + len(phases))
            step_rule += (f"; every {period} updates are one step (their kernel counts repeat every {period}: "
                          f"a step that trains {period} models)")
        unranged = _unranged_measured_iterations(own, steps, ops, len(ranges) + len(phases) + len(steps), notes)
        if unranged is not None:  # phase ranges only in the warm-up: the measured range's come from the kernels
            phases, steps = (pd.concat([old, new], ignore_index=True) for old, new in zip((phases, steps), unranged))
            inference = np.r_[inference, np.zeros(len(unranged[0]), dtype=bool)]
            source += "+kernels" if not source.endswith("+kernels") else ""
    if step_ranges and (unranged := _unranged_processes(steps, ops, len(ranges) + len(phases) + len(steps),
                                                        notes)) is not None:
        phases = pd.concat([phases, unranged[0]], ignore_index=True)
        inference = np.r_[inference, np.zeros(len(unranged[0]), dtype=bool)]
        steps = pd.concat([steps, unranged[1]], ignore_index=True)
        source += "+kernels" if not source.endswith("+kernels") else ""
    inference_windows, phases = phases[inference], phases[~inference]
    warmup_found = ""
    # beside step ranges: warm-up ranges, else the iterations before them; beside steps made from the
    # phases (which hold those before already): warm-up ranges alone, where no flag tells the warm-up
    if step_ranges or (len(steps) and names.warmup_steps is None and names.warmup_prefix is None):
        extra, warmup_found = _warmup_iterations(own, steps, phases, ops, len(ranges) + len(phases) + len(steps),
                                                 inference_windows, before_steps=step_ranges)
        steps = pd.concat([steps, extra], ignore_index=True)
    has_steps = len(steps) > 0
    steps, warmup_rule, step_table, marking = _warmup(steps, containers, warmup_found, ops, names, has_steps, own,
                                                      notes, host_calls)
    if has_steps and not steps["measured"].to_numpy(dtype=bool).any():  # every step warm-up or cut off: none to average
        step_rule, has_steps = f"{step_rule}, but none of the {len(steps)} is measured ({warmup_rule})", False
    profiled = None if has_steps else _profiled_windows(ops, host_calls)
    regions, fused = _regions(own, labels, phases, names, notes)
    name_of = pd.concat([own["name"], labels["name"]]).set_axis(pd.concat([own["range_id"], labels["range_id"]]))
    region_range_names = name_of.loc[regions.index]  # the name of each range used as an attention part
    region_names = {part: sorted(pd.unique(region_range_names[(regions == part).to_numpy()])) for part in REGIONS}
    block_family, block_ranges = _blocks(own, labels, phases)
    used = set().union(*map(pd.unique, (
        steps["range_name"], phases["range_name"], inference_windows["range_name"], region_range_names,
        containers["name"], name_of.reindex(block_ranges.index).dropna(), pd.Series(marking, dtype=object))))
    if has_steps:  # ranges named warm-up, and those only inside them: outside the measured steps whatever they hold
        warm = _named(WARMUP_FAMILY, own["name"])
        used |= set(own.loc[warm, "name"])
        if warm.any():
            inside = pd.Series(_inside_any(own, _outermost_by_time(own[warm])), index=own.index)
            only_inside = inside.groupby(own["name"].to_numpy()).all()
            used |= set(only_inside.index[only_inside.to_numpy()])
    left = set(pd.unique(own["name"])) - used - {contract.MEASURED_STEPS_RANGE, contract.ATTENTION_RANGE}
    held = _held_by_phases(own[own["name"].isin(left)], phases) if names.phases is None else []
    left -= {name for entry in held for name in entry["names"]}
    held = [{**entry, "names": [family_label(n) for n in name_families(entry["names"])]} for entry in held]
    unused = [family_label(n) for n in name_families(sorted(left))]
    return RunStructure(
        steps=steps, phases=phases.reset_index(drop=True), regions=regions, region_names=region_names, has_steps=has_steps,
        step_ranges=step_ranges, source=source, step_rule=step_rule, warmup_rule=warmup_rule,
        inference_passes=len(inference_windows), inference_names=name_families(sorted(set(inference_windows["range_name"]))),
        fused_attention=fused, block_family=block_family, block_ranges=block_ranges,
        phase_names=_names_by_phase(phases), held_names=held, unused=unused, notes=notes, step_table=step_table,
        profiled=profiled)


def _held_by_phases(ranges: pd.DataFrame, phases: pd.DataFrame) -> list[dict]:
    """Of ``ranges`` (the user's, not used for any role), those whose name says a phase and that
    each lie inside a phase window of their process (a ``loss`` range inside the forward's, a
    ``model_forward`` inside ``forward``): that phase counts their kernels. One entry per phase and
    holding phase, ``{"phase", "inside", "names"}`` (the holder: the phase of the window that
    holds the name's first range, :func:`analysis.core.attribution.ops_in_windows`' rule)."""
    from analysis.core.attribution import ops_in_windows
    said = per_name(ranges["name"], lambda n: _phase_of_name(n) or _warmup_phase_of_name(n))
    ranges = ranges[pd.notna(said)].assign(said=said[pd.notna(said)]).sort_values("start_ns", kind="stable")
    if ranges.empty or phases.empty:
        return []
    window = ops_in_windows(pd.DataFrame({"pid": ranges["pid"].to_numpy(), "launch_start_ns": ranges["start_ns"].to_numpy()}),
                            phases)
    inside = (window >= 0) & (ranges["end_ns"].to_numpy() <= phases["end_ns"].to_numpy()[window])
    ranges = ranges.assign(inside=inside, holder=phases["name"].to_numpy()[window])
    found: dict[tuple[str, str], list[str]] = {}
    for (name, phase), mine in ranges.groupby(["name", "said"], sort=True):
        if mine["inside"].all():
            found.setdefault((phase, mine["holder"].iat[0]), []).append(name)
    order = sorted(found, key=lambda key: (PHASES.index(key[1]), PHASES.index(key[0])))
    return [{"phase": phase, "inside": holder, "names": found[phase, holder]} for phase, holder in order]


def _own_and_labels(ranges: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The user's own ranges, with the normal form and stem of the part of their names that says
    a role (``normal``, ``stem``: the last ``/``-separated part) and the stem of their whole names
    (``family``: ``train/step_3`` and ``eval/step_3`` are of two families), and PyTorch's labels;
    op-level ranges and library domains in neither."""
    op_level_name, torch_label = per_name(ranges["name"], lambda n: bool(OP_LEVEL.search(n) or LIBRARY_NAME.search(n)),
                                           lambda n: TORCH_LABEL.search(n) is not None, dtype=bool)
    op_level = op_level_name | per_name(ranges["domain"].astype(str), lambda d: d.lower() in LIBRARY_DOMAINS, dtype=bool)
    own = _own_scopes(ranges[~op_level & ~torch_label])
    normal, family = per_name(own["name"], role_name, _phase_family)
    return own.assign(normal=normal, stem=per_name(normal, name_stem), family=family), ranges[torch_label & ~op_level]


def _own_scopes(own: pd.DataFrame) -> pd.DataFrame:
    """The user's ranges, where every one is a record-function scope (``forward, op_id = 7`` under
    ``emit_nvtx``, :data:`~analysis.load.nvtx.RECORD_FUNCTION_SCOPE`) and one of them names a phase,
    named by their scopes; else the scopes left out: PyTorch's own (compile timers,
    ``record_param_comms``) look alike."""
    def scope_of(name) -> str | None:
        match = RECORD_FUNCTION_SCOPE.match(name) if isinstance(name, str) else None
        return match[1] if match else None

    scopes = per_name(own["name"], scope_of)
    scope = pd.notna(scopes)
    if not scope.any():
        return own
    if not scope.all() or not any(_phase_of_name(name) is not None for name in set(scopes)):
        return own[~scope]
    return own.assign(name=scopes)


def _phases(own: pd.DataFrame, labels: pd.DataFrame, ops: pd.DataFrame, names: RangeNames, notes: list[str],
            first_id: int, waits: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Phase windows from the user's ranges, the phases they lack from PyTorch's labels, and from
    the kernels when neither has any or neither has the backward (the phases still lacking; the
    program's ``waits`` for the GPU tell a hand-written update from the next forward);
    overlapping windows of one phase merged; the source's name."""
    phases, source = _own_phases(own, names, notes), "ranges"
    if names.phases is None:
        phases = _loops_in_phase_ranges(phases, own, ops, notes, first_id)
    phases = _calls_of_the_model(phases, own, notes, first_id + int((phases["range_id"].to_numpy() >= first_id).sum()))
    phases = _repeated_forwards(phases, ops, notes, first_id, first_id + int((phases["range_id"].to_numpy() >= first_id).sum()))
    first_id += int((phases["range_id"].to_numpy() >= first_id).sum())  # ids the iterations and calls took
    if names.phases is None and len(labels):
        from_labels = _pytorch_phases(labels)
        from_labels = from_labels[~from_labels["name"].isin(phases["name"])]
        if len(from_labels):
            source = "ranges+pytorch" if len(phases) else "pytorch"
            phases = pd.concat([phases, from_labels], ignore_index=True).sort_values("start_ns", kind="stable")
    from_kernels = phases.iloc[:0]  # the phases found from the kernels beside the ranges
    if phases.empty and names.phases is None:
        phases = _forwards_from_model_ranges(_kernel_phases(ops, first_id, waits), own)
        if phases.empty:
            phases = _measured_calls(own, ops, notes, first_id)
        source = "kernels" if len(phases) else "none"
    elif names.phases is None and {"backward", "optimizer_step"} - set(phases["name"]):
        # a backward with no range, or an optimizer step with none (found by its fused kernels)
        every = _kernel_phases(ops, first_id, waits)
        from_kernels = every[~every["name"].isin(phases["name"])]
        if (phases["name"] == "backward").any():
            from_kernels = _after_a_ranged_backward(from_kernels, every, phases)
        if len(from_kernels):
            phases = pd.concat([phases, from_kernels], ignore_index=True).sort_values("start_ns", kind="stable")
    phases = _cut_at_later_phases(phases, kernels_from=first_id)
    phases = _merge_overlapping(_updates_after_closures(_outside_other_phases(phases), notes), notes)
    if phases["range_id"].isin(from_kernels["range_id"]).any():  # some found from the kernels stayed
        source += "+kernels"
    return phases, source


# ----------------------------------------------------------------------------- names

def _named(family: re.Pattern, names) -> np.ndarray:
    """Whether each of ``names`` is of ``family`` (warm-up, measured): its whole name's stem or
    the stem of one of its ``/`` or ``.`` parts (``WarmUpStep3``, ``warmup/step_3``, ``train/warmup_3``,
    ``benchmark.warmup.step``), also after a step's word (``step_warmup``, ``iter_measured``)."""
    def of_family(stem: str) -> bool:
        after_step = STEP_WORD.match(stem)
        return bool(family.fullmatch(stem) or (after_step and family.fullmatch(stem[after_step.end():])))

    def named(name) -> bool:
        return any(of_family(name_stem(normal_name(part))) for part in (str(name), *re.split(r"[/.]", str(name))))
    return per_name(names, named, dtype=bool)


def _phase_of(normal: str) -> str | None:
    """The phase a name's family says, if any, also after the iteration's number it starts with
    (``step_3_forward``, ``epoch0_it5_backward``) or with a phase's word misspelt by one letter
    (``forwad_pass``, :func:`_spelt_right`); an indexed ``step_3`` or ``update_3`` is a step,
    never the optimizer."""
    stem = name_stem(normal)
    if stem != normal and stem in (AMBIGUOUS_OPTIMIZER, "update"):
        return None
    for phase, family in PHASE_FAMILIES.items():
        if family.fullmatch(stem) or family.fullmatch(normal):
            return phase
    tag = ITERATION_TAG.match(normal)
    if tag:
        return _phase_of(normal[tag.end():])
    corrected = _spelt_right(normal)
    return _phase_of(corrected) if corrected != normal else None


# The words of phase names long enough that one letter missing, added, changed or swapped with the
# next (``forwad``, ``backwrad``, ``optimzer``) can only be a slip of the hand.
SPELT_WORDS = ("forward", "backward", "optimizer")
PART_WORDS = ("matmul", "softmax", "attention")  # likewise the words of attention parts' names


def _spelt_right(normal: str, words: tuple[str, ...] = SPELT_WORDS) -> str:
    """``normal`` with each word one letter's slip away from one of ``words`` written as that word."""
    return "_".join(next((word for word in words if _one_slip(part, word)), part) for part in normal.split("_"))


def _one_slip(written: str, word: str) -> bool:
    """Whether ``written`` is ``word`` with one letter missing, added, changed, or swapped with the
    next one (not ``word`` itself)."""
    if written == word or abs(len(written) - len(word)) > 1:
        return False
    if len(written) == len(word):
        differ = [i for i, (a, b) in enumerate(zip(written, word)) if a != b]
        return len(differ) == 1 or (len(differ) == 2 and differ[1] == differ[0] + 1
                                    and written[differ[0]] == word[differ[1]] and written[differ[1]] == word[differ[0]])
    shorter, longer = sorted((written, word), key=len)
    return any(longer[:i] + longer[i + 1:] == shorter for i in range(len(longer)))


def _phase_family(name: str) -> str:
    """A range's family: its normal name's stem (:func:`name_stem`), or, for a phase's name that
    starts with its iteration's number (``step_3_forward``: one range a step), the stem of the rest,
    so the passes of every iteration are one family."""
    normal = normal_name(name)
    tag = ITERATION_TAG.match(normal)
    if tag and _phase_of(normal) is not None:
        return name_stem(normal[tag.end():])
    return name_stem(normal)


def _phase_of_name(name: str) -> str | None:
    """The phase a range's name says: its role's family (:func:`_phase_of`), else, for a name of
    parts joined by ``+``, ``&``, ``,`` or ``and`` (``comm + optimizer``), the one phase its parts
    name when exactly one does, or the forward where they name it and the loss (``forward+loss``);
    a bare ``step`` part names none: it may be anything. What comes
    before a ``/`` is a namespace (``train/forward``) unless it names a phase itself: then the
    ``/`` joins parts too (``Calculate Loss/Sync`` is the loss, ``Forward/Loss`` the forward,
    ``Forward/Backward Pass`` names two phases, so none). A bracketed qualifier or a clause after
    the phase's name says no phase (``Backward (with async all-reduce)`` and ``Forward Pass with
    autocast`` are the backward and the forward). A namespace of a block (``block/00/forward``,
    ``layer_3/backward``) names a block's share of a pass, no phase; a bare ``step`` namespace
    names none (``step/forward`` is the forward)."""
    before, _, role = str(name).rpartition("/")
    phase = _phase_of(normal_name(role))
    parts = [normal_name(part) for part in JOINED_PARTS.split(role)]
    if phase is None and len(parts) > 1:
        named = {_phase_of(part) for part in parts if part != AMBIGUOUS_OPTIMIZER} - {None}
        if named == {"forward", "loss"}:  # a loss computed with the forward is the forward's, as one inside its range
            named = {"forward"}
        phase = named.pop() if len(named) == 1 else None
    plain = QUALIFYING_CLAUSE.sub("", QUALIFIER.sub(" ", role)).strip()
    if phase is None and plain != role.strip() and normal_name(plain) not in ("", AMBIGUOUS_OPTIMIZER):
        phase = _phase_of_name(plain)  # ``Backward (with async all-reduce)``, ``Forward [bf16]``
    spaces = [name_stem(normal_name(part)) for part in before.split("/")] if before else []
    if any(BLOCK_FAMILY.fullmatch(space) for space in spaces):  # ``block/00/forward``: a block's part of a pass
        return None
    # a bare ``step`` before the role is the step's namespace (``step/forward``), no optimizer step
    named_before = _phase_of_name(before) if before and spaces[-1] != AMBIGUOUS_OPTIMIZER else None
    if named_before is None:
        return phase
    if {named_before, phase} == {"forward", "loss"}:  # ``Forward/Loss``
        return "forward"
    return named_before if phase in (None, named_before) else None


def _names_several_phases(name: str) -> bool:
    """Whether a range's name names two phases or more in its parts (``backward+optimizer``,
    ``Forward/Backward Pass``; a bare ``step`` names none): a range around some of a step's phases,
    never the step."""
    parts = [normal_name(part) for piece in str(name).split("/") for part in JOINED_PARTS.split(piece)]
    return len({_phase_of(part) for part in parts if part != AMBIGUOUS_OPTIMIZER} - {None}) > 1


def _region_of_name(name: str, normal: str) -> str | None:
    """The attention part a range's name says: by the right operand of a name written as a
    product (:data:`PRODUCT`), else by its normal form's family (:func:`_region_of`)."""
    product = PRODUCT.search(str(name))
    if product and product["right"].lower() in PRODUCT_PARTS:
        return PRODUCT_PARTS[product["right"].lower()]
    return _region_of(normal)


def _region_of(normal: str) -> str | None:
    """The attention part a normal name's family says (:data:`REGION_FAMILIES`), also with a
    part's word misspelt by one letter (``final_matmal``, :func:`_spelt_right`)."""
    for candidate in dict.fromkeys((normal, _spelt_right(normal, PART_WORDS))):
        for region, family in REGION_FAMILIES:
            if family.fullmatch(candidate):
                return region
    return None


def _note_missing(wanted, own: pd.DataFrame, notes: list[str]) -> None:
    """A note for each name a flag gave that no range has, with the nearest names present
    (difflib, imported here: only a flag naming a range the trace lacks needs it)."""
    import difflib

    present = sorted(set(own["name"]))
    for name in wanted:
        if name.endswith("<i>") and any(n.startswith(name[:-3]) for n in present) or name in present:
            continue
        near = difflib.get_close_matches(name.replace("<i>", "0"), present, n=3, cutoff=0.3)
        notes.append(f"no range is named `{name}`" + (f"; nearest: {', '.join(f'`{n}`' for n in near)}" if near else ""))


# ----------------------------------------------------------------------------- phases

def _made_windows(rows: list[tuple], columns: list[str]) -> pd.DataFrame:
    """Windows the analysis makes, from ``rows`` of ``columns``: process, thread and times are
    integers also when there are no rows (so a frame they join keeps integer columns)."""
    return pd.DataFrame(rows, columns=columns).astype({c: np.int64 for c in ("pid", "tid", "start_ns", "end_ns")})


def _replaced_windows(windows: pd.DataFrame, rows: list[int], made: list[tuple]) -> pd.DataFrame:
    """``windows`` less those at positions ``rows``, with the windows ``made`` (rows of
    :data:`WINDOW_COLUMNS`, ids and parents integers too) in their place, in time order."""
    made_windows = _made_windows(made, WINDOW_COLUMNS).astype({"range_id": np.int64, "parent_id": np.int64})
    return pd.concat([windows.drop(windows.index[rows]), made_windows], ignore_index=True) \
        .sort_values("start_ns", kind="stable").reset_index(drop=True)


def _windows(rows: pd.DataFrame, phase: np.ndarray | str) -> pd.DataFrame:
    return pd.DataFrame({
        "range_id": rows["range_id"].to_numpy(), "name": phase, "range_name": rows["name"].to_numpy(),
        "pid": rows["pid"].to_numpy(), "tid": rows["tid"].to_numpy(), "start_ns": rows["start_ns"].to_numpy(),
        "end_ns": rows["end_ns"].to_numpy(), "parent_id": rows["parent_id"].to_numpy()}, columns=WINDOW_COLUMNS)


def _own_phases(own: pd.DataFrame, names: RangeNames, notes: list[str]) -> pd.DataFrame:
    """Phase windows from the user's ranges (by the flags' names, else by families)."""
    given = names.phase_roles()
    if given:
        phase = own["name"].map(given).to_numpy(dtype=object)
        _note_missing(given, own, notes)
    else:
        phase = per_name(own["name"], _phase_of_name)
        if not pd.notna(phase).any():
            phase = _tagged_phases(own["name"], notes)
        unnamed = pd.isna(phase)
        phase[unnamed] = per_name(own["name"][unnamed], _warmup_phase_of_name)
        phase = _resolve_ambiguous_step(own, phase)
    keep = pd.notna(phase)
    windows = _windows(own[keep], phase[keep])
    return _outermost_per_phase(_less_phase_regions(windows))


def _names_a_pass(name: str) -> bool:
    """Whether a range's name says a forward, loss or backward pass: never a step, whatever it
    holds (a region named after a phase, :func:`_less_phase_regions`), though it may hold steps."""
    return _phase_of_name(name) in ("forward", "loss", "backward")


def _less_phase_regions(windows: pd.DataFrame) -> pd.DataFrame:
    """Phase windows less the forward, loss and backward ranges that hold a range of their own
    phase and an optimizer step's: a region named after a phase around several (``backward:``
    around ``compute loss``, ``loss.backward compute:`` and ``optimize step:``), whose phase is
    the range inside it."""
    names = windows["name"].to_numpy()
    updates = windows[names == "optimizer_step"]
    if updates.empty:
        return windows
    region = np.zeros(len(windows), dtype=bool)
    for phase in ("forward", "loss", "backward"):
        rows = np.flatnonzero(names == phase)
        mine = windows.iloc[rows]
        region[rows] = (_contains(mine, mine) > 1) & (_contains(mine, updates) > 0)
    return windows[~region] if region.any() else windows


def _warmup_phase_of_name(name: str) -> str | None:
    """The phase a name says after a warm-up word before or after it is left out (``forward pass
    warmup`` beside ``forward pass``: the script names its warm-up iterations' phases apart);
    never the optimizer for a bare ``step`` (``warmup_step`` is a warm-up iteration)."""
    normal = normal_name(name)
    bare = WARMUP_WORD.sub("", normal, count=1)
    return _phase_of(bare) if bare not in (normal, AMBIGUOUS_OPTIMIZER) else None


TAG_SHOWN = 48  # at most this many characters of the pattern of tagged phase names are shown in a note


def _tagged_phases(names: pd.Series, notes: list[str]) -> np.ndarray:
    """Phases of names made of a phase's name and one tag that the names of two or more phases
    share, after it (``forward_<config>``, ``backward_<config>``: a run's settings written into
    every range) or before it (``my_forward``, ``my_backward``: a personal prefix), for a trace where
    no name says a phase by itself; of several such tags, the one most names share, and with it
    every tag on the same side naming the same phases with other names (``D_forward`` … and
    ``G_forward`` …: one tag per model of a step that trains two). A note names the tags. None for
    every other name."""
    by_tag: dict[str, dict[str, str]] = {}  # the tag as a pattern, <phase> where the phase's name is -> {name: phase}
    for name in pd.unique(names.to_numpy(dtype=object)):
        words = role_name(name).split("_")
        for cut in range(1, len(words)):
            head, tail = "_".join(words[:cut]), "_".join(words[cut:])
            for phase_words, pattern in ((head, f"<phase>_{tail}"), (tail, f"{head}_<phase>")):
                phase = _phase_of(phase_words) if phase_words != AMBIGUOUS_OPTIMIZER else None
                if phase is not None:
                    by_tag.setdefault(pattern, {})[name] = phase
    tagged = {tag: found for tag, found in by_tag.items() if len(set(found.values())) > 1}
    if not tagged:
        tagged = _tagged_forward(by_tag)
    if not tagged:
        return np.full(len(names), None, dtype=object)
    tag = max(tagged, key=lambda t: (len(tagged[t]), len(t)))
    side, phases = tag.startswith("<phase>"), set(tagged[tag].values())
    tags = [tag] + [other for other, found in tagged.items()
                    if other != tag and other.startswith("<phase>") == side and set(found.values()) == phases
                    and not set(found) & set(tagged[tag])]
    patterns = dict.fromkeys(re.sub(r"_\d+$", "_<i>", t) for t in tags)  # numbered tags once (`<phase>_small_128_<i>`)
    shown = " and ".join(f"`{t if len(t) <= TAG_SHOWN else t[:TAG_SHOWN - 1] + '…'}`" for t in patterns)
    which = "the tag beside each phase's name is left out" if len(tags) == 1 else \
        f"{len(tags)} tags name the same phases, and each of their ranges is a pass"
    notes.append(f"phase ranges named {shown}: {which}")
    return names.map({name: phase for t in tags for name, phase in tagged[t].items()}).to_numpy(dtype=object)


# Words that name a part of a model, not the model: ``attention_forward`` is a module's forward.
MODEL_PART = re.compile(r"(self_|multi_head_|cross_)?(attention|attn|mha|sdpa|mlp|ffn|feed_forward|ff|block|layer|"
                        r"transformer_block|embedding|embed|norm|rms_?norm|layer_?norm|ln|head|lm_head|rope|"
                        r"encoder|decoder|module|submodule|linear|conv)(_?\d+)?")


def _tagged_forward(by_tag: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """In a trace where no name says a phase, the one tag whose names say the forward alone (a
    forward-only benchmark's ``small_forward``: the model's size written into its one phase's
    name), unless it names a part of the model (:data:`MODEL_PART`, ``attention_forward``) or
    another tag names a phase too. Empty otherwise."""
    forward = {tag: found for tag, found in by_tag.items() if set(found.values()) == {"forward"}}
    if len(forward) != 1 or len(by_tag) > 1:  # a tag per phase's name (``forward_a``, ``bwd_b``): no run's tag
        return {}
    tag = next(iter(forward))
    return {} if MODEL_PART.fullmatch(tag.replace("<phase>", "").strip("_")) else forward


# The phases whose range may hold a loop of whole iterations rather than one pass.
LOOP_PHASES = ("forward", "backward")


def _loops_in_phase_ranges(windows: pd.DataFrame, own: pd.DataFrame, ops: pd.DataFrame, notes: list[str],
                           first_id: int) -> pd.DataFrame:
    """Phase windows less the forward and backward ranges that hold a loop rather than one pass:
    ranges of one family (not blocks) among the range's own children, two or more, that never
    overlap, each launch the same kernels (names and counts) and together launch every kernel the
    range does (``forward`` around ``it0`` … ``it9``: a region named after what the loop times).
    Where the iterations launch from their process's main thread alone and the range names the
    forward, each iteration is a forward pass (one window each, ids from ``first_id``, the range
    as their parent); else (a thread besides launches each one's backward) the range is no pass,
    and the phases come from what the iterations hold. A note says which."""
    rows = np.flatnonzero(np.isin(windows["name"].to_numpy(), LOOP_PHASES) & (windows["range_id"].to_numpy() < first_id))
    if not len(rows) or own.empty:
        return windows
    ids = windows["range_id"].to_numpy()[rows]
    children = own[np.isin(own["parent_id"].to_numpy(), ids) & ~np.isin(own["range_id"].to_numpy(), ids)]
    children = children[~per_name(children["family"], lambda stem: bool(BLOCK_FAMILY.fullmatch(stem)), dtype=bool)]
    pairs = np.stack([children["parent_id"].to_numpy(), pd.factorize(children["family"])[0]], axis=1)
    family_in = np.unique(pairs, axis=0, return_inverse=True)[1].ravel() if len(pairs) else np.zeros(0, np.int64)
    order = np.lexsort((children["start_ns"].to_numpy(), family_in))  # each family's ranges in a range, in time order
    in_order, starts, ends = family_in[order], children["start_ns"].to_numpy()[order], children["end_ns"].to_numpy()[order]
    overlapping = set(in_order[1:][(in_order[1:] == in_order[:-1]) & (starts[1:] < ends[:-1])].tolist())
    cuts = np.flatnonzero(np.diff(in_order)) + 1
    loops = [members for family, members in zip(in_order[np.r_[0, cuts]].tolist(), np.split(order, cuts))
             if len(members) > 1 and family not in overlapping] if len(order) else []
    if not loops:
        return windows
    from analysis.core.attribution import ops_in_window_tables
    position, parents = {int(i): k for k, i in enumerate(ids)}, children["parent_id"].to_numpy()
    holding, holder_of = np.unique([position[int(parents[loop_rows[0]])] for loop_rows in loops], return_inverse=True)
    holder_rows, holder_of = rows[holding], holder_of.ravel()  # each range that holds a loop once; each loop's range
    holders = windows.iloc[holder_rows]
    in_holder, in_iteration = ops_in_window_tables(ops, [holders, children.iloc[np.concatenate(loops)]])
    held = np.flatnonzero(in_holder >= 0)  # the ops the ranges launch, each with its range and iteration
    holder, iteration = in_holder[held], in_iteration[held]
    loop_of = np.repeat(np.arange(len(loops)), list(map(len, loops)))
    loop = np.where(iteration >= 0, loop_of[np.maximum(iteration, 0)], -1)
    kernel = (ops["op_kind"].iloc[held] == "kernel").to_numpy()
    looped = kernel & (loop >= 0) & (holder_of[np.maximum(loop, 0)] == holder)  # a kernel of an iteration in its range
    range_kernels = np.bincount(holder[kernel], minlength=len(holders))[holder_of]
    whole = (np.bincount(loop[looped], minlength=len(loops)) == range_kernels) & (range_kernels > 0)
    inside = looped & whole[np.maximum(loop, 0)]  # the kernels of loops that launch every kernel of their range
    codes = value_codes(ops["demangled_name"])[0][held[inside]]
    by_iteration = np.lexsort((codes, iteration[inside]))
    found, codes = iteration[inside][by_iteration], codes[by_iteration]  # each iteration's kernels, in one slice
    launch_tids = ops["launch_tid"].to_numpy()[held]
    made, replaced, dropped = [], [], []
    for k in np.flatnonzero(whole):
        group, window = loops[k], holders.iloc[holder_of[k]]
        positions = np.flatnonzero(loop_of == k)
        low, high = np.searchsorted(found, [positions[0], positions[-1] + 1])
        kernels = np.split(codes[low:high], np.searchsorted(found[low:high], positions[1:]) if high > low else [])
        if high == low or any(len(other) != len(kernels[0]) or (other != kernels[0]).any() for other in kernels[1:]):
            continue
        tids = launch_tids[loop == k]
        only_main = bool((tids == _main_thread(int(window["pid"]), tids)).all())
        shown = family_label(children["name"].iat[group[0]])
        if window["name"] == "forward" and only_main:
            loop_ranges = children.iloc[group].sort_values("start_ns", kind="stable")
            made += [(first_id + len(made) + j, "forward", window["range_name"], window["pid"], window["tid"],
                      int(start), int(end), int(window["range_id"]))
                     for j, (start, end) in enumerate(zip(loop_ranges["start_ns"], loop_ranges["end_ns"]))]
            replaced.append(holder_rows[holder_of[k]])
            notes.append(f"the forward range `{window['range_name']}` holds {len(group)} iterations `{shown}` that "
                         "launch the same kernels and all of its own: a loop, each iteration a forward pass")
        elif not only_main:
            dropped.append(holder_rows[holder_of[k]])
            notes.append(f"the {window['name']} range `{window['range_name']}` holds {len(group)} iterations "
                         f"`{shown}` that launch the same kernels and all of its own, from more than one thread: "
                         "a loop of whole iterations, not a pass; their phases are found inside them")
    return _replaced_windows(windows, replaced + dropped, made) if replaced or dropped else windows


@functools.lru_cache(maxsize=4096)
def _model_part(name: str, normal: str) -> bool:
    """Whether a user's range of this name (and normal form) may mark a part of the model (an
    embedding, a head): not a phase, an attention part or a block. Asked for two ranges of every
    forward window, whose names repeat: each name's answer is kept."""
    return _phase_of(normal) is None and _region_of_name(name, normal) is None \
        and not BLOCK_FAMILY.fullmatch(name_stem(normal))


def _calls_of_the_model(windows: pd.DataFrame, own: pd.DataFrame, notes: list[str], first_id: int) -> pd.DataFrame:
    """Forward windows that each hold several calls of the model, one window per call (ids from
    ``first_id``, the range as their parent): inside the window, the family of the user's ranges
    that starts first and the one that ends last (``token_embeddings`` and ``lm_head``: parts of
    the model, :func:`_model_part`) occur k >= 2 times each, one after the other; each call runs
    from one first range's start to the next's (the first from the window's start, the last to its
    end), holds as many ranges as the others, and holds a family of them more than once (the
    model's layers). A note names each such range."""
    forwards = np.flatnonzero(windows["name"].to_numpy() == "forward")
    if not len(forwards) or own.empty:
        return windows
    by_start = np.argsort(own["start_ns"].to_numpy(), kind="stable")  # a window's ranges: one slice of these
    o_pid, o_id, o_family = own["pid"].to_numpy(), own["range_id"].to_numpy(), own["family"].to_numpy()
    o_start, o_end = own["start_ns"].to_numpy(), own["end_ns"].to_numpy()
    o_name, o_normal = own["name"].to_numpy(), own["normal"].to_numpy()
    sorted_starts = o_start[by_start]
    w_pid, w_id, w_start, w_end = (windows[c].to_numpy() for c in ("pid", "range_id", "start_ns", "end_ns"))
    made, split = [], []
    for row in forwards:
        low, high = np.searchsorted(sorted_starts, [w_start[row], w_end[row]], side="left")
        inside = by_start[low:high]
        inside = inside[(o_pid[inside] == w_pid[row]) & (o_end[inside] <= w_end[row]) & (o_id[inside] != w_id[row])]
        if len(inside) < 4:
            continue
        first, last = inside[np.argmin(o_start[inside])], inside[np.argmax(o_end[inside])]
        if not (_model_part(o_name[first], o_normal[first]) and _model_part(o_name[last], o_normal[last])) \
                or o_family[first] == o_family[last]:
            continue
        opens = np.sort(o_start[inside[o_family[inside] == o_family[first]]])
        closing = inside[o_family[inside] == o_family[last]]
        closes_start, closes_end = np.sort(o_start[closing]), np.sort(o_end[closing])
        if len(opens) < 2 or len(closes_start) != len(opens) \
                or not ((opens < closes_start).all() and (closes_end[:-1] < opens[1:]).all()):
            continue
        window = windows.iloc[row]
        bounds = np.r_[window["start_ns"], opens[1:], window["end_ns"] + 1]
        piece = np.searchsorted(bounds, o_start[inside], side="right") - 1
        held = np.bincount(piece, minlength=len(opens))
        most = pd.Series(o_family[inside]).groupby(piece).value_counts().groupby(level=0).max()
        # every call holds as many ranges, and a family of them more than once (its layers): a
        # loop over layers with no layer range (``qkv_proj`` … ``out_proj`` each) is one call
        if len(set(held[:len(opens)])) != 1 or (most.reindex(range(len(opens))) < 2).any():
            continue
        made += [(first_id + len(made) + k, "forward", window["range_name"], window["pid"], window["tid"],
                  int(bounds[k]), int(bounds[k + 1]) - 1, int(window["range_id"])) for k in range(len(opens))]
        split.append(row)
        notes.append(f"the forward range `{window['range_name']}` holds {len(opens)} calls of the model (a range of "
                     "the model's first part starts each, one of its last part ends each): each call is a forward pass")
    return _replaced_windows(windows, split, made) if split else windows


# The fewest kernels one call's sequence holds to be a pass of its own (:func:`_repeats`).
LEAST_PASS_KERNELS = 3
GRAPH_EXECUTION_PREFIX = GRAPH_EXECUTION.split("{")[0]  # ``[CUDA graph ``: a whole graph's execution


def _repeats(codes: np.ndarray, least: int = LEAST_PASS_KERNELS) -> int:
    """How many times ``codes`` (kernel names' codes in launch order) repeats its shortest
    repeating sequence back to back where that sequence holds ``least`` codes or more, else 1
    (``abcabcabc``: 3; ``aaaaaa`` or ``abababab``, a layer's kernels over and over, 1)."""
    count = len(codes)
    for period in range(1, count // 2 + 1):
        if count % period == 0 and (codes.reshape(-1, period) == codes[:period]).all():
            return count // period if period >= least else 1
    return 1


def _repeated_forwards(windows: pd.DataFrame, ops: pd.DataFrame, notes: list[str], made_from: int,
                       first_id: int, what: str = "forward range") -> pd.DataFrame:
    """Forward ranges of the user's (ids below ``made_from``, not windows made from them) around a
    loop of calls that have no range of their own, in a process that launches its kernels from one
    thread (no backward pass on PyTorch's autograd thread: a forward-only benchmark): where the range's kernels are k >= 2
    repeats of one sequence (:func:`_repeat_starts`), each repeat is a forward pass, from its first
    launch to the next one's (the first from the range's start, the last to its end; ids from
    ``first_id``, the range as their parent). A note names each such range, as ``what``."""
    rows = np.flatnonzero((windows["name"].to_numpy() == "forward") & (windows["range_id"].to_numpy() < made_from))
    if not len(rows):
        return windows
    from analysis.core.attribution import ops_in_windows, rows_by_key
    launched = (ops["op_kind"] == "kernel").to_numpy() & (ops["launch_start_ns"].to_numpy() >= 0)
    pids, tids = ops["pid"].to_numpy(), ops["launch_tid"].to_numpy()
    one_thread = {pid: bool(len(mine) and mine.min() == mine.max()) for pid in set(windows["pid"].to_numpy()[rows].tolist())
                  for mine in [tids[launched & (pids == pid)]]}
    rows = rows[[one_thread[pid] for pid in windows["pid"].to_numpy()[rows].tolist()]]
    if not len(rows):
        return windows
    forwards, kernels = windows.iloc[rows], ops[launched]
    in_window = ops_in_windows(kernels, forwards)
    made, split = [], []
    for (k,), held in sorted(rows_by_key(in_window).items()):
        starts = _repeat_starts(kernels.iloc[held]) if k >= 0 else []
        if not starts:
            continue
        window = forwards.iloc[k]
        made += [(first_id + len(made) + j, "forward", window["range_name"], window["pid"], window["tid"],
                  int(start), int(end), int(window["range_id"]))
                 for j, (start, end) in enumerate(zip([window["start_ns"], *starts],
                                                      [*(start - 1 for start in starts), window["end_ns"]]))]
        split.append(rows[k])
        notes.append(f"the {what} `{window['range_name']}` launches the same kernels {len(starts) + 1} times "
                     "over, from one thread: a loop of calls, each a forward pass")
    return _replaced_windows(windows, split, made) if split else windows


def _measured_calls(own: pd.DataFrame, ops: pd.DataFrame, notes: list[str], first_id: int) -> pd.DataFrame:
    """Forward passes (ids from ``first_id``) in the user's measured ranges (``measurement``,
    :data:`MEASURED_FAMILY`) of a process that launches from one thread, where a range's kernels
    repeat one call's sequence k >= 2 times (:func:`_repeated_forwards`): a forward-only benchmark
    whose calls have no range of their own. Empty where none does."""
    measured = _outermost_by_time(own[_named(MEASURED_FAMILY, own["name"])])
    if measured.empty:
        return pd.DataFrame(columns=WINDOW_COLUMNS)
    made_from = int(own["range_id"].max()) + 1
    calls = _repeated_forwards(_windows(measured, "forward"), ops, notes, made_from, first_id, "measured range")
    return calls[calls["range_id"].to_numpy() >= first_id].reset_index(drop=True)


def _repeated_calls(ops: pd.DataFrame, waits: pd.DataFrame, notes: list[str], first_id: int) -> pd.DataFrame:
    """Forward passes (ids from ``first_id``) of a process that launches its kernels from one
    thread, where no range, label or thread marks a pass or a step: where its kernels end with a
    stretch that repeats one sequence k >= 2 times back to back (:func:`_periodic_stretch`), a loop
    of calls, each repeat is a forward pass, if the program waits for the GPU (``waits``, :func:`_waits`)
    between every two calls, as a benchmark's timed loop does, or the stretch holds at least
    :data:`CALLS_SHARE_MIN` of the process's kernels. A call runs from its first launch to the
    next call's; the last one as long as the median of those before it, the first left out where
    there are others (a first call that compiles or warms up is longer: of three calls, it would
    be the median), up to the process's first kernel launch after the loop. A note says how the
    passes were found. Empty where no process has such a loop."""
    rows = []
    kernels = ops[(ops["op_kind"] == "kernel").to_numpy() & (ops["launch_start_ns"].to_numpy() >= 0)]
    for pid, mine in kernels.groupby("pid", sort=True):
        mine = mine.sort_values("launch_start_ns", kind="stable")
        tids = mine["launch_tid"].to_numpy()
        if tids.min() != tids.max():
            continue
        codes, names = value_codes(mine["demangled_name"])
        stretch = _periodic_stretch(codes, _least_call_kernels(names[np.unique(codes[codes >= 0])]))
        if stretch is None:
            continue
        first, period, count = stretch
        times = mine["launch_start_ns"].to_numpy()
        starts, lasts = times[first:first + period * count:period], times[first + period - 1:first + period * count:period]
        held = _waits_of(waits, pid)
        waited = np.searchsorted(held, starts[1:]) > np.searchsorted(held, lasts[:-1])  # a wait in each gap
        if not waited.all() and period * count < CALLS_SHARE_MIN * len(codes):
            continue
        after = first + period * count  # the first kernel after the loop, if any
        limit = times[after] - 1 if after < len(times) else np.iinfo(np.int64).max
        lengths = np.diff(starts) - 1  # the first call's left out where others are: it may compile or warm up
        last_end = max(int(lasts[-1]), min(int(starts[-1] + np.median(lengths[1:] if len(lengths) > 1 else lengths)),
                                           int(limit)))
        rows += [(pid, int(tids[0]), "forward", int(start), int(end)) for start, end in zip(starts, [*(starts[1:] - 1), last_end])]
        notes.append(f"no range or label marks a pass and no kernel is launched from a second thread: the last "
                     f"{period * count} of the {len(codes)} kernels of process {pid} repeat one sequence of {period} "
                     f"kernels {count} times over{', with a wait for the GPU between every two' if waited.all() else ''}: "
                     "a loop of calls of the model, each taken for a forward pass")
    windows = _made_windows(rows, ["pid", "tid", "name", "start_ns", "end_ns"])
    windows = windows.assign(range_id=np.arange(first_id, first_id + len(windows), dtype=np.int64),
                             range_name="(forward, from kernels)", parent_id=-1)
    return windows[WINDOW_COLUMNS].reset_index(drop=True)


# The least share of a process's kernels a loop of calls with no wait between them holds: such a
# benchmark's calls are most of its kernels, the model's set-up the rest; a sequence repeated in a
# smaller part (the blocks of a larger model) is not the model's call.
CALLS_SHARE_MIN = 0.75


# Of the sequences that may be a call's, how many are tried: those most kernels' spacings agree on.
PERIODS_TRIED = 16
# The most launches of one name a call may hold for their spacing to tell the call's length: a
# model whose every kernel name recurs in each layer launches its rarest about once a layer.
LAUNCHES_PER_CALL_TRIED = 64


def _periodic_stretch(codes: np.ndarray, least: int) -> tuple[int, int, int] | None:
    """The loop of calls that ends ``codes`` (kernel names' codes in launch order): the longest
    stretch that repeats one sequence of ``least`` codes or more at least twice back to back and
    leaves fewer codes after it than the sequence holds (a summary after the loop, not another
    part of the run), as ``(first, period, count)``: its first whole repeat's position, the
    sequence's length and how many whole repeats it holds; else None. The repeats are counted back
    from the stretch's end: a first call that differs at its start (a compile's or a library's
    first run) is not one. The sequences tried are the spacings of names whose launches recur at
    one spacing throughout, each m launches after the one before (a name launched m times a call),
    the :data:`PERIODS_TRIED` most names agree on; m from 1 up to :data:`LAUNCHES_PER_CALL_TRIED`,
    the first m whose sequences find a stretch. A sequence that is itself a shorter one repeated
    (one layer's kernels over and over, every call alike to the others) is no call: None."""
    order = np.argsort(codes, kind="stable")
    grouped = codes[order]
    firsts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])  # where each name's launches start
    ends = np.r_[firsts[1:], len(codes)]
    for apart in range(1, LAUNCHES_PER_CALL_TRIED + 1):
        if not (ends - firsts > apart).any():
            return None
        found = _longest_stretch(codes, _steady_spacings(order, firsts, ends, apart, least))
        if found is not None:  # a sequence that repeats a shorter one is that one's repeats: no call
            return found if _repeats(codes[found[0]:found[0] + found[1]], least=1) == 1 else None
    return None


def _steady_spacings(order: np.ndarray, firsts: np.ndarray, ends: np.ndarray, apart: int, least: int) -> list[int]:
    """The :data:`PERIODS_TRIED` spacings that most names keep between each launch and the one
    ``apart`` launches later, throughout (``order``: positions sorted by name code, stably;
    ``firsts`` and ``ends``: where each code's launches start and end in it), of at least
    ``least`` and at most half the sequence, ascending. A name's first, middle and last spacings
    are compared first, and only those that agree read whole, so a trace with no loop costs a few
    reads a name."""
    spaced = np.flatnonzero(ends - firsts > apart)  # names with a launch ``apart`` after another
    low, high = firsts[spaced], ends[spaced] - apart  # their spacings' span: order[k + apart] - order[k], k in [low, high)
    middle = (low + high) // 2
    first, last = order[low + apart] - order[low], order[high - 1 + apart] - order[high - 1]
    agree = (first == last) & (order[middle + apart] - order[middle] == first) & (first >= least) & (first <= len(order) // 2)
    steady = [int(first[k]) for k in np.flatnonzero(agree)
              if high[k] - low[k] <= 3 or (order[low[k] + apart:high[k] + apart] - order[low[k]:high[k]] == first[k]).all()]
    return sorted(int(p) for p in pd.Series(steady, dtype=np.int64).value_counts().index[:PERIODS_TRIED])


def _longest_stretch(codes: np.ndarray, periods: list[int]) -> tuple[int, int, int] | None:
    """Of the stretches that end ``codes`` repeating a sequence of one of ``periods`` codes at
    least twice, leaving fewer codes after them than the sequence holds, the longest (the shorter
    sequence of equals), as :func:`_periodic_stretch` gives it; else None."""
    best = None
    for period in periods:
        matches = np.r_[False, codes[period:] == codes[:-period], False]
        edges = np.flatnonzero(np.diff(matches.astype(np.int8)))
        if not len(edges):
            continue
        start, covered = int(edges[-2]), int(edges[-1] - edges[-2]) + period  # the last stretch
        if covered >= 2 * period and len(codes) - start - covered < period and (best is None or covered > best[2]):
            best = (start, period, covered)
    if best is None:
        return None
    start, period, covered = best
    return start + covered % period, period, covered // period


def _least_call_kernels(names) -> int:
    """The fewest kernels a call's sequence of these kernel ``names`` holds to be a pass:
    :data:`LEAST_PASS_KERNELS`, or 1 where one is a whole CUDA graph's execution (a compiled
    model's replay, a call's work by itself)."""
    return 1 if any(str(name).startswith(GRAPH_EXECUTION_PREFIX) for name in names) else LEAST_PASS_KERNELS


def _repeat_starts(kernels: pd.DataFrame) -> list[int]:
    """Where ``kernels`` (rows with ``launch_start_ns`` and ``demangled_name``), in launch order,
    are k >= 2 repeats of one call's sequence (:func:`_repeats`), the launch times that start the
    second call and each later one; else empty. A whole CUDA graph's execution in the sequence
    (``[CUDA graph <id>]``, a compiled model's replay) is a call's work by itself: its sequence
    may be shorter."""
    order = np.argsort(kernels["launch_start_ns"].to_numpy(), kind="stable")
    codes, names = value_codes(kernels["demangled_name"])
    count = _repeats(codes[order], least=_least_call_kernels(names[np.unique(codes[codes >= 0])]))
    if count < 2:
        return []
    return [int(t) for t in kernels["launch_start_ns"].to_numpy()[order][len(order) // count::len(order) // count]]


# The phases a window of an earlier phase may hold that are never part of it: a backward inside
# the loss's or the forward's range, an optimizer step inside the backward's.
LATER_PHASES = ("backward", "optimizer_step")


def _cut_at_later_phases(windows: pd.DataFrame, kernels_from: int) -> pd.DataFrame:
    """Windows that hold a range of a later phase of :data:`LATER_PHASES` (``loss`` around
    ``loss.backward()``, ``backward`` around the optimizer step) end just before the first such
    range they hold, which is a pass of its own; an earlier phase inside a later one (a forward
    recomputed in the backward) and a later one's closure are left to :func:`_outside_other_phases`
    and :func:`_updates_after_closures`. Of the windows made from the kernels (``range_id`` from
    ``kernels_from`` on) only an update cuts (its fused kernels launched after the backward's, inside
    a ``Backward`` range around ``loss.backward()`` and ``optimizer.step()``): a launch from another
    thread inside a forward range is the forward's."""
    if windows.empty or not windows["name"].isin(LATER_PHASES).any():
        return windows
    rank = windows["name"].map({phase: i for i, phase in enumerate(PHASES)}).fillna(-1).to_numpy()
    names = windows["name"].to_numpy()
    names = np.where((windows["range_id"].to_numpy() < kernels_from) | (names == "optimizer_step"), names, "")
    pids = windows["pid"].to_numpy()
    starts, ends = windows["start_ns"].to_numpy(), windows["end_ns"].to_numpy()
    cut = ends.copy()
    for phase in LATER_PHASES:  # the first window of the phase that starts after each earlier one's start
        for pid in pd.unique(pids[names == phase]):
            mine = np.flatnonzero((names == phase) & (pids == pid))
            mine = mine[np.argsort(starts[mine], kind="stable")]
            outer = np.flatnonzero((pids == pid) & (rank >= 0) & (rank < PHASES.index(phase)))
            at = np.searchsorted(starts[mine], starts[outer], side="right")
            found = at < len(mine)
            first = mine[np.minimum(at, len(mine) - 1)]
            held = found & (ends[first] <= ends[outer])  # windows of one phase follow each other
            cut[outer[held]] = np.minimum(cut[outer[held]], starts[first[held]] - 1)
    return windows.assign(end_ns=cut)


def _outside_other_phases(windows: pd.DataFrame) -> pd.DataFrame:
    """Windows less those inside a window of another phase that starts before them (a ``forward``
    range run again inside the backward, as activation checkpointing does, or a loss computed
    inside the forward): they are part of that phase, not passes of their own. An optimizer step
    holds passes of its own when it runs a closure (``optimizer.step(closure)``, as PyTorch
    Lightning and L-BFGS do: the forward, loss and backward inside it are passes, the update is
    what the optimizer step's kernels are besides them)."""
    if windows.empty:
        return windows
    inside = np.zeros(len(windows), dtype=bool)
    names, pids = windows["name"].to_numpy(), windows["pid"].to_numpy()
    starts, ends = windows["start_ns"].to_numpy(), windows["end_ns"].to_numpy()
    for phase in pd.unique(names):
        holders = (names != phase) & ((names != "optimizer_step") | (phase not in CLOSURE_PHASES))
        for pid in pd.unique(pids[names == phase]):
            mine = np.flatnonzero((names == phase) & (pids == pid))
            others = np.flatnonzero(holders & (pids == pid))
            if not len(others):
                continue
            order = others[np.argsort(starts[others], kind="stable")]
            reach = np.maximum.accumulate(ends[order])
            # held by a window that starts earlier and ends no sooner, or starts with it and ends later
            before = np.searchsorted(starts[order], starts[mine], side="left") - 1
            with_it = np.searchsorted(starts[order], starts[mine], side="right") - 1
            inside[mine] = ((before >= 0) & (reach[np.maximum(before, 0)] >= ends[mine])) | \
                ((with_it >= 0) & (reach[np.maximum(with_it, 0)] > ends[mine]))
    return windows[~inside].reset_index(drop=True)


def _updates_after_closures(windows: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Optimizer-step windows that hold passes of their own (a closure: ``optimizer.step(closure)``,
    as PyTorch Lightning runs every step) start just after the last pass they hold ends: the update
    is what follows the closure, and the passes count as their own phases. A note says how many."""
    names = windows["name"].to_numpy()
    optimizer, passes = np.flatnonzero(names == "optimizer_step"), np.flatnonzero(np.isin(names, CLOSURE_PHASES))
    if not len(optimizer) or not len(passes):
        return windows
    starts, ends, pids = windows["start_ns"].to_numpy(), windows["end_ns"].to_numpy(), windows["pid"].to_numpy()
    updated = starts.copy()
    for pid in pd.unique(pids[optimizer]):
        mine = passes[pids[passes] == pid]
        mine = mine[np.argsort(starts[mine], kind="stable")]
        for row in optimizer[pids[optimizer] == pid]:
            first, stop = np.searchsorted(starts[mine], [starts[row], ends[row]], side="left")
            held = ends[mine[first:stop]]
            held = held[held <= ends[row]]
            if len(held):
                updated[row] = min(int(held.max()) + 1, int(ends[row]))
    closures = int((updated != starts).sum())
    if not closures:
        return windows
    notes.append("optimizer steps run their step's passes in a closure (`optimizer.step(closure)`, as PyTorch "
                 f"Lightning runs a step; {closures} of {len(optimizer)} optimizer step ranges): the forward, loss and "
                 "backward inside count as their own phases, and each optimizer step is what follows the last of them")
    return windows.assign(start_ns=updated)


def _resolve_ambiguous_step(own: pd.DataFrame, phase: np.ndarray) -> np.ndarray:
    """A range named ``step`` is the optimizer only when it starts after a backward ended inside
    the same enclosing range (the training step); otherwise it is not a phase."""
    ambiguous = np.flatnonzero((own["normal"].to_numpy() == AMBIGUOUS_OPTIMIZER) & (phase == "optimizer_step"))
    if not len(ambiguous):
        return phase
    backward = np.flatnonzero(phase == "backward")
    parents, starts = own["parent_id"].to_numpy(), own["start_ns"].to_numpy()
    ends, pids = own["end_ns"].to_numpy(), own["pid"].to_numpy()
    phase = phase.copy()
    for row in ambiguous:
        before = backward[(pids[backward] == pids[row]) & (parents[backward] == parents[row]) & (ends[backward] <= starts[row])]
        if not len(before):
            phase[row] = None
    return phase


def _outermost_per_phase(windows: pd.DataFrame) -> pd.DataFrame:
    """Windows less those nested inside another window of the same phase and process (a
    ``forward`` range inside a ``model_forward`` range holds the same kernels)."""
    if windows.empty:
        return windows
    group = windows["pid"].astype(str).to_numpy(dtype=object) + "|" + windows["name"].astype(str).to_numpy(dtype=object)
    nested = within_earlier(windows["start_ns"].to_numpy(), windows["end_ns"].to_numpy(), group.astype(str))
    return windows[~nested].sort_values("start_ns", kind="stable").reset_index(drop=True)


def _merge_overlapping(windows: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Phase windows with each window that overlaps an earlier one of the same phase and process
    merged into it (its end extended), so an overlapping pair counts as one pass; a note counts them."""
    if windows.empty or not _any_overlap(windows):
        return windows
    ordered = windows.sort_values(["pid", "name", "start_ns"], kind="stable")
    same_group = (ordered["pid"] == ordered["pid"].shift()) & (ordered["name"] == ordered["name"].shift())
    reach = ordered.groupby(["pid", "name"], sort=False, observed=True)["end_ns"].cummax().shift()
    overlaps = (same_group & (ordered["start_ns"] < reach)).to_numpy()
    if not overlaps.any():
        return windows
    merged = ordered[~overlaps].assign(
        end_ns=ordered.groupby(np.cumsum(~overlaps), sort=True)["end_ns"].max().to_numpy())
    phases = ", ".join(sorted(ordered.loc[overlaps, "name"].unique()))
    notes.append(f"{int(overlaps.sum())} phase ranges ({phases}) overlap an earlier range of the same phase in "
                 "their process; each was merged into it, so an overlapping pair counts as one pass")
    return merged.sort_values("range_id", kind="stable")


def _any_overlap(windows: pd.DataFrame) -> bool:
    """Whether a window starts before an earlier-starting window of its phase and process ends
    (the common answer, no, found on column arrays)."""
    phase = pd.factorize(windows["name"])[0]
    group = pd.factorize(windows["pid"])[0] * (phase.max() + 1) + phase
    starts, ends = windows["start_ns"].to_numpy(), windows["end_ns"].to_numpy()
    order = np.lexsort((starts, group))
    group, starts, ends = group[order], starts[order], ends[order]
    first = run_starts(group)
    return any((starts[a + 1:b] < np.maximum.accumulate(ends[a:b - 1])).any()
               for a, b in zip(first, np.r_[first[1:], len(group)]))


def _names_by_phase(windows: pd.DataFrame) -> dict[str, list[str]]:
    """Each phase's range names, one per family (:func:`name_families`); names that start with
    their iteration's number shown once, that number as ``<i>`` (``step_<i>_forward``) where it
    varies."""
    shown = {}
    for phase in PHASES:
        names = name_families(sorted(pd.unique(windows.loc[windows["name"] == phase, "range_name"])))
        if names:
            tagged = [name for name in names if ITERATION_TAG.match(normal_name(name))]
            families: dict[str, list[str]] = {}
            for name in tagged:
                families.setdefault(_phase_family(name), []).append(name)
            numbered = {family: ITERATION_NUMBER.sub("<i>", found[0]) if len(found) > 1 else found[0]  # one alone as is
                        for family, found in families.items()}
            shown[phase] = [name for name in names if name not in tagged] + sorted(set(numbered.values()))
    return shown


def _pytorch_phases(labels: pd.DataFrame) -> pd.DataFrame:
    """Phase windows from PyTorch's function labels (``--pytorch=functions-trace``)."""
    if labels.empty:
        return pd.DataFrame(columns=WINDOW_COLUMNS)
    full = labels.reset_index(drop=True)
    frames = []
    modules = full[full["name"].str.match(MODULE_CALL)]
    if len(modules):
        frames.append(_windows(_model_calls(modules), "forward"))
    for phase, pattern in (("backward", AUTOGRAD_BACKWARD), ("optimizer_step", OPTIMIZER_STEP), ("loss", TORCH_LOSS)):
        rows = full[full["name"].str.contains(pattern)]
        rows = _outermost_by_time(rows)
        frames.append(_windows(rows, phase))
    windows = pd.concat([f for f in frames if len(f)] or [pd.DataFrame(columns=WINDOW_COLUMNS)], ignore_index=True)
    return windows.sort_values("start_ns", kind="stable").reset_index(drop=True)


def _outermost_by_time(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows not inside another of ``rows`` of the same process (by time)."""
    if rows.empty:
        return rows
    return rows[~within_earlier(rows["start_ns"].to_numpy(), rows["end_ns"].to_numpy(), rows["pid"].to_numpy())]


def _model_calls(modules: pd.DataFrame) -> pd.DataFrame:
    """The model's forward calls: outermost module calls that hold other module calls (a loss
    module called on its own holds none). Models of different sizes in one run (a sweep over
    depths) are all models."""
    outer = _outermost_by_time(modules)
    counts = _contains(outer, modules)
    return outer[counts >= 2] if len(counts) else outer


# The columns of the ops :func:`_kernel_phases` reads.
KERNEL_PHASE_COLUMNS = ("pid", "launch_tid", "launch_start_ns", "demangled_name", "op_kind")


def _after_a_ranged_backward(found: pd.DataFrame, every: pd.DataFrame, phases: pd.DataFrame) -> pd.DataFrame:
    """Of the phase windows ``found`` from the kernels (optimizer runs, where the ranges name every
    pass but the update), those whose backward (the run of autograd-thread launches before them,
    of ``every`` window the kernels give) starts inside a ranged backward of their process: the
    update of a ranged iteration, not a run in iterations the script left unranged."""
    keep = np.zeros(len(found), dtype=bool)
    backwards = every[every["name"].to_numpy() == "backward"]
    ranged = phases[phases["name"].to_numpy() == "backward"]
    for pid, rows in found.groupby("pid", sort=False).indices.items():
        kernel_starts = np.sort(backwards.loc[backwards["pid"].to_numpy() == pid, "start_ns"].to_numpy())
        before = np.searchsorted(kernel_starts, found["start_ns"].to_numpy()[rows], side="left") - 1
        starts = np.where(before >= 0, kernel_starts[np.maximum(before, 0)], -1)
        mine = ranged[ranged["pid"].to_numpy() == pid].sort_values("start_ns", kind="stable")
        r_start, r_reach = mine["start_ns"].to_numpy(), np.maximum.accumulate(mine["end_ns"].to_numpy())
        at = np.searchsorted(r_start, starts, side="right") - 1  # the last ranged backward starting no later
        keep[rows] = (starts >= 0) & (at >= 0) & (starts <= r_reach[np.maximum(at, 0)]) if len(mine) else False
    return found[keep]


def _kernel_phases(ops: pd.DataFrame, first_id: int, waits: pd.DataFrame | None = None) -> pd.DataFrame:
    """Phase windows from kernel launches alone: backward = each run of launches from a thread
    other than the main one, optimizer = the run of ``multi_tensor_apply_kernel`` launches after
    it (where there is none, the update the forwards tell, :func:`_updates_before_forwards`, or
    the program's ``waits`` for the GPU, :func:`_waits` and :func:`_updates_before_waits`, where
    known), forward = from the main thread's first kernel launch after the previous step (a copy
    of the batch to the GPU before it is not the model's) to the backward's first launch."""
    rows = []
    launched = ops[ops["launch_start_ns"].to_numpy() >= 0]
    for pid, mine in launched.groupby("pid", sort=True):
        mine = mine.sort_values("launch_start_ns", kind="stable")
        tids = mine["launch_tid"].to_numpy()
        main = _main_thread(pid, tids)
        times = mine["launch_start_ns"].to_numpy()
        names = mine["demangled_name"].astype(str).to_numpy()
        kernel = (mine["op_kind"] == "kernel").to_numpy()
        other = tids != main
        if not other.any():
            continue
        edges = np.flatnonzero(np.diff(np.r_[0, other.astype(np.int8), 0]))
        runs = list(zip(edges[::2], edges[1::2] - 1))
        runs = _merge_close_runs(runs, other)
        previous_end, passes = -1, []
        for first, last in runs:
            forward = np.flatnonzero(~other[:first] & kernel[:first] & (times[:first] > previous_end))
            optimizer = _optimizer_run(names, other, last + 1)
            passes.append([forward, first, last, optimizer])
            previous_end = times[optimizer[1] if optimizer is not None else last]
        if all(optimizer is None for *_, optimizer in passes):
            _updates_before_forwards(passes, names, ~other & kernel)
        if all(optimizer is None for *_, optimizer in passes) and waits is not None:
            _updates_before_waits(passes, names, ~other & kernel, times, _waits_of(waits, pid))
        for forward, first, last, optimizer in passes:
            if len(forward):  # up to the backward's first launch: the loss's launches are the forward's
                rows.append((pid, main, "forward", times[forward[0]], times[first] - 1))
            rows.append((pid, tids[first], "backward", times[first], times[last]))
            if optimizer is not None:
                rows.append((pid, main, "optimizer_step", times[optimizer[0]], times[optimizer[1]]))
    windows = _made_windows(rows, ["pid", "tid", "name", "start_ns", "end_ns"])
    windows = windows.assign(range_id=np.arange(first_id, first_id + len(windows), dtype=np.int64),
                             range_name=windows["name"].map(lambda p: f"({p}, from kernels)"), parent_id=-1)
    return windows[WINDOW_COLUMNS].sort_values("start_ns", kind="stable").reset_index(drop=True)


def _main_thread(pid: int, tids: np.ndarray) -> int:
    """A process's main thread among the threads of its launches: the one whose id is the
    process's, else the one that launched most."""
    return pid if (tids == pid).any() else pd.Series(tids).mode().iat[0]


def _forwards_from_model_ranges(phases: pd.DataFrame, own: pd.DataFrame) -> pd.DataFrame:
    """Forward windows found from the kernels, each started at the first of the user's ranges that
    mark the model: a forward from the kernels starts at the first launch after the previous
    iteration, so it also holds what ran between (an optimizer that is not fused, a gradient
    sync, a data scatter); a family of ranges that starts in every forward window of a process
    (``embed``, ``layer<i>``) marks where the model's forward begins, unless it is attention or
    lies in an attention range (:func:`_inside_the_model`: the embedding and the first layer's
    projections run before the first attention range). A window reaches back to the end of the phase before it (the first to
    the capture's start): no launch lies between."""
    forwards = np.flatnonzero(phases["name"].to_numpy() == "forward")
    if not len(forwards) or own.empty:
        return phases
    starts, ends = phases["start_ns"].to_numpy().copy(), phases["end_ns"].to_numpy()
    pids, own_pids = phases["pid"].to_numpy(), own["pid"].to_numpy()
    attention = per_name(own["name"], _inside_the_model, dtype=bool)
    while (inside := ~attention & np.isin(own["parent_id"].to_numpy(), own["range_id"].to_numpy()[attention])).any():
        attention |= inside  # and the ranges inside attention ranges, at any depth
    for pid in np.unique(pids[forwards]):
        rows = forwards[pids[forwards] == pid]
        windows = np.flatnonzero(pids == pid)  # in time order, none overlapping: the previous one ended last
        previous = np.searchsorted(windows, rows) - 1
        previous_end = np.where(previous >= 0, ends[windows[np.maximum(previous, 0)]] + 1, np.iinfo(np.int64).min)
        mine = own[(own_pids == pid) & ~attention]
        first = np.full(len(rows), np.iinfo(np.int64).max)
        for _, family in mine.groupby("family", sort=False):
            times = np.sort(family["start_ns"].to_numpy())
            at = np.searchsorted(times, previous_end, side="left")
            inside = (at < len(times)) & (times[np.minimum(at, len(times) - 1)] <= ends[rows])
            if inside.all():
                first = np.minimum(first, times[at])
        found = first < np.iinfo(np.int64).max
        starts[rows[found]] = first[found]
    return phases.assign(start_ns=starts)


# A range of attention by its name's parts (``scaled dot product attention``, ``self_attn``, ``sdpa``).
ATTENTION_NAME = re.compile(r"(^|_)(attn|attention|sdpa)(_|$)")


def _inside_the_model(name: str) -> bool:
    """Whether a range of this name runs inside the model's forward, never at its start:
    attention or one of its parts."""
    normal = normal_name(name)
    return bool(ATTENTION_NAME.search(normal)) or _region_of_name(name, normal) is not None


def _merge_close_runs(runs: list[tuple[int, int]], other: np.ndarray) -> list[tuple[int, int]]:
    """Backward runs split by a few main-thread launches (under 1% of the run) are one run."""
    merged: list[tuple[int, int]] = []
    for first, last in runs:
        if merged and first - merged[-1][1] - 1 <= max(2, (merged[-1][1] - merged[-1][0]) // 100):
            merged[-1] = (merged[-1][0], last)
        else:
            merged.append((first, last))
    return merged


# The fewest backward passes :func:`_updates_before_forwards` reads: a first forward and two later
# ones alike.
UPDATE_PREFIX_PASSES = 3
# What a model's forward launches at least, against its backward (which launches about one to two
# times as many): a common end of the forwards this long is the model's, not a loss's last kernels.
MODEL_SHARE_OF_BACKWARD = 0.25


def _waits(host_calls: pd.DataFrame | None) -> pd.DataFrame:
    """The program's waits for the GPU (``torch.cuda.synchronize()``, ``.item()``) among
    ``host_calls`` (:attr:`analysis.load.Trace.host_calls`): ``pid`` and ``start_ns``, in time
    order; none where the calls are not known."""
    if host_calls is None:
        return pd.DataFrame({"pid": np.empty(0, dtype=np.int64), "start_ns": np.empty(0, dtype=np.int64)})
    return host_calls.loc[(host_calls["call"] == "sync").to_numpy(), ["pid", "start_ns"]]


def _waits_of(waits: pd.DataFrame, pid: int) -> np.ndarray:
    """The start times of process ``pid``'s waits for the GPU among ``waits`` (:func:`_waits`), sorted."""
    return waits.loc[waits["pid"].to_numpy() == pid, "start_ns"].to_numpy()


# What a hand-written update launches, against the backward before it: it touches every parameter,
# as the backward does, with a few kernels each (a data copy or a random draw before a wait is none).
UPDATE_SHARE_OF_BACKWARD = 0.1


def _updates_before_waits(passes: list[list], names: np.ndarray, main_kernel: np.ndarray, times: np.ndarray,
                         waits: np.ndarray) -> None:
    """Where no fused optimizer kernel follows any backward and the forwards do not tell the update
    (:func:`_updates_before_forwards`), the updates that the program's waits for the GPU
    (``waits``, sorted times) tell: where a wait lies among a forward's kernels (the main thread's
    since the last backward), those after the last such wait that leaves half to twice as many as
    the first forward's after it are the forward's (the model's forward: not the loss's last kernels
    after a ``.item()`` or a wait between the forward and the backward, nor an update cut by a wait
    inside it), and those before it the last backward's update if they are at least
    :data:`UPDATE_SHARE_OF_BACKWARD` of its kernels (a script that steps its own optimizer, then
    synchronizes). The last backward's update is as many of the main thread's kernels after it as
    the update before launched, where they are alike (:func:`_alike_launches`; a wait inside an
    update, as a gradient clipping's ``.item()``, cuts none). ``passes`` ([forward positions,
    backward run's first and last position, optimizer run]) are changed in place."""
    for before, this in zip(passes, passes[1:]):
        forward = this[0]
        between = waits[(waits > times[forward[0]]) & (waits < times[this[1]])] if len(forward) else waits[:0]
        after = np.searchsorted(times[forward], between, side="right")  # the forward's kernels before each wait
        model = len(forward) - after  # the model's kernels after each wait: half to twice the first forward's
        split = np.flatnonzero((2 * model >= len(passes[0][0])) & (model <= 2 * len(passes[0][0])))
        if not len(split):
            continue
        model, update = forward[after[split[-1]]:], forward[:after[split[-1]]]
        if len(update) >= UPDATE_SHARE_OF_BACKWARD * (before[2] - before[1] + 1):
            before[3], this[0] = (int(update[0]), int(update[-1])), model
    if len(passes) < 2 or passes[-2][3] is None:
        return
    last, (first_update, last_update) = passes[-1][2], passes[-2][3]
    previous = np.flatnonzero(main_kernel[first_update:last_update + 1]) + first_update
    update = (np.flatnonzero(main_kernel[last + 1:]) + last + 1)[:len(previous)]
    if len(update) and _alike_launches(names[update], names[previous]):
        passes[-1][3] = (int(update[0]), int(update[-1]))


# The share of an update's kernels the last iteration's must launch by the same names, one by one:
# a kernel's vectorized or plain variant follows its tensors' alignment, which may change.
ALIKE_LAUNCH_SHARE = 0.9


def _alike_launches(these: np.ndarray, those: np.ndarray) -> bool:
    """Whether two runs of kernel names are one sequence: as many, and at least
    :data:`ALIKE_LAUNCH_SHARE` of them alike position by position."""
    return len(these) == len(those) > 0 and (these == those).mean() >= ALIKE_LAUNCH_SHARE


def _updates_before_forwards(passes: list[list], names: np.ndarray, main_kernel: np.ndarray) -> None:
    """Where no fused optimizer kernel follows any backward (a hand-written optimizer, a loop over
    the parameters), the update told by the forwards' kernels: when every forward after the first
    launches the same kernels, which end with at least half of the first forward's (its end: the
    model's kernels, a set-up before them once) or with at least :data:`MODEL_SHARE_OF_BACKWARD`
    of the first backward's (a set-up longer than the model), what comes before that end is the previous
    iteration's update (``optimizer_step``), not the forward's; the last backward's own update is
    that sequence again right after it (:func:`_alike_launches`), and none is where that sequence holds a communication kernel
    (a gradient sync). ``passes`` ([forward positions, backward run's first and last position,
    optimizer run]) are changed in place; ``main_kernel``: which positions are kernels launched
    from the main thread."""
    if len(passes) < UPDATE_PREFIX_PASSES:
        return
    first, later = names[passes[0][0]], names[passes[1][0]]
    if any(len(forward) != len(later) or not np.array_equal(names[forward], later) for forward, *_ in passes[2:]):
        return
    shorter = min(len(first), len(later))
    differ = np.flatnonzero(first[len(first) - shorter:][::-1] != later[len(later) - shorter:][::-1])
    shared = int(differ[0]) if len(differ) else shorter  # the common end's length
    extra = len(later) - shared
    model = 2 * shared >= len(first) or shared >= MODEL_SHARE_OF_BACKWARD * (passes[0][2] - passes[0][1] + 1)
    if extra <= 0 or not model or any(map(is_communication, np.unique(later[:extra].astype(str)))):
        return  # (a gradient sync before the next forward is no update)
    last = passes[-1][2]
    after = np.flatnonzero(main_kernel[last + 1:])[:extra] + last + 1
    for before, this in zip(passes, passes[1:]):
        before[3], this[0] = (int(this[0][0]), int(this[0][extra - 1])), this[0][extra:]
    if _alike_launches(names[after], later[:extra]):
        passes[-1][3] = (int(after[0]), int(after[-1]))


def _optimizer_run(names: np.ndarray, other: np.ndarray, start: int) -> tuple[int, int] | None:
    """(first, last) positions of the optimizer's fused kernels after a backward run, before the
    next backward run; None when it launches none."""
    stop = start + np.argmax(other[start:]) if other[start:].any() else len(names)
    fused = np.flatnonzero(np.char.find(names[start:stop].astype(str), OPTIMIZER_KERNEL) >= 0) + start
    return (int(fused[0]), int(fused[-1])) if len(fused) else None


def _training_forwards(phases: pd.DataFrame) -> np.ndarray:
    """Whether each phase window is a training forward: a forward that a backward of its process
    takes, each backward (in start order) taking the latest forward that started before it and
    that no backward took yet. A forward no backward takes (an evaluation pass, a warm-up forward
    alone) is an inference one. Last in, first out, so a pipeline schedule's forwards of several
    micro-batches ahead of their backwards (1F1B, GPipe) are all training ones, and a forward right
    before a backward always is."""
    names = phases["name"].to_numpy()
    if not (names == "backward").any():  # a forward-only run: every forward is the pass
        return names == "forward"
    training = np.zeros(len(phases), dtype=bool)
    starts = phases["start_ns"].to_numpy()
    for _, rows in phases.groupby("pid", sort=False).indices.items():
        rows = rows[np.argsort(starts[rows], kind="stable")]
        rows = rows[np.isin(names[rows], ("forward", "backward"))]
        is_forward = names[rows] == "forward"
        followed = np.append(~is_forward[1:], False)  # the next forward or backward is a backward
        if (followed | ~is_forward).all():  # each forward taken by the backward right after it
            training[rows[is_forward]] = True
            continue
        waiting: list[int] = []  # forwards no backward took yet, in start order
        for row, forward in zip(rows.tolist(), is_forward.tolist()):
            if forward:
                waiting.append(row)
            elif waiting:
                training[waiting.pop()] = True
    return training


def _measured_after_training_warmup(phases: pd.DataFrame, training: np.ndarray, own: pd.DataFrame,
                                    notes: list[str]) -> np.ndarray:
    """The forwards that no backward takes but that are a forward-only benchmark's measured passes:
    in a process whose training forwards all lie in ranges named warm-up (a script that warms up
    with training iterations, then times forwards alone), its other forwards outside those ranges,
    after the first of them. These start steps as training forwards do, instead of being
    evaluation passes beside training steps; a note says so."""
    found = np.zeros(len(phases), dtype=bool)
    warm = own[_named(WARMUP_FAMILY, own["name"])]
    if not training.any() or warm.empty:
        return found
    forward = (phases["name"] == "forward").to_numpy()
    in_warmup = _inside_any(phases, warm)
    pids = phases["pid"].to_numpy()
    for pid in np.unique(pids[training]):
        mine = pids == pid
        if not in_warmup[mine & training].all():
            continue
        after = phases["start_ns"].to_numpy() > phases["end_ns"].to_numpy()[mine & training].max()
        found |= mine & forward & ~training & ~in_warmup & after
    if found.any():
        holding = _outermost_by_time(warm[_contains(warm, phases[training]) > 0])
        shown = ", ".join(f"`{family_label(n)}`" for n in name_families(sorted(set(holding["name"]))))
        notes.append(f"every training iteration lies in {shown}, and {int(found.sum())} forward passes that no backward "
                     "takes follow it: a forward-only benchmark warmed up by training, its forwards measured")
    return found


# ----------------------------------------------------------------------------- steps

def _contains(outer: pd.DataFrame, inner: pd.DataFrame) -> np.ndarray:
    """For each row of ``outer``, how many rows of ``inner`` (same process) start inside it, in
    ``[start, end)``: a range that starts where another ends belongs to the next."""
    counts = np.zeros(len(outer), dtype=np.int64)
    if inner.empty or outer.empty:
        return counts
    inner_pids, inner_starts = inner["pid"].to_numpy(), inner["start_ns"].to_numpy()
    starts, ends, pids = outer["start_ns"].to_numpy(), outer["end_ns"].to_numpy(), outer["pid"].to_numpy()
    for pid in np.unique(pids):
        rows = np.flatnonzero(pids == pid)
        times = np.sort(inner_starts[inner_pids == pid])
        counts[rows] = np.searchsorted(times, ends[rows], side="left") - np.searchsorted(times, starts[rows], side="left")
    return counts


def _holding_whole(outer: pd.DataFrame, inner: pd.DataFrame) -> np.ndarray:
    """For each row of ``outer``, whether rows of ``inner`` (same process) start inside it and
    every one of them also ends inside it: a step holds its phases whole, and a short range that
    a phase found from the kernels merely starts in (a gradient sync just before the next
    iteration's launches) holds none."""
    whole = np.zeros(len(outer), dtype=bool)
    if inner.empty or outer.empty:
        return whole
    inner_pids = inner["pid"].to_numpy()
    starts, ends, pids = outer["start_ns"].to_numpy(), outer["end_ns"].to_numpy(), outer["pid"].to_numpy()
    for pid in np.unique(pids):
        rows = np.flatnonzero(pids == pid)
        mine = inner_pids == pid
        order = np.argsort(inner["start_ns"].to_numpy()[mine], kind="stable")
        inner_starts, inner_ends = inner["start_ns"].to_numpy()[mine][order], inner["end_ns"].to_numpy()[mine][order]
        first = np.searchsorted(inner_starts, starts[rows], side="left")
        last = np.searchsorted(inner_starts, ends[rows], side="left")
        for k, row in enumerate(rows):
            whole[row] = last[k] > first[k] and inner_ends[first[k]:last[k]].max() <= ends[row]
    return whole


def _inside_any(rows: pd.DataFrame, windows: pd.DataFrame) -> np.ndarray:
    """Whether each row starts inside one of ``windows`` (same process)."""
    from analysis.core.attribution import ops_in_windows
    starts = pd.DataFrame({"pid": rows["pid"].to_numpy(), "launch_start_ns": rows["start_ns"].to_numpy()})
    return ops_in_windows(starts, windows) >= 0


def _mostly_inside(rows: pd.DataFrame, windows: pd.DataFrame) -> np.ndarray:
    """Whether more than half of each row's span lies inside ``windows`` (same process; a row of
    no length: whether it starts inside one). A step made from the kernels begins with the set-up
    launches before its forward, which may precede the range around the measured loop."""
    pids, starts, ends = (rows[c].to_numpy() for c in ("pid", "start_ns", "end_ns"))
    covered = np.zeros(len(rows), dtype=np.int64)
    for pid in np.unique(pids):
        mine = pids == pid
        theirs = windows[windows["pid"].to_numpy() == pid]
        covered[mine] = covered_ns(starts[mine], ends[mine], theirs["start_ns"].to_numpy(), theirs["end_ns"].to_numpy())
    return _most_of_span(starts, ends, covered, _inside_any(rows, windows))


def _most_of_span(starts: np.ndarray, ends: np.ndarray, covered: np.ndarray, starts_inside: np.ndarray) -> np.ndarray:
    """Whether more than half of each span is ``covered`` (ns), or, for a span of no length,
    whether it starts inside (``starts_inside``)."""
    return np.where(ends > starts, 2 * covered > ends - starts, starts_inside)


def _overlapping(windows: pd.DataFrame) -> bool:
    """Whether two of ``windows`` of one process overlap (steps follow each other; nested ranges
    of one name are not steps)."""
    order = np.lexsort((windows["start_ns"].to_numpy(), windows["pid"].to_numpy()))
    pids, starts, ends = (windows[c].to_numpy()[order] for c in ("pid", "start_ns", "end_ns"))
    return bool(((pids[1:] == pids[:-1]) & (starts[1:] < ends[:-1])).any())


def _steps(own: pd.DataFrame, phases: pd.DataFrame, ops: pd.DataFrame, names: RangeNames, notes: list[str]
           ) -> tuple[pd.DataFrame | None, str, pd.DataFrame, bool]:
    """Step windows from the user's ranges (None when no range family is one of steps), the rule
    that found them, the ranges around several phase windows (containers; with several runs, the
    runs' ranges), and whether several families are steps, each of another run (configuration).
    A family of one range per process around more than one pass is the whole run, not a step
    (:func:`_whole_run`)."""
    if names.step_prefix is not None:
        return (*_prefixed_steps(own, names, notes), False)
    candidates = own[~own["range_id"].isin(phases["range_id"]) & ~own["name"].isin(phases["range_name"])
                     & ~per_name(own["name"], _names_several_phases, dtype=bool)]
    if phases.empty and (unphased := _unphased_steps(candidates, ops)) is not None:
        return (*unphased, own.iloc[:0], False)
    if candidates.empty or phases.empty:
        why = "no range holds the phases" if len(phases) else (
            "no phase found: no range named like a phase, no PyTorch labels, and no kernels launched from a second "
            "thread (PyTorch's autograd thread)")
        return None, why, own.iloc[:0], False
    forwards = _contains(candidates, phases[phases["name"] == "forward"])
    backwards = _contains(candidates, phases[phases["name"] == "backward"])
    optimizers = _contains(candidates, phases[phases["name"] == "optimizer_step"])
    held = _contains(candidates, phases)
    stems = candidates["family"].to_numpy()
    pass_named = per_name(candidates["name"], _names_a_pass, dtype=bool)
    families, accumulating, several_models = {}, set(), {}
    for stem in pd.unique(stems):
        rows = np.flatnonzero(stems == stem)
        if pass_named[rows].all() or (held[rows] == 0).mean() > 0.5 or _overlapping(candidates.iloc[rows]) \
                or (~_holding_whole(candidates.iloc[rows], phases)).mean() > 0.5:
            continue
        if (forwards[rows] <= 1).all() and (backwards[rows] <= 1).all():
            if _updating_every_few(rows, candidates, backwards, optimizers):
                notes.append(f"`{family_label(candidates['name'].iat[rows[0]])}` ranges are micro-batches, not steps: "
                             "one pass each, an optimizer step in every few (gradient accumulation)")
                continue
            if (why := _whole_run(candidates.iloc[rows], phases, ops)) is not None:
                notes.append(f"`{family_label(candidates['name'].iat[rows[0]])}` is no step: {why}")
                continue
            families[stem] = rows
        elif ((optimizers[rows] == 1) & (backwards[rows] >= forwards[rows]))[held[rows] > 0].all():
            # gradient accumulation: passes, each with its backward, then one update (forwards with no backward
            # after one training pass are a benchmark's timed calls, not micro-batches)
            families[stem] = rows
            accumulating.add(stem)
        elif not _named(WARMUP_FAMILY, candidates["name"].iloc[rows[:1]])[0] \
                and (models := _passes_per_model(candidates.iloc[rows[held[rows] > 0]], phases)) > 1:
            # (a range named warm-up around several iterations is no step of several models: it holds the warm-up)
            families[stem] = rows
            several_models[stem] = models
    micro_batches = _micro_batches(candidates, families, accumulating, optimizers)
    for stem in {*micro_batches, *_part_families(candidates, families)}:  # a family may be both
        families.pop(stem)
    if not families:
        return None, "no range holds one pass of the phases", _containers(candidates, held), False
    step_rows = np.concatenate(list(families.values()))
    nested = _contains(candidates.iloc[step_rows], candidates.iloc[step_rows]) > 1
    outer_stems = {stems[r] for r, is_outer in zip(step_rows, nested) if is_outer}
    parts = {stem: _parts_of_steps(candidates, families, stem, optimizers) for stem in outer_stems}
    for stem in sorted(outer_stems):  # a family holding steps of another family is a container, but where
        # its ranges hold one of theirs each and the optimizer steps they lack, those are its parts
        if parts[stem]:
            for part in parts[stem]:
                families.pop(part, None)
        elif all(nested[np.flatnonzero(stems[step_rows] == stem)]):
            families.pop(stem, None)  # already gone where it is a part of another's
        elif stem in families:  # only some of its ranges hold another family's (`measured_step` around
            # `training` or `inference`): the same steps, marked by kind; the outer family holds them all
            for inner in [other for other in families if other != stem and other not in outer_stems]:
                if _inside_any(candidates.iloc[families[inner]], candidates.iloc[families[stem]]).all():
                    families.pop(inner)
    families = _one_family_across_numbers(families, candidates)
    warmup = {stem for stem, rows in families.items() if _named(WARMUP_FAMILY, candidates["name"].iloc[rows[:1]])[0]}
    plain = [stem for stem in families if stem not in warmup]
    if not plain:  # ranges around the warm-up iterations alone (`warmup_<i>`, or one `warmup` around one)
        return None, "only warm-up iterations are in ranges of their own", _containers(candidates, held), False
    if len(plain) > 1:
        shown = ", ".join(f"`{family_label(candidates['name'].iat[families[s][0]])}`" for s in plain[:4])
        runs = candidates.iloc[np.concatenate([families[s] for s in plain])]
        return None, f"ranges of {len(plain)} different runs ({shown}): the whole capture is analyzed", runs, True
    rows = np.sort(np.concatenate(list(families.values())))
    steps = _windows(candidates.iloc[rows], "step")
    steps["name"] = _step_labels(steps)
    steps = _with_trailing_phases(steps, phases, notes)
    if steps is None:  # the passes pile up after one of them: they hold no pass of the run's loop
        return None, "no range holds one pass of the phases", _containers(candidates, held), False
    containers = _containers(candidates, held)
    containers = containers[~containers["range_id"].isin(steps["range_id"])]
    shown = shown_families(steps["range_name"])
    rule = f"the ranges {shown} each hold one pass of the phases"
    if accumulating & set(families):
        inner = sorted(set(candidates["name"].iloc[np.concatenate(list(micro_batches.values()))])) if micro_batches else []
        passes = f" (micro-batches {', '.join(f'`{family_label(n)}`' for n in name_families(inner))})" if inner else ""
        rule = f"the ranges {shown} each hold one optimizer step after several forward and backward passes{passes}"
    if (models := [several_models[stem] for stem in families if stem in several_models]):
        forwards = ", ".join(f"`{n}`" for n in sorted(set(phases.loc[phases["name"] == "forward", "range_name"])))
        rule = f"the ranges {shown} each hold one pass of the phases per model ({models[0]} models: forwards {forwards})"
    return steps.assign(measured=True), rule, containers, False


def _with_trailing_phases(steps: pd.DataFrame, phases: pd.DataFrame, notes: list[str]) -> pd.DataFrame | None:
    """Step ranges that leave out a phase every one of whose windows lies after a step and before
    the next (``train_step`` around the forward and backward, ``optimizer`` after it): each step
    runs on to the end of those of its windows that follow it, so that they are its iteration's and
    measured with it. A note names the phases. A phase with a window inside a step stays as is.

    None where such a phase follows fewer than half of a process's steps and several of its windows
    follow one of them: the ranges (``full_steps`` around each warm-up iteration, the measured
    passes after the last of them in a range of their own) hold no pass of the run's loop, and a
    note says so."""
    inside = _inside_any(phases, steps)
    trailing = [name for name in pd.unique(phases["name"]) if not inside[(phases["name"] == name).to_numpy()].any()]
    if not trailing:
        return steps
    ends = steps["end_ns"].to_numpy().copy()
    extended: set[str] = set()  # the range names of the windows a step now holds
    for pid, rows in steps.groupby("pid", sort=False).indices.items():
        rows = rows[np.argsort(steps["start_ns"].to_numpy()[rows], kind="stable")]
        starts = steps["start_ns"].to_numpy()[rows]
        following = np.append(starts[1:], np.iinfo(np.int64).max)
        mine = phases[(phases["pid"].to_numpy() == pid) & phases["name"].isin(trailing).to_numpy()]
        begins = mine["start_ns"].to_numpy()
        at = np.searchsorted(starts, begins, side="right") - 1  # the last step that starts before each
        follows = (at >= 0) & (begins < following[np.maximum(at, 0)]) & (ends[rows[np.maximum(at, 0)]] < begins)
        for phase in trailing:
            after = np.bincount(at[follows & (mine["name"] == phase).to_numpy()], minlength=len(rows))
            if 2 * (after > 0).sum() < len(rows) and after.max() > 1:
                shown = f"`{family_label(str(steps['range_name'].iat[rows[0]]))}`"
                notes.append(f"{shown} ranges are no steps: the {phase} passes after them follow only "
                             f"{(after > 0).sum()} of the {len(rows)}, up to {after.max()} after one")
                return None
        for step, end, name in zip(at[follows], mine["end_ns"].to_numpy()[follows], mine["range_name"].to_numpy()[follows]):
            ends[rows[step]] = max(ends[rows[step]], end)
            extended.add(str(name))
    if not extended:
        return steps
    shown = ", ".join(f"`{family_label(name)}`" for name in name_families(sorted(extended)))
    notes.append(f"the step ranges leave out {shown}, which follows each of them: each step runs on to its end, "
                 "so that it is measured with its step")
    return steps.assign(end_ns=ends)


def _passes_per_model(ranges: pd.DataFrame, phases: pd.DataFrame) -> int:
    """k when each of ``ranges`` holds k >= 2 forward, backward and optimizer-step windows, the k of
    each phase all of different names (``D_forward`` and ``G_forward``: a step that trains k
    models, each with its own passes and optimizer); 0 otherwise. A loop of k alike passes, of one
    name, is k steps, not one."""
    counts = set()
    for phase in ("forward", "backward", "optimizer_step"):
        windows = phases[phases["name"] == phase]
        counts |= set(_contains(ranges, windows).tolist())
        named = sum((_contains(ranges, windows[windows["range_name"] == name]) > 0).astype(np.int64)
                    for name in pd.unique(windows["range_name"]))
        counts |= set(np.atleast_1d(named).tolist())
    return counts.pop() if len(counts) == 1 and len(ranges) and min(counts) > 1 else 0


def _parts_of_steps(candidates: pd.DataFrame, families: dict[str, np.ndarray], outer: str,
                    optimizers: np.ndarray) -> list[str]:
    """The families of step candidates that are parts of ``outer``'s ranges, not steps: each lies
    inside them, one range to each, and they hold fewer optimizer steps (``Forward/Backward Pass``
    inside ``Epoch <i>``, whose optimizer step runs after it); empty when any family inside is no
    such part."""
    rows = families[outer]
    inner = [stem for stem, other in families.items()
             if stem != outer and _inside_any(candidates.iloc[other], candidates.iloc[rows]).all()]
    one_each = all((_contains(candidates.iloc[rows], candidates.iloc[families[stem]]) <= 1).all() for stem in inner)
    fewer = all(optimizers[families[stem]].sum() < optimizers[rows].sum() for stem in inner)
    return inner if inner and one_each and fewer else []


# Where no phase is found (an inference or benchmark loop), a family of the user's ranges is the
# steps when, in a process, at least this many of them follow one another and together launch at
# least this share of its GPU time (kernels, copies and fills).
UNPHASED_STEPS_MIN = 3
UNPHASED_STEPS_SHARE = 0.5


def _unphased_steps(candidates: pd.DataFrame, ops: pd.DataFrame) -> tuple[pd.DataFrame, str] | None:
    """Steps of a run in which no phase is found, and the rule that found them, or None: the one
    family of ``candidates`` (the user's ranges) that is named like steps (``step``, ``iter``…) or
    indexed in the order it runs (``generate_0``, ``generate_1``…), not like blocks, warm-up or a
    measured region; whose ranges never overlap, each launch kernels, are held by no other range
    that holds only one of them (a part of something larger), and, in some process, number at
    least :data:`UNPHASED_STEPS_MIN`; together they launch :data:`UNPHASED_STEPS_SHARE` of their
    processes' GPU time. The ops are read where they are: no copy of their table per family."""
    from analysis.core.attribution import ops_in_windows
    pids, durations = ops["pid"].to_numpy(), ops["dur_ns"].to_numpy()
    found = {}
    for stem, rows in candidates.groupby("family", sort=True).indices.items():
        family = candidates.iloc[rows].sort_values(["pid", "start_ns"], kind="stable")
        names = family["name"].to_numpy(dtype=object)
        if BLOCK_FAMILY.fullmatch(stem) or _named(WARMUP_FAMILY, names[:1])[0] or MEASURED_FAMILY.fullmatch(stem) \
                or _overlapping(family) or family["pid"].value_counts().max() < UNPHASED_STEPS_MIN:
            continue
        if not STEP_FAMILY.fullmatch(stem) and not _indexed_in_order(family):
            continue
        others = candidates[candidates["family"].to_numpy() != stem]
        if (_contains(others[_holding_whole(others, family)], family) == 1).any():
            continue
        holder = ops_in_windows(ops, family.reset_index(drop=True))  # -1 for the ops of other processes
        launched = np.bincount(holder[holder >= 0], minlength=len(family))
        held_ns = durations.sum(where=holder >= 0, dtype=np.int64)
        processes_ns = durations.sum(where=np.isin(pids, family["pid"].unique()), dtype=np.int64)
        if (launched == 0).any() or held_ns < UNPHASED_STEPS_SHARE * processes_ns:
            continue
        found[stem] = family
    if len(found) != 1:
        return None
    (family,) = found.values()
    steps = _windows(family, "step")
    steps["name"] = _step_labels(steps)
    shown = shown_families(steps["range_name"])
    return steps.assign(measured=True), (f"no phase found; the ranges {shown} follow one another and launch most of "
                                         "the kernel time, each one pass of the run's work")


# The numbers of a name, which an outer loop's index puts inside a step family's stem (``epoch0_step``).
NUMBERS = re.compile(r"\d+")


def _one_family_across_numbers(families: dict[str, np.ndarray], candidates: pd.DataFrame) -> dict[str, np.ndarray]:
    """Step families whose stems differ only in one number that counts up from 0 or 1 in time
    order (``epoch0_step<i>``, ``epoch1_step<i>``; ``Epoch 1 Batch <i>``: an outer loop's index
    inside the name), or that each lie in processes of their own (``rank0_step<i>``,
    ``rank1_step<i>``: the rank in the name, whichever starts first), as one family, keyed by the
    first one's stem. Numbers that name configurations in one process (``attn d=16 s=256
    iter=<i>``, ``d=64``) count no loop: those families stay apart, runs of different work."""
    groups: dict[str, list[str]] = {}
    for stem in families:
        groups.setdefault(NUMBERS.sub("#", stem), []).append(stem)
    merged = dict(families)
    for stems in groups.values():
        if len(stems) < 2:
            continue
        stems = sorted(stems, key=lambda stem: candidates["start_ns"].iloc[families[stem]].min())
        numbers = np.array([[int(n) for n in NUMBERS.findall(stem)] for stem in stems])
        differing = np.flatnonzero((numbers != numbers[0]).any(axis=0))
        counted = numbers[:, differing[0]] if len(differing) == 1 else None
        processes = [set(candidates["pid"].iloc[families[stem]].tolist()) for stem in stems]
        apart = sum(map(len, processes)) == len(set().union(*processes))  # no process in two of them
        if counted is None or not apart and (counted[0] not in (0, 1) or not (np.diff(counted) == 1).all()):
            continue
        merged[stems[0]] = np.concatenate([merged.pop(stem) for stem in stems])
    return merged


def _name_indices(names: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """Each name's stem and the index it ends in (``step_12`` -> ``step``, 12), None where a name
    has no index."""
    matches = [INDEXED.match(normal_name(name)) for name in names]
    if not matches or not all(matches):
        return None
    return np.array([m["stem"] for m in matches], dtype=object), np.array([int(m["index"]) for m in matches])


def _numbered_runs(steps: pd.DataFrame) -> Runs | None:
    """Runs told by the step ranges' numbering (``steps``: sorted by process, then start): each
    family's indices counted from its first again (``step_0`` … ``step_13``, then ``step_0`` …: one
    script benchmarking two models in turn; ``warmup_1`` then ``step_0`` is one run) start a new
    run, and only the last run of each family in each process is measured. None where the indices
    never fall (``train_small_128`` every time is no count) or a name has none."""
    indexed = _name_indices(steps["range_name"])
    if indexed is None:
        return None
    stems, index = pd.factorize(indexed[0])[0], indexed[1]
    pids = steps["pid"].to_numpy()
    run = np.zeros(len(steps), dtype=np.int64)
    for rows in pd.Series(np.arange(len(steps))).groupby([stems, pids]).indices.values():  # in time order
        run[rows] = np.cumsum(np.r_[0, index[rows][1:] < index[rows][:-1]])  # a number every range shares is no index
    if not run.any():
        return None
    last = run == pd.Series(run).groupby([stems, pids]).transform("max").to_numpy()
    most = int(run.max()) + 1
    shown = ", ".join(f"`{family_label(name)}`" for name in name_families(sorted(set(steps["range_name"]))))
    again = "once" if most == 2 else f"{most - 1} times"
    return Runs(last, f"the numbering of {shown} starts over {again}: {most} runs one after another, as a script that "
                      f"benchmarks several configurations in turn makes{LAST_RUN_MEASURED}")


def _indexed_in_order(ranges: pd.DataFrame) -> bool:
    """Whether every range's name ends in an index and, in each process, the indices rise with time
    (ranges sorted by process, then start)."""
    indexed = _name_indices(ranges["name"])
    if indexed is None:
        return not len(ranges)
    index, pids = indexed[1], ranges["pid"].to_numpy()
    return bool(((index[1:] > index[:-1]) | (pids[1:] != pids[:-1])).all())


# A range that is its process's only step candidate is a step only where its phases fill at least
# this share of it; a range around the whole run holds the set-up (model, communicators) too.
PHASES_FILL_STEP = 0.5


def _whole_run(ranges: pd.DataFrame, phases: pd.DataFrame, ops: pd.DataFrame) -> str | None:
    """Why ranges that each hold at most one pass of the phases are the whole run rather than
    steps, or None when they are steps: one per process, and a backward pass runs in one of them
    that no phase range marks (:func:`_unranged_backward`; a warm-up pass beside the measured
    one), or, where their name does not say step and they were closed, the phases fill less than
    :data:`PHASES_FILL_STEP` of one of them."""
    if ranges["pid"].duplicated().any():
        return None
    if _unranged_backward(ranges, phases, ops).any():
        return "one per process, it holds a backward pass that no phase range marks besides its own (a warm-up pass)"
    if _named(STEP_FAMILY, ranges["name"]).any() or ranges.get("is_open", pd.Series(False)).any():
        return None
    for window in ranges.itertuples():
        mine = phases[(phases["pid"].to_numpy() == window.pid) & (phases["start_ns"].to_numpy() >= window.start_ns)
                      & (phases["end_ns"].to_numpy() <= window.end_ns)]
        span = window.end_ns - window.start_ns
        if len(mine) and span > 0 and mine["end_ns"].max() - mine["start_ns"].min() < PHASES_FILL_STEP * span:
            share = (mine["end_ns"].max() - mine["start_ns"].min()) / span
            return f"one per process, its phases fill {share:.0%} of it (the rest is set-up)"
    return None


def _unranged_backward(ranges: pd.DataFrame, phases: pd.DataFrame, ops: pd.DataFrame) -> np.ndarray:
    """Whether each range holds launches from a thread other than its process's main one
    (PyTorch's autograd thread) outside every phase window, at least half as many as inside its
    backward windows: a backward pass that no phase range marks."""
    from analysis.core.attribution import ops_in_windows
    found = np.zeros(len(ranges), dtype=bool)
    pids, launched = ops["pid"].to_numpy(), ops["launch_start_ns"].to_numpy()
    for index, window in enumerate(ranges.itertuples()):
        inside = ops[(pids == window.pid) & (launched >= window.start_ns) & (launched < window.end_ns)]
        tids = inside["launch_tid"].to_numpy()
        if not len(tids):
            continue
        other = inside[tids != _main_thread(window.pid, tids)]
        mine = phases[phases["pid"].to_numpy() == window.pid].reset_index(drop=True)
        holder = ops_in_windows(other, mine)
        outside = int((holder < 0).sum())
        in_backward = int((np.append(mine["name"].to_numpy() == "backward", False)[holder]).sum())
        found[index] = outside > 0 and 2 * outside >= in_backward
    return found


def _part_families(candidates: pd.DataFrame, families: dict[str, np.ndarray]) -> list[str]:
    """The families that are parts of another family's ranges, not steps: two or more families
    whose ranges all lie inside the ranges of one family, at most one range of each inside each
    (a step's ranges named in no known way: ``alpha``, ``beta``, ``gamma`` inside ``step_<i>``).
    One such family is left alone: a range around a single step is a container."""
    parts: list[str] = []
    for outer, outer_rows in families.items():
        steps = candidates.iloc[outer_rows]
        inside = [stem for stem, rows in families.items() if stem != outer
                  and _inside_any(candidates.iloc[rows], steps).all()
                  and (_contains(steps, candidates.iloc[rows]) <= 1).all()]
        if len(inside) > 1:
            parts += [stem for stem in inside if stem not in parts]
    return parts


def _updating_every_few(rows: np.ndarray, candidates: pd.DataFrame, backwards: np.ndarray, optimizers: np.ndarray) -> bool:
    """Whether a family of ranges of one pass each (``rows`` of ``candidates``) holds an optimizer
    step in every K-th of its ranges alone (K >= 2, in time in each process; the passes after a
    process's last update may be fewer): gradient accumulation's micro-batches, each in a range of
    its own (PyTorch Lightning's batch hooks), the last of each step's holding its update."""
    passes = rows[backwards[rows] > 0]
    updating = optimizers[passes] > 0
    if not updating.any() or updating.all():
        return False
    pids, starts = candidates["pid"].to_numpy()[passes], candidates["start_ns"].to_numpy()[passes]
    spacings = set()
    for pid in np.unique(pids):
        mine = np.flatnonzero(pids == pid)
        at = np.flatnonzero(updating[mine[np.argsort(starts[mine], kind="stable")]])
        if not len(at):
            return False
        spacings |= set(np.diff(np.r_[-1, at]).tolist())
    return len(spacings) == 1 and spacings.pop() >= 2


def _micro_batches(candidates: pd.DataFrame, families: dict[str, np.ndarray], accumulating: set[str],
                   optimizers: np.ndarray) -> dict[str, np.ndarray]:
    """The families of one pass each that lie inside the steps of a gradient-accumulation family
    and hold no optimizer step: micro-batches, not steps (by stem, their rows)."""
    outer = [rows for stem, rows in families.items() if stem in accumulating]
    if not outer:
        return {}
    steps = candidates.iloc[np.concatenate(outer)]
    return {stem: rows for stem, rows in families.items() if stem not in accumulating
            and not optimizers[rows].any() and _inside_any(candidates.iloc[rows], steps).all()}


def _containers(candidates: pd.DataFrame, held: np.ndarray) -> pd.DataFrame:
    """The ranges around more than one phase window (a ``warmup`` range around warm-up steps)."""
    return candidates[held > 1]


def _prefixed_steps(own: pd.DataFrame, names: RangeNames, notes: list[str]) -> tuple[pd.DataFrame | None, str, pd.DataFrame]:
    """Step windows named ``<step prefix><i>`` and ``<warm-up prefix><i>`` (the flags)."""
    prefixes = [p for p in (names.warmup_prefix, names.step_prefix) if p]
    pattern = re.compile(rf"^({'|'.join(re.escape(p) for p in prefixes)})\d+$")
    matched = own[own["name"].str.match(pattern)]
    if matched.empty:
        _note_missing([f"{names.step_prefix}<i>"], own, notes)
        return None, f"no `{names.step_prefix}<i>` range", own.iloc[:0]
    steps = _windows(matched, "step")
    steps["name"] = steps["range_name"]
    warm = steps["range_name"].str.startswith(names.warmup_prefix) if names.warmup_prefix else False
    return steps.assign(measured=~np.asarray(warm, dtype=bool)), f"the ranges `{names.step_prefix}<i>` (given)", own.iloc[:0]


def _unranged_processes(steps: pd.DataFrame, ops: pd.DataFrame, first_id: int, notes: list[str]
                        ) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Phases and steps from the kernels (:func:`_kernel_phases`, :func:`_steps_from_phases`) of
    the processes that launched kernels but hold none of the step ranges (a job whose ranges rank 0
    alone opens: ``if rank == 0``), where they give at least :data:`UNPHASED_STEPS_MIN` steps; a
    note names them, and those left out with their kernel counts. None where every process with
    kernels holds steps."""
    pids = ops["pid"].to_numpy()
    missing = np.setdiff1d(distinct(pids), steps["pid"].to_numpy())
    if not len(missing):
        return None
    theirs = ops[np.isin(pids, missing)]
    kernel_phases = _kernel_phases(theirs[list(KERNEL_PHASE_COLUMNS)], first_id)
    made = _steps_from_phases(kernel_phases, _training_forwards(kernel_phases), first_id + len(kernel_phases))
    counts = made.groupby("pid").size()
    kept = counts.index[counts.to_numpy() >= UNPHASED_STEPS_MIN].to_numpy()
    ranged = ", ".join(map(str, np.unique(steps["pid"].to_numpy())))
    if len(kept):
        shown = ", ".join(map(str, kept))
        notes.append(f"process {shown} holds none of the step ranges (they are in process {ranged} alone, as a script "
                     f"that annotates only rank 0 makes them): its steps and phases come from its kernels")
    kernels = (theirs["op_kind"] == "kernel").to_numpy() if "op_kind" in theirs else np.ones(len(theirs), dtype=bool)
    for pid in np.setdiff1d(missing, kept):
        count = int((theirs["pid"].to_numpy()[kernels] == pid).sum())
        if count:
            notes.append(f"process {pid} holds none of the step ranges and its kernels give no steps: its {count:,} "
                         "kernels are left out of every figure")
    if not len(kept):
        return None
    return (kernel_phases[np.isin(kernel_phases["pid"].to_numpy(), kept)].reset_index(drop=True),
            made[np.isin(made["pid"].to_numpy(), kept)].reset_index(drop=True))


def _unranged_measured_iterations(own: pd.DataFrame, steps: pd.DataFrame, ops: pd.DataFrame, first_id: int,
                                  notes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Phases and steps (ids from ``first_id``) of the measured ranges (``Timing Phase``,
    ``measure``: :data:`MEASURED_FAMILY`) that hold no step while steps made from the phases lie
    outside them (phase ranges only in the warm-up, as a script that annotates its warm-up
    iterations alone has them): inside each, the phases come from the kernels
    (:func:`_kernel_phases`), and each training forward starts a step that runs to the next one
    (the last to the range's end). None when there is none; a note names the ranges."""
    regions = _outermost_by_time(own[_named(MEASURED_FAMILY, own["name"])])
    if regions.empty or steps.empty:
        return None
    regions = regions[(_contains(regions, steps) == 0) & ~_inside_any(regions, steps)]
    launches = ops[list(KERNEL_PHASE_COLUMNS)]
    launched, pids = launches["launch_start_ns"].to_numpy(), launches["pid"].to_numpy()
    found, cuts = [], []
    for region in regions.itertuples():
        inside = launches[(pids == region.pid) & (launched >= region.start_ns) & (launched <= region.end_ns)]
        phases = _kernel_phases(inside, first_id + sum(len(f) for f in found))
        starts = np.sort(phases.loc[_training_forwards(phases), "start_ns"].to_numpy())
        if len(starts):  # an iteration runs from its forward to the next one's (the last to the range's end)
            found.append(phases)
            cuts += [(region.pid, region.tid, start, end, len(cuts) + k)
                     for k, (start, end) in enumerate(zip(starts, np.r_[starts[1:] - 1, region.end_ns]))]
    if not found:
        return None
    phases = pd.concat(found, ignore_index=True)
    steps = _iterations(cuts, first_id + len(phases))
    shown = ", ".join(f"`{n}`" for n in name_families(sorted(set(regions["name"]))))
    notes.append(f"the phase ranges lie outside {shown}, which holds {len(steps)} iterations with none: their steps "
                 "and phases come from the kernels (a forward from the kernels is all the main thread launches "
                 "between two backward passes)")
    return phases, steps


def _launches_before_backward(phases: pd.DataFrame, launches: pd.DataFrame) -> int:
    """The median number of operations the main thread launches from a training iteration's
    forward start to its backward's first launch from another thread (the forward, the loss, and
    what ``loss.backward()`` launches itself before the autograd thread takes over), over the
    backward windows of ``phases`` each with the latest forward of its process before it; 0 where
    there is none."""
    counts = []
    for pid, mine in phases[phases["name"].isin(("forward", "backward"))].groupby("pid", sort=False):
        mine = mine.sort_values("start_ns", kind="stable")
        own = launches[launches["pid"].to_numpy() == pid].sort_values("launch_start_ns", kind="stable")
        times, tids = own["launch_start_ns"].to_numpy(), own["launch_tid"].to_numpy()
        if not len(times):
            continue
        main = tids == _main_thread(pid, tids)
        other_times = times[~main]
        main_times = times[main]
        forward_start = None
        for name, start in zip(mine["name"].to_numpy(), mine["start_ns"].to_numpy()):
            if name == "forward":
                forward_start = start
            elif forward_start is not None:
                at = np.searchsorted(other_times, start)
                first_other = other_times[at] if at < len(other_times) else start
                counts.append(int(np.searchsorted(main_times, first_other) - np.searchsorted(main_times, forward_start)))
                forward_start = None
    return int(np.median(counts)) if counts else 0


def _iteration_starts(inside: pd.DataFrame, found: pd.DataFrame, ends: np.ndarray, lead: int) -> list[int]:
    """Where the warm-up iterations after the first start, in a warm-up range holding several:
    after each of ``ends`` (the last backward run of an iteration, :func:`_kernel_phases`' windows
    ``found`` from the range's launches ``inside``), at the ``lead``-th main-thread launch before
    the next backward run's first (the launches before a measured iteration's backward,
    :func:`_launches_before_backward`), so that an update with no fused kernel, launched between
    the two, stays its own iteration's; right after the end where fewer launches lie between."""
    backward_starts = np.sort(found.loc[found["name"] == "backward", "start_ns"].to_numpy())
    tids, times = inside["launch_tid"].to_numpy(), inside["launch_start_ns"].to_numpy()
    main = np.sort(times[tids == _main_thread(int(inside["pid"].iat[0]), tids)]) if len(inside) else times
    starts = []
    for end in ends:
        following = backward_starts[np.searchsorted(backward_starts, end, side="right"):]
        low = np.searchsorted(main, end, side="right")
        between = main[low:np.searchsorted(main, following[0])] if len(following) else main[:0]
        starts.append(int(between[-lead]) if 0 < lead <= len(between) else int(end))
    return starts


def _warmup_iterations(own: pd.DataFrame, steps: pd.DataFrame, phases: pd.DataFrame, ops: pd.DataFrame,
                       first_id: int, inference: pd.DataFrame, before_steps: bool = True) -> tuple[pd.DataFrame, str]:
    """Warm-up steps beside the steps, and the rule that found them: ranges named warm-up that
    neither hold a step nor lie in one (a ``warmup`` range per warm-up step, or one around them
    all: it holds as many iterations as backward runs launched inside it from PyTorch's autograd
    thread, one when it holds none, and with optimizer runs among them as many as those, since
    several backward runs before one update are one iteration's micro-batches; with no backward
    run, as many forward iterations as the user's ranges or the repeats of one call's kernels
    tell (:func:`_forward_iterations`, :func:`_unranged_call_starts`); one around ``inference`` forward
    windows alone, a forward-only benchmark's warm-up, holds none); else
    iterations made from the phases that ran before the first step range, outside every step, or
    from the kernels launched before it where those phases make none (backward passes found from
    the kernels, whose forwards have ranges in the steps alone); with ``before_steps`` False
    (steps made from the phases, which hold those already) warm-up ranges, else the iterations
    before the first step that no phase range marks, from the kernels alike."""
    warm = _warmup_ranges_beside(own, steps)
    warm = _outermost_by_time(warm[~((_contains(warm, inference) > 0) & (_contains(warm, phases) == 0))])
    rows = []
    launches = ops[list(KERNEL_PHASE_COLUMNS)]  # the rows kept per window: of these columns only, not every op column
    launched, pids = launches["launch_start_ns"].to_numpy(), launches["pid"].to_numpy()
    lead = None  # read from the measured iterations once a warm-up range holds several
    for window in warm.itertuples():
        inside = launches[(pids == window.pid) & (launched >= window.start_ns) & (launched < window.end_ns)]
        if not (inside["op_kind"] == "kernel").to_numpy().any():  # nothing ran on the GPU: no warm-up was run
            continue
        found = _kernel_phases(inside, 0)
        ends = found.loc[found["name"] == "backward", "end_ns"].to_numpy()
        updates = found.loc[found["name"] == "optimizer_step", "start_ns"].to_numpy()
        if len(updates):  # an iteration ends with the last backward run before each update
            ends = np.unique(ends[np.maximum(np.searchsorted(ends, updates) - 1, 0)])
        if len(ends) > 1:
            lead = _launches_before_backward(phases, launches) if lead is None else lead
            bounds = [window.start_ns, *_iteration_starts(inside, found, ends[:-1], lead), window.end_ns]
        else:  # no backward run, or one: forward iterations counted by ranges of the model, if any
            starts = []
            if not len(ends):
                told = _forward_iterations(window, own, steps, inside["launch_start_ns"].to_numpy())
                starts = told or _unranged_call_starts(inside, window.pid, steps, launches)
                if not before_steps and not starts and told is None:  # no pass in it: none to count
                    continue
            bounds = [window.start_ns, *starts, window.end_ns]
        rows += [(window.pid, window.tid, start, end, window.name) for start, end in zip(bounds[:-1], bounds[1:])]
    rule = "inside " + ", ".join(f"`{n}`" for n in name_families(sorted(set(warm["name"])))) if rows else ""
    if not rows and len(steps):
        first_step = steps.groupby("pid")["start_ns"].min()
        before = phases[(phases["end_ns"].to_numpy() <= phases["pid"].map(first_step).to_numpy())
                        & ~_inside_any(phases, steps)] if before_steps else phases.iloc[:0]
        made = _steps_from_phases(before, _training_forwards(before), 0)
        named = WARMUP_ITERATION
        if made.empty:  # the kernels' backward passes alone: the ranges name the phases in steps, or none before
            first = pd.Series(pids).map(first_step).fillna(np.iinfo(np.int64).min).to_numpy(dtype=np.int64)
            named = WARMUP_ITERATION if len(before) else UNRANGED_ITERATION
            before = _kernel_phases(launches[launched < first], 0)
            if named == WARMUP_ITERATION or (before["name"] == "backward").to_numpy().any():  # not a model's set-up alone
                made = _steps_from_phases(before, _training_forwards(before), 0)
        rows = list(zip(made["pid"], made["tid"], made["start_ns"], made["end_ns"], [named] * len(made)))
        if not rows and not (phases["name"] == "backward").any():  # a forward-only benchmark's calls before its steps
            rows = [(pid, tid, start, end, UNRANGED_ITERATION)
                    for pid, tid, start, end in _calls_before_steps(steps, launches, first_step)]
        rule = "the iterations before the step ranges, whose phases ran outside every step" \
            if rows and named == WARMUP_ITERATION else ""
    found = _made_windows(rows, ["pid", "tid", "start_ns", "end_ns", "range_name"])
    found = found.assign(range_id=np.arange(first_id, first_id + len(found), dtype=np.int64), parent_id=-1, measured=False)
    found["name"] = [f"{name} #{k}" for name, k in zip(found["range_name"], found.groupby(["pid", "range_name"]).cumcount())]
    return found[[*WINDOW_COLUMNS, "measured"]], rule


def _unranged_call_starts(inside: pd.DataFrame, pid: int, steps: pd.DataFrame, launches: pd.DataFrame) -> list[int]:
    """Where a warm-up range's launches (``inside``, of process ``pid``) hold several calls of the
    model with no range of their own, the launch time that starts each call after the first: its
    kernels repeat one call's sequence (:func:`_repeat_starts`), else end with repeats of the
    kernels of the process's last step (:func:`_calls_after_a_first`). Empty otherwise."""
    kernels = inside[(inside["op_kind"] == "kernel").to_numpy()]
    return _repeat_starts(kernels) or _calls_after_a_first(kernels, _last_step_kernels(pid, steps, launches))


def _last_step_kernels(pid: int, steps: pd.DataFrame, launches: pd.DataFrame) -> pd.DataFrame:
    """The kernel rows launched in the last step of process ``pid`` (none where it has no step)."""
    mine = steps[steps["pid"].to_numpy() == pid]
    if mine.empty:
        return launches.iloc[:0]
    last = mine.iloc[int(np.argmax(mine["start_ns"].to_numpy()))]
    launched = launches["launch_start_ns"].to_numpy()
    return launches[(launches["pid"].to_numpy() == pid) & (launched >= last["start_ns"]) & (launched <= last["end_ns"])
                    & (launches["op_kind"] == "kernel").to_numpy()]


def _calls_after_a_first(kernels: pd.DataFrame, call: pd.DataFrame) -> list[int]:
    """Where ``kernels`` (a warm-up range's, in launch order) end with t >= 2 repeats of ``call``'s
    sequence (a measured step's kernels, :data:`LEAST_PASS_KERNELS` or more, or a CUDA graph's
    execution) after other kernels, the launch times that start the second repeat and each later
    one: the range holds t calls, the kernels before the repeats the first call's (a first call
    compiles, tunes or initialises before it runs; a model replayed as a CUDA graph whose first
    calls run eagerly is counted short). Empty otherwise."""
    starts = _trailing_call_starts(kernels, call, before=1)
    return starts[1:]


def _trailing_call_starts(kernels: pd.DataFrame, call: pd.DataFrame, before: int) -> list[int]:
    """The launch times that start each of the t back-to-back repeats of ``call``'s kernel
    sequence (:data:`LEAST_PASS_KERNELS` kernels or more, or a CUDA graph's execution) that end
    ``kernels``, leaving at least ``before`` kernels before them; empty where none does."""
    names = kernels.sort_values("launch_start_ns", kind="stable")["demangled_name"].astype(str).to_numpy()
    one = call.sort_values("launch_start_ns", kind="stable")["demangled_name"].astype(str).to_numpy()
    if not len(one) or len(one) < _least_call_kernels(one):
        return []
    repeats = 0
    while len(names) - (repeats + 1) * len(one) >= before and \
            (names[len(names) - (repeats + 1) * len(one):][:len(one)] == one).all():
        repeats += 1
    launched = np.sort(kernels["launch_start_ns"].to_numpy())
    return [int(launched[len(names) - j * len(one)]) for j in range(repeats, 0, -1)]


def _calls_before_steps(steps: pd.DataFrame, launches: pd.DataFrame, first_step: pd.Series) -> list[tuple[int, int, int, int]]:
    """A forward-only benchmark's calls of the model before each process's first step with no
    range of their own (its warm-up, where a range marks the measured calls alone): the
    back-to-back repeats of the kernel sequence of the process's last step that end the kernels
    launched before its first step (``first_step``: start by process), each as (process, thread,
    start, end), from its first launch to the next call's, the last to the first step's start."""
    calls = []
    launched, pids = launches["launch_start_ns"].to_numpy(), launches["pid"].to_numpy()
    kernel = (launches["op_kind"] == "kernel").to_numpy()
    for pid, first in first_step.items():
        starts = _trailing_call_starts(launches[(pids == pid) & kernel & (launched < first)],
                                       _last_step_kernels(pid, steps, launches), before=0)
        tid = int(steps.loc[steps["pid"].to_numpy() == pid, "tid"].iat[0])
        calls += [(int(pid), tid, start, end - 1) for start, end in zip(starts, [*starts[1:], int(first)])]
    return calls


def _forward_iterations(window, own: pd.DataFrame, steps: pd.DataFrame, launched: np.ndarray) -> list[int] | None:
    """Where a warm-up range with no backward run holds forward iterations: the start of each
    after the first, told by the user's ranges that each step of its process holds k >= 1
    times alike (the model's attention ranges, 12 a pass): the range holds n = c / k iterations
    when each such family occurs c times in it, a multiple of k, and every family gives the same n
    (``warmup`` around 3 calls of a model with 12 attention ranges holds 36; around one call, 12:
    no start after the first). An iteration starts at the launch that opens its share of the
    range's ``launched`` times where they divide by n (alike iterations launch alike kernels),
    else at its first range of the family that opens soonest. None where the ranges tell nothing."""
    mine = own[(own["pid"].to_numpy() == window.pid) & ~own["range_id"].isin(steps["range_id"]).to_numpy()]
    measured = steps[steps["pid"].to_numpy() == window.pid]
    inside = (mine["start_ns"].to_numpy() >= window.start_ns) & (mine["end_ns"].to_numpy() <= window.end_ns)
    if not len(measured) or not inside.any():
        return None
    counts, starts = {}, {}
    for family, rows in mine.groupby("family", sort=True).indices.items():
        per_step = _contains(measured, mine.iloc[rows])
        held = np.sort(mine["start_ns"].to_numpy()[rows][inside[rows]])
        if per_step[0] >= 1 and (per_step == per_step[0]).all() and len(held) and len(held) % per_step[0] == 0:
            counts[family], starts[family] = len(held) // per_step[0], held[::per_step[0]]
    if len(set(counts.values())) != 1:
        return None
    n = next(iter(counts.values()))
    if n == 1:
        return []
    if len(launched) % n == 0:
        return [int(start) for start in np.sort(launched)[len(launched) // n::len(launched) // n]]
    first = min(starts.values(), key=lambda held: held[0])  # the family that opens each iteration soonest
    return [int(start) for start in first[1:]]


def _step_labels(steps: pd.DataFrame) -> np.ndarray:
    """A step's label: its range name when unique in its process, else ``name #k`` (k-th in time)."""
    order = np.lexsort((steps["start_ns"].to_numpy(), steps["pid"].to_numpy()))
    in_time = steps.iloc[order]
    same_name = in_time.groupby(["pid", "range_name"], sort=False)
    k, count = same_name.cumcount().to_numpy(), same_name["range_name"].transform("size").to_numpy()
    labels = np.empty(len(steps), dtype=object)
    labels[order] = [name if n == 1 else f"{name} #{i}" for name, i, n in zip(in_time["range_name"].to_numpy(), k, count)]
    return labels


def _steps_from_phases(phases: pd.DataFrame, training: np.ndarray, first_id: int) -> pd.DataFrame:
    """Steps made from the phases: each training forward (each forward in a forward-only run)
    starts a step that runs to the end of the last phase before the next forward. In a process
    with optimizer steps, a training forward with no optimizer step since the previous one
    continues that step (gradient accumulation: several passes, then one update), unless it
    follows the last update with more passes than any update took (iterations with no update,
    timed after a warm-up that updated: each is a step)."""
    rows = []
    for pid, mine in phases.assign(training=training).groupby("pid", sort=True):
        mine = mine.sort_values("start_ns", kind="stable")
        is_forward = (mine["name"] == "forward").to_numpy().copy()
        starts = np.flatnonzero(mine["training"].to_numpy())
        updates = np.cumsum((mine["name"] == "optimizer_step").to_numpy())  # optimizer steps so far
        if updates[-1] and len(starts) > 1:
            continuing = starts[1:][updates[starts[1:]] == updates[starts[:-1]]]
            at_start = updates[starts]  # each forward's optimizer steps so far
            updated = at_start[at_start < updates[-1]]
            if len(updated) and (at_start == updates[-1]).sum() > np.bincount(updated).max():
                continuing = continuing[updates[continuing] < updates[-1]]
            starts = np.setdiff1d(starts, continuing)
            is_forward[continuing] = False
        bounds = np.r_[np.flatnonzero(is_forward), len(mine)]
        for index, first in enumerate(starts):
            stop = bounds[bounds > first][0]
            part = mine.iloc[first:stop]
            rows.append((pid, int(part["tid"].iat[0]), int(part["start_ns"].min()), int(part["end_ns"].max()), index))
    return _iterations(rows, first_id)


# The names of warm-up iterations the analysis makes beside the steps: from phases (ranged or from
# the kernels) outside every step range, their rule the warm-up's; and from the kernels of a process
# whose iterations before its first step have no step or phase range, warm-up beside whatever rule
# reads the steps.
WARMUP_ITERATION = "(warm-up iteration)"
UNRANGED_ITERATION = "(iteration with no step range)"
UPDATE_PERIODS_SEEN = 3  # a period of updates is believed after this many periods repeat the one before


def _update_period(steps: pd.DataFrame, phases: pd.DataFrame, ops: pd.DataFrame) -> int:
    """k >= 2 when, in every process, the steps made from the phases each end with an optimizer
    step and their kernel counts repeat every k steps, but not every one (a step of k models, each
    updated by its own optimizer step: a GAN's discriminator and generator): from the second k
    steps on, each step launches as many kernels as the one k before it, for at least
    :data:`UPDATE_PERIODS_SEEN` periods, and every process runs whole periods. 1 otherwise."""
    if steps.empty or not (phases["name"] == "optimizer_step").any():
        return 1
    counts = _step_figures(steps.sort_values(["pid", "start_ns"], kind="stable"), ops)["kernels"].to_numpy()
    pids = np.sort(steps["pid"].to_numpy(), kind="stable")
    for period in range(2, len(counts) // (UPDATE_PERIODS_SEEN + 1) + 1):
        if all(_repeats_every(counts[pids == pid], period) for pid in np.unique(pids)):
            return period
    return 1


def _repeats_every(counts: np.ndarray, period: int) -> bool:
    """Whether ``counts`` (one process's steps) run whole periods of ``period``, repeat from the
    second period on for at least :data:`UPDATE_PERIODS_SEEN` periods, and differ within one."""
    later = counts[period:]
    return len(counts) % period == 0 and len(later) >= period * (UPDATE_PERIODS_SEEN + 1) \
        and bool((later[period:] == later[:-period]).all()) and len(set(later[:period].tolist())) > 1


def _grouped_steps(steps: pd.DataFrame, period: int, first_id: int) -> pd.DataFrame:
    """``steps`` with each ``period`` consecutive ones of a process made one (their first's start
    to their last's end), renumbered."""
    rows = []
    for pid, mine in steps.sort_values(["pid", "start_ns"], kind="stable").groupby("pid", sort=True):
        for index, first in enumerate(range(0, len(mine), period)):
            group = mine.iloc[first:first + period]
            rows.append((pid, int(group["tid"].iat[0]), int(group["start_ns"].min()), int(group["end_ns"].max()), index))
    return _iterations(rows, first_id)


def _most_per_process(steps: pd.DataFrame) -> int:
    """The most steps any one process has (0 without steps)."""
    return int(steps["pid"].value_counts().max()) if len(steps) else 0


def _iterations(rows: list[tuple], first_id: int) -> pd.DataFrame:
    """Step windows the analysis makes (``iteration <index>``, ids from ``first_id``, measured
    until the warm-up rule says otherwise) from ``(pid, tid, start_ns, end_ns, index)`` rows."""
    steps = _made_windows(rows, ["pid", "tid", "start_ns", "end_ns", "index"])
    steps = steps.assign(range_id=np.arange(first_id, first_id + len(steps), dtype=np.int64),
                         name=[f"iteration {i}" for i in steps["index"]], range_name="(iteration)",
                         parent_id=-1, measured=True)
    return steps[[*WINDOW_COLUMNS, "measured"]]


# ----------------------------------------------------------------------------- warm-up

def _warmup(steps: pd.DataFrame, containers: pd.DataFrame, found_rule: str, ops: pd.DataFrame,
            names: RangeNames, has_steps: bool, own: pd.DataFrame, notes: list[str],
            host_calls: pd.DataFrame | None = None) -> tuple[pd.DataFrame, str, list[dict], list[str]]:
    """Mark warm-up steps (``measured`` False) and cut steps, say by which rule, with each step's
    figures (:func:`_step_table`), and name the user's ranges that told them (:func:`_warmup_of_steps`,
    which reads every step but the iterations with no step or phase range before a process's first
    step, :data:`UNRANGED_ITERATION`: those are warm-up beside them, the rule saying how many)."""
    if not has_steps or steps.empty:
        return steps, "no steps", [], []
    steps = steps.sort_values(["pid", "start_ns"], kind="stable").reset_index(drop=True)
    figures = _step_figures(steps, ops)
    read = (steps["range_name"] != UNRANGED_ITERATION).to_numpy(dtype=bool)
    measured, cut = np.zeros(len(steps), dtype=bool), np.zeros(len(steps), dtype=bool)
    measured[read], cut[read], rule, marking = _warmup_of_steps(
        steps[read].reset_index(drop=True), figures[read].reset_index(drop=True), containers, found_rule, ops, names,
        own, notes, host_calls)
    if not read.all():
        count = int((~read).sum())
        iterations = f"the {count} iterations" if count > 1 else "the iteration"
        rule = f"{iterations} before the first step, with no step or phase range, found from the kernels; and {rule}"
    steps = steps.assign(measured=measured, cut=cut)
    return steps, rule, _step_table(steps, figures), marking


def _warmup_of_steps(steps: pd.DataFrame, figures: pd.DataFrame, containers: pd.DataFrame, found_rule: str,
                     ops: pd.DataFrame, names: RangeNames, own: pd.DataFrame, notes: list[str],
                     host_calls: pd.DataFrame | None) -> tuple[np.ndarray, np.ndarray, str, list[str]]:
    """Which of ``steps`` (sorted by process and start; ``figures``: their :func:`_step_figures`)
    are measured and which cut, by which rule, and the user's ranges that told the warm-up where
    none is a step (:func:`_late_range_warmup`; ``own``: the user's ranges); ``found_rule`` says
    how the warm-up steps already among ``steps`` were found ("" when none were);
    ``host_calls``: the program's cudaProfilerStart/Stop calls (:func:`_profiled_window`), waits
    for the GPU and event records (:func:`_timed_loop`).
    A last step cut off by the capture's end (:func:`_cut_at_capture_end`) is left out too, and a
    line in ``notes`` says why."""
    marking: list[str] = []
    cut = _cut_at_capture_end(steps, figures, ops, notes)
    every = ~cut  # the steps the rules below read
    numbered = _numbered_runs(steps)
    runs = numbered or Runs(every)
    if names.warmup_steps is not None:
        rank = steps.groupby("pid").cumcount().to_numpy()
        rule = f"the first {names.warmup_steps} (given)"
        measured = rank >= names.warmup_steps
    elif names.step_prefix is not None:
        measured, rule = steps["measured"].to_numpy(), f"named `{names.warmup_prefix}<i>` (given)"
    elif names.warmup_prefix is not None:
        measured, rule = _prefixed_warmup(steps, containers, names.warmup_prefix)
    else:
        if found_rule:
            measured, rule = steps["measured"].to_numpy(), found_rule
            warm = containers[_named(WARMUP_FAMILY, containers["name"])]  # and step ranges inside a warm-up range
            measured = measured & ~_inside_any(steps, warm)
        else:
            measured, rule = _named_warmup(steps, containers)
            named = rule is not None
            if rule is None:
                measured, rule = _profiled_window(steps, host_calls, runs.last)
            if rule is None:
                measured, rule = _warmup_range_before(steps, own)
            if rule is None:
                measured, rule, marking = _late_range_warmup(steps, own)
            if rule is None:
                measured, rule = _tail_range_warmup(steps, containers)
            if rule is None:  # runs first: each run's warm-up told within it
                runs = numbered or _runs(steps, figures, every)
                measured, rule = _timed_loop(steps, ops, host_calls, runs.last & every)
                if rule is None:
                    measured, rule = _departing_steps(steps, figures, runs.last & every)
        if numbered and (found_rule or named) and not (np.asarray(measured, dtype=bool) & ~numbered.last).any():
            runs = Runs(every)  # the names make the runs before the last its warm-up, numbered apart
        if not runs.rule:  # warm-up told otherwise: runs among the measured steps
            runs = _runs(steps, figures, np.asarray(measured, dtype=bool) & every)
    measured = np.asarray(measured, dtype=bool) & runs.last & every
    _note_unlike_steps(steps.assign(measured=measured), figures, notes)
    return measured, cut, runs.rule + rule, marking


def _step_table(steps: pd.DataFrame, figures: pd.DataFrame) -> list[dict]:
    """One row per step: its label, process, whether measured or cut, CPU span and kernels
    (``figures``: :func:`_step_figures` of ``steps``)."""
    return [{"step": str(s.name), "pid": int(s.pid), "measured": bool(s.measured), "cut": bool(s.cut),
             "cpu_span_ms": (s.end_ns - s.start_ns) / 1e6, "kernels": int(k), "kernel_ms": t / 1e6}
            for s, k, t in zip(steps.itertuples(), figures["kernels"], figures["kernel_ns"])]


# Measured steps of one process whose kernel times differ by this factor or more are noted: they may
# be different work (a benchmark over sizes) that per-step figures average together.
UNLIKE_STEPS_FACTOR = 10


def _note_unlike_steps(steps: pd.DataFrame, figures: pd.DataFrame, notes: list[str]) -> None:
    """A note where a process's measured steps' kernel times span :data:`UNLIKE_STEPS_FACTOR` or
    more (the shortest and the longest): per-step figures average them, which a sweep over sizes
    in one loop makes meaningless; batches of varying length stay well under it. The times leave
    the communication kernels out (``work_ns``): theirs is mostly a rank's wait for the others,
    which varies from step to step with the same work."""
    time, measured = figures["work_ns"].to_numpy(), steps["measured"].to_numpy(dtype=bool)
    for pid, rows in steps.groupby("pid", sort=False).indices.items():
        mine = time[rows[measured[rows]]]
        if len(mine) < 2 or mine.min() <= 0 or mine.max() < UNLIKE_STEPS_FACTOR * mine.min():
            continue
        low, high = (f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}" for ms in (mine.min() / 1e6, mine.max() / 1e6))
        notes.append(f"the measured steps of process {pid} differ widely: {len(mine)} steps of {low} to {high} ms of "
                     f"kernels{_without_communication(figures)} ({mine.max() / mine.min():,.0f}×), so they may be "
                     "different work (a benchmark over sizes in one loop), which the per-step figures average together")
        return


def _cut_at_capture_end(steps: pd.DataFrame, figures: pd.DataFrame, ops: pd.DataFrame, notes: list[str]) -> np.ndarray:
    """The last step of a process that the capture's end cut off (nsys's ``--duration``, or a
    ``cudaProfilerStop`` inside it, stops the records while the step goes on): it holds fewer
    kernels than every other step of its process, by more than their own spread, and no operation
    of the process was launched after it. At least two other steps are needed to tell. Each such
    step gets a line in ``notes``; ``steps`` are sorted by process, then start."""
    cut = np.zeros(len(steps), dtype=bool)
    count = figures["kernels"].to_numpy()
    said = []
    for pid, rows in steps.groupby("pid", sort=False).indices.items():
        if len(rows) < 3:
            continue
        last, others = rows[-1], count[rows[:-1]]
        if not count[last] < others.min() - (others.max() - others.min()):
            continue
        launched = ops["launch_start_ns"].to_numpy()[ops["pid"].to_numpy() == pid]
        if (launched > steps["end_ns"].iloc[last]).any():
            continue
        cut[last] = True
        usual = f"{others.min():,}" if others.min() == others.max() else f"{others.min():,} to {others.max():,}"
        said.append(f"`{steps['name'].iloc[last]}` (pid {pid}) holds {count[last]:,} kernels against {usual} in each "
                    "other step")
    if said:
        notes.append(f"the last step is left out where the capture's end cut it off (nsys's --duration, or "
                     f"cudaProfilerStop inside it; nothing of its process is recorded after it): {'; '.join(said)}")
    return cut


def _step_figures(steps: pd.DataFrame, ops: pd.DataFrame) -> pd.DataFrame:
    """Kernel count and summed kernel time of each step (launches from any thread of its process),
    and ``work_ns``, that time without the communication kernels': theirs holds a rank's wait for
    the others, which the rules that compare steps (:func:`_runs`, :func:`_departing_steps`) must
    not read as work.

    Which step holds a launch (:func:`analysis.core.attribution.ops_in_windows`, the rule written
    once) depends only on the launch's process and time, and changes only where a step starts or
    just after one ends. So ops in order of process and launch (the usual trace of one process)
    are cut at those times, each piece is summed, and the rule is asked once per piece, for its
    first op. Ops in another order (the processes of several GPUs interleave) look up their step
    launch by launch, :data:`~analysis.core.attribution.CHUNK_OPS` at a time: none is copied or
    sorted whole. Summed ns are whole numbers in float64, exact in any order below 2**53."""
    from analysis.core.attribution import CHUNK_OPS, ops_in_windows
    kernel = (ops["op_kind"] == "kernel").to_numpy(dtype=bool) if "op_kind" in ops else np.ones(len(ops), dtype=bool)
    pids, launched, durations = (ops[column].to_numpy() for column in ("pid", "launch_start_ns", "dur_ns"))
    communicating = _communicating(ops)
    work = kernel & ~communicating
    if sorted_by(pids, launched):  # a piece's memory operations count for nothing
        first = _piece_starts(pids, launched, steps)
        holder = ops_in_windows(pd.DataFrame({"pid": pids[first], "launch_start_ns": launched[first]}), steps)
        held = holder >= 0

        def per_step(summed: np.ndarray) -> np.ndarray:
            return np.bincount(holder[held], weights=summed[held], minlength=len(steps))

        kernel_ns = per_step(run_sums(durations, first, where=kernel))
        kernels = per_step(run_sums(kernel, first))
        work_ns = per_step(run_sums(durations, first, where=work)) if communicating.any() else kernel_ns
    else:
        kernels, kernel_ns, work_ns = (np.zeros(len(steps)) for _ in range(3))
        for low in range(0, len(ops), CHUNK_OPS):
            rows = slice(low, low + CHUNK_OPS)
            holder = ops_in_windows(pd.DataFrame({"pid": pids[rows], "launch_start_ns": launched[rows]}), steps)
            held = (holder >= 0) & kernel[rows]
            kernels += np.bincount(holder[held], minlength=len(steps))
            kernel_ns += np.bincount(holder[held], weights=durations[rows][held], minlength=len(steps))
            held &= work[rows]
            work_ns += np.bincount(holder[held], weights=durations[rows][held], minlength=len(steps))
    return pd.DataFrame({"kernels": kernels.astype(np.int64), "kernel_ns": kernel_ns, "work_ns": work_ns})


def _communicating(ops: pd.DataFrame) -> np.ndarray:
    """Which ops are communication kernels by name (:func:`analysis.core.classify.is_communication`;
    none without names): each name asked once."""
    if "demangled_name" not in ops or not len(ops):
        return np.zeros(len(ops), dtype=bool)
    codes, names = value_codes(ops["demangled_name"])
    return lookup(np.array([is_communication(str(name)) for name in names] + [False]), codes)


def _piece_starts(pids: np.ndarray, launched: np.ndarray, steps: pd.DataFrame) -> np.ndarray:
    """Where pieces of launches (sorted by process, then time) begin: at each new process, and in
    each process at the first launch at or after time 0, each step's start and each step's end + 1."""
    process_starts = np.flatnonzero(np.r_[True, pids[1:] != pids[:-1]]) if len(pids) else np.zeros(0, dtype=np.int64)
    process_ends = np.r_[process_starts[1:], len(pids)]
    step_pids, step_starts, step_ends = (steps[c].to_numpy() for c in ("pid", "start_ns", "end_ns"))
    starts = [process_starts]
    for first, stop in zip(process_starts, process_ends):
        mine = step_pids == pids[first]
        cuts = np.r_[0, step_starts[mine], step_ends[mine] + 1]
        starts.append(first + np.searchsorted(launched[first:stop], cuts, side="left"))
    starts = np.unique(np.concatenate(starts))
    return starts[starts < len(pids)]


def _named_warmup(steps: pd.DataFrame, containers: pd.DataFrame) -> tuple[np.ndarray, str | None]:
    """Steps named warm-up, or inside a range named warm-up."""
    own_name = _named(WARMUP_FAMILY, steps["range_name"])
    if own_name.any() and not own_name.all():
        shown = shown_families(steps.loc[own_name, "range_name"])
        return ~own_name, f"named {shown}"
    for family, warm_inside in ((WARMUP_FAMILY, True), (MEASURED_FAMILY, False)):
        named = containers[_named(family, containers["name"])]
        inside = _mostly_inside(steps, named)
        if inside.any() and not inside.all():
            where = "inside" if warm_inside else "outside"
            shown = shown_families(named["name"])
            return (~inside if warm_inside else inside), f"{where} {shown}"
    return np.ones(len(steps), dtype=bool), None


def _profiled_window(steps: pd.DataFrame, calls: pd.DataFrame | None, considered: np.ndarray
                     ) -> tuple[np.ndarray, str | None]:
    """Steps inside the program's own profiling window measured, the others not (the window:
    :func:`_profiler_window`). Only the ``considered`` steps are read (the last run,
    :func:`_numbered_runs`), and only the calls after the steps before them end (a script that
    opens the window anew in each run). None when a process with steps made no such call, or the
    window holds every step or none."""
    if calls is None or calls.empty:
        return np.ones(len(steps), dtype=bool), None
    pids, starts, ends = (steps[c].to_numpy() for c in ("pid", "start_ns", "end_ns"))
    inside = np.zeros(len(steps), dtype=bool)
    for pid in np.unique(pids[considered]):
        earlier = (pids == pid) & ~considered
        window = _profiler_window(calls, pid, after=ends[earlier].max(initial=np.iinfo(np.int64).min))
        if window is None:
            return np.ones(len(steps), dtype=bool), None
        rows = (pids == pid) & considered
        inside[rows] = (starts[rows] >= window[0]) & (starts[rows] < window[1])
    if inside[considered].all() or not inside[considered].any():
        return np.ones(len(steps), dtype=bool), None
    return inside, f"outside {PROFILED_WINDOW}"


# The window :func:`_profiler_window` finds, as the rules' words name it.
PROFILED_WINDOW = "the program's cudaProfilerStart–cudaProfilerStop window (what --capture-range=cudaProfilerApi records)"


def _profiler_window(calls: pd.DataFrame, pid: int, after: int = np.iinfo(np.int64).min) -> tuple[int, int] | None:
    """The program's own profiling window in process ``pid``: from its first ``cudaProfilerStart``
    after ``after`` to the next ``cudaProfilerStop`` (the end of time without one), what nsys's
    ``--capture-range=cudaProfilerApi`` would have recorded; None without such a start."""
    mine = calls[(calls["pid"].to_numpy() == pid) & (calls["start_ns"].to_numpy() > after)]
    times, call = mine["start_ns"].to_numpy(), mine["call"].to_numpy()
    opened = times[call == "start"]
    if not len(opened):
        return None
    closed = times[(call == "stop") & (times > opened[0])]
    return int(opened[0]), int(closed[0]) if len(closed) else int(np.iinfo(np.int64).max)


def _profiled_windows(ops: pd.DataFrame, calls: pd.DataFrame | None) -> pd.DataFrame | None:
    """Without steps, the windows (:data:`WINDOW_COLUMNS`, one per process) that hold what is
    measured: each process's own profiling window (:func:`_profiler_window`), where every process
    with operations opened one; else None (the whole capture is measured)."""
    if calls is None or calls.empty or not len(ops):
        return None
    rows = []
    for pid in pd.unique(ops["pid"].to_numpy()):
        window = _profiler_window(calls, pid)
        if window is None:
            return None
        rows.append((-1, "", "", int(pid), -1, window[0], window[1] - 1, -1))  # a window holds its end: stop before the call
    return _made_windows(rows, WINDOW_COLUMNS)


def _warmup_ranges_beside(own: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """The user's ranges named warm-up that hold none of ``steps`` and lie in none."""
    warm = own[_named(WARMUP_FAMILY, own["name"])]
    return warm[(_contains(warm, steps) == 0) & ~_inside_any(warm, steps)]


def _warmup_range_before(steps: pd.DataFrame, own: pd.DataFrame) -> tuple[np.ndarray, str | None]:
    """Every step measured where, in every process with steps, a range named warm-up that holds
    none of them and lies in none ends before its first step (a ``warm-up`` range around iterations
    that open no phase range, then the measured ones, as in ``benchmark``): the script marked where
    its warm-up ends, and the steps after it are the ones it measures. None where a process has no
    such range."""
    warm = _warmup_ranges_beside(own, steps)
    first_step = steps.groupby("pid")["start_ns"].min()
    before = warm[warm["end_ns"].to_numpy() <= warm["pid"].map(first_step).to_numpy(dtype=float)]
    if before.empty or set(first_step.index) - set(before["pid"]):
        return np.ones(len(steps), dtype=bool), None
    shown = shown_families(before["name"])
    return np.ones(len(steps), dtype=bool), f"the steps after {shown}, which holds none of them: every step is measured"


def _late_range_warmup(steps: pd.DataFrame, own: pd.DataFrame) -> tuple[np.ndarray, str | None, list[str]]:
    """Warm-up steps told by a range the script turned on after its warm-up: a family of the
    user's ranges that starts in every one of the last iterations of each process and in none of
    the first ones (``grad_all_reduce`` only in measured iterations) makes those first steps
    warm-up. An iteration runs from its step's start to the next step's (a range after the
    backward of a step made from the phases is still its iteration's); the first also holds what
    came before it, the last what came after. Also the names of those ranges. When several such
    families disagree on where measuring starts, None. The steps' own ranges are none of those
    families (``epoch1_step<i>`` first appears after ``epoch0_step<i>``: the same steps)."""
    own = own[~own["range_id"].isin(steps["range_id"])]
    step_pids = steps["pid"].to_numpy()  # sorted by process, then start
    new_process = step_pids[1:] != step_pids[:-1]
    opens, closes = np.append(True, new_process), np.append(new_process, True)  # each process's first and last step
    starts = np.where(opens, np.iinfo(np.int64).min, steps["start_ns"].to_numpy())
    following = np.where(closes, np.iinfo(np.int64).max, np.append(steps["start_ns"].to_numpy()[1:], 0))
    iterations = steps.assign(start_ns=starts, end_ns=following)
    found: dict[str, np.ndarray] = {}
    for family, rows in own.groupby("family", sort=True).indices.items():
        present = _contains(iterations, own.iloc[rows]) > 0
        late = np.zeros(len(steps), dtype=bool)
        for pid in np.unique(step_pids):
            mine = np.flatnonzero(step_pids == pid)
            appears = int(np.argmax(present[mine])) if present[mine].any() else 0
            if appears == 0 or not present[mine[appears:]].all():
                break
            late[mine[appears:]] = True
        else:
            found[family] = late
    kinds = {tuple(late) for late in found.values()}
    if len(kinds) != 1:
        return np.ones(len(steps), dtype=bool), None, []
    marking = sorted(set(own.loc[own["family"].isin(list(found)), "name"]))
    shown = ", ".join(f"`{family_label(n)}`" for n in name_families(marking))
    return next(iter(found.values())), f"the steps before {shown} first appears (it is in every later step)", marking


def _tail_range_warmup(steps: pd.DataFrame, containers: pd.DataFrame) -> tuple[np.ndarray, str | None]:
    """Warm-up steps told by a range of the user's around each process's last steps (a benchmark
    that wraps its measured iterations, whatever it names the range: ``naive_ddp``,
    ``bucketed_ddp_10MB``): in every process with steps, one range (of ``containers``) holds
    most of the span of its last two or more steps and of none before them, and no other range
    of its family holds those; the steps before are warm-up. None where a process has no such
    range."""
    if containers.empty:
        return np.ones(len(steps), dtype=bool), None
    measured = np.ones(len(steps), dtype=bool)
    held_by = set()
    c_pid, c_start, c_end, c_family = (containers[c].to_numpy() for c in ("pid", "start_ns", "end_ns", "family"))
    starts, ends = steps["start_ns"].to_numpy(), steps["end_ns"].to_numpy()

    def held(c: int, rows: np.ndarray) -> np.ndarray:
        covered = np.clip(np.minimum(ends[rows], c_end[c]) - np.maximum(starts[rows], c_start[c]), 0, None)
        return _most_of_span(starts[rows], ends[rows], covered, (starts[rows] >= c_start[c]) & (starts[rows] <= c_end[c]))

    for pid, rows in steps.groupby("pid", sort=False).indices.items():  # rows in start order
        tail = None
        for c in np.flatnonzero(c_pid == pid):
            inside = held(c, rows)
            k = int(inside.sum())
            if not 2 <= k < len(rows) or not inside[-k:].all():
                continue
            kin = np.flatnonzero((c_pid == pid) & (c_family == c_family[c]))
            if any(held(o, rows[:-k]).any() for o in kin if o != c):
                continue  # a family of ranges around every step (epochs): no warm-up said
            tail = c, inside
        if tail is None:
            return np.ones(len(steps), dtype=bool), None
        measured[rows] = tail[1]
        held_by.add(str(containers["name"].iat[tail[0]]))
    shown = shown_families(held_by)
    return measured, f"outside {shown}, the range around each process's last steps"


def _prefixed_warmup(steps: pd.DataFrame, containers: pd.DataFrame, prefix: str) -> tuple[np.ndarray, str]:
    """Steps whose name starts with ``prefix``, or inside a range whose name does (the flag)."""
    named = steps["range_name"].str.startswith(prefix).to_numpy(dtype=bool)
    inside = _inside_any(steps, containers[containers["name"].str.startswith(prefix)])
    return ~(named | inside), f"named or inside `{prefix}…` (given)"


# Runs one after another in a process (a sweep over model sizes or batch shapes): each side of a
# boundary has at least this many steps, compared over that many steps on each side ...
RUN_STEPS_MIN = 3
# ... whose kernel counts are apart, and differ by at least this share of the larger, or whose
# kernel times are apart by at least this factor.
RUN_COUNT_SHARE = 0.05
RUN_TIME_FACTOR = 1.3
# How the warm-up rule goes on after it names the runs (:func:`_runs`, :func:`_numbered_runs`).
LAST_RUN_MEASURED = ": only the last is measured, since averaging them would mix different work; its warm-up: "


@dataclass(frozen=True)
class Runs:
    """The steps of the last run of each process (``last``: every step where the process holds
    one run), and the words put before the warm-up rule ("" for one run everywhere)."""

    last: np.ndarray
    rule: str = ""


def _runs(steps: pd.DataFrame, figures: pd.DataFrame, considered: np.ndarray) -> Runs:
    """Runs one after another under the same step ranges (a script that trains several
    configurations in turn, each with its own warm-up): a run ends before step p when the
    :data:`RUN_STEPS_MIN` steps before p and those after p (p itself is passed over: a new run's
    first step is its own warm-up; of neighbouring such p, the last) are apart in every kernel
    count, by at least :data:`RUN_COUNT_SHARE` of the larger median, or in every kernel time
    (communication kernels left out), by :data:`RUN_TIME_FACTOR`. Averaging several runs would mix
    different work, so only each process's last run is measured. Steps (``steps``, sorted by process then start) of varying
    batch length interleave their figures, and stay one run. Only the ``considered`` steps are
    read (the measured ones, where a rule other than departure told the warm-up). Processes with
    as many steps each (the ranks of one job) must find the same last run, else none is taken: a
    rank's kernel time holds its wait for the others."""
    last = np.ones(len(steps), dtype=bool)
    count, time = figures["kernels"].to_numpy(), figures["work_ns"].to_numpy()
    found = []
    processes = [rows[considered[rows]] for rows in steps.groupby("pid", sort=False).indices.values()]
    last_starts = set()
    for rows in processes:
        bounds = _run_starts(list(np.flatnonzero(_apart(count[rows], time[rows])) + RUN_STEPS_MIN), count[rows])
        bounds = [p for i, p in enumerate(bounds) if not i or p - bounds[i - 1] >= RUN_STEPS_MIN]
        last_starts.add(bounds[-1] if bounds else 0)
        if bounds:
            last[rows[:bounds[-1]]] = False
            edges = [0, *bounds, len(rows)]
            found.append((len(bounds) + 1, [(int(np.median(count[rows[a:b]])), float(np.median(time[rows[a:b]])))
                                            for a, b in zip(edges[:-1], edges[1:])]))
    ranks = len(processes) > 1 and len({len(rows) for rows in processes}) == 1
    if not found or (ranks and len(last_starts) > 1):
        return Runs(np.ones(len(steps), dtype=bool))
    most, levels = max(found, key=lambda item: item[0])
    kernels = ", then ".join(f"{count:,}" for count, _ in levels)
    times = ", then ".join(f"{ns / 1e6:.3g}" for _, ns in levels)
    return Runs(last, f"the steps form {most} runs one after another ({kernels} kernels a step; {times} ms of kernels"
                      f"{_without_communication(figures)}; "
                      f"medians), as a script that trains several configurations in turn does{LAST_RUN_MEASURED}")


def _run_starts(bounds: list[int], count: np.ndarray) -> list[int]:
    """The first step of each run among ``bounds`` (ascending steps p where the steps before p and
    those after it are apart, :func:`_apart`), given the steps' kernel ``count``: both p - 1 and p
    pass where run p starts (p - 1's later group holds p's), so of each stretch of neighbouring
    bounds the run starts at the last, or at an earlier one whose step's count lies nearer the
    median of the steps after it than of those before it (a new run's first step that departs a
    little from the rest of its run, and alike to the steps before it in nothing)."""
    starts: list[int] = []
    if not bounds:
        return starts
    for stretch in np.split(np.asarray(bounds, dtype=np.int64), np.flatnonzero(np.diff(bounds) != 1) + 1):
        nearer_after = [abs(count[p] - np.median(count[p + 1:p + 1 + RUN_STEPS_MIN]))
                        < abs(count[p] - np.median(count[p - RUN_STEPS_MIN:p])) for p in stretch[:-1]]
        starts.append(int(stretch[nearer_after.index(True)] if True in nearer_after else stretch[-1]))
    return starts


def _apart(count: np.ndarray, time: np.ndarray) -> np.ndarray:
    """For each p from :data:`RUN_STEPS_MIN` to ``len - RUN_STEPS_MIN - 1`` (index 0 for the first),
    whether the :data:`RUN_STEPS_MIN` steps before p and those after it are apart in every kernel
    count (by :data:`RUN_COUNT_SHARE` of the larger median) or in every kernel time (by
    :data:`RUN_TIME_FACTOR`)."""
    if len(count) < 2 * RUN_STEPS_MIN + 1:
        return np.zeros(0, dtype=bool)
    windows = [sliding_window_view(values.astype(np.float64), RUN_STEPS_MIN) for values in (count, time)]
    (count_low, time_low), (count_high, time_high) = ([w.min(axis=1) for w in windows], [w.max(axis=1) for w in windows])
    middle = np.median(windows[0], axis=1)
    before, after = slice(0, -RUN_STEPS_MIN - 1), slice(RUN_STEPS_MIN + 1, None)  # windows ending at p - 1, starting at p + 1
    counts = ((count_high[before] < count_low[after]) | (count_high[after] < count_low[before])) \
        & (np.abs(middle[after] - middle[before]) >= RUN_COUNT_SHARE * np.maximum(middle[before], middle[after]))
    times = (RUN_TIME_FACTOR * time_high[before] < time_low[after]) | (RUN_TIME_FACTOR * time_high[after] < time_low[before])
    return counts | times


def _stands_out(value: float, later: np.ndarray) -> bool:
    """Whether a step's kernel time or CPU span stands out from the later steps': over
    :data:`WARMUP_TIME_FACTOR` times their median, and further above it than
    :data:`WARMUP_SPREAD_MADS` times their median absolute deviation. Steps alike make the second
    test no test; steps that differ among themselves (batches of varying length) leave a step as
    long as theirs measured."""
    median = np.median(later)
    spread = np.median(np.abs(later - median))
    return bool(value > WARMUP_TIME_FACTOR * median and value > median + WARMUP_SPREAD_MADS * spread)


# The fewest steps a timed loop's pattern of waits for the GPU must show after the warm-up
# (:func:`_timed_loop`): one would be any loop's last step before a final synchronize.
TIMED_LOOP_STEPS_MIN = 2


def _timed_loop(steps: pd.DataFrame, ops: pd.DataFrame, calls: pd.DataFrame | None, considered: np.ndarray
                ) -> tuple[np.ndarray, str | None]:
    """The warm-up of a benchmark that times its loop and leaves its warm-up untimed, told by the
    program's calls between its steps (``calls``: :attr:`analysis.load.Trace.host_calls`; the
    gaps: :func:`_calls_in_gaps`):

    - CUDA events recorded (``torch.cuda.Event.record()``) in two gaps alone, after some leading
      steps and after the last step (a timer around the loop; events recorded between steps, as
      a side stream's are, tell nothing): the leading steps are the warm-up
      (:func:`_steps_before_timer_events`);
    - else leading steps that no wait for the GPU (``torch.cuda.synchronize()``, ``.item()``)
      follows, each of at least :data:`TIMED_LOOP_STEPS_MIN` later ones followed by one: the
      leading steps are the warm-up; and so is the step after them where the later steps are
      waited for twice between each two (before and after each) and it is followed by one wait
      alone: the next step's (:func:`_steps_before_waited_steps`).

    Every process with ``considered`` steps (each one's last run) must show the same pattern;
    else (every step measured, None)."""
    measured = np.ones(len(steps), dtype=bool)
    if calls is None or not calls["call"].isin(("sync", "record")).any():
        return measured, None
    gaps = _calls_in_gaps(steps, ops, calls, considered)
    leading = {pid: _steps_before_timer_events(held["record"], len(rows)) for pid, (rows, held) in gaps.items()}
    how = "CUDA events are recorded after them and after the last step alone (a timer around the loop, " \
          "torch.cuda.Event.record)"
    if None in leading.values():
        waited = {pid: _steps_before_waited_steps(held["sync"], len(rows)) for pid, (rows, held) in gaps.items()}
        leading = {pid: None if found is None else found[0] for pid, found in waited.items()}
        around = any(found is not None and found[1] for found in waited.values())
        how = ("no wait for the GPU follows them but the next step's own: each later step is waited for before and "
               "after (a timer around each, torch.cuda.synchronize)" if around else
               "no wait for the GPU follows them, and one follows each later step (a timed loop's torch.cuda.synchronize)")
    if not gaps or None in leading.values():
        return measured, None
    for pid, (rows, _) in gaps.items():
        measured[rows[:leading[pid]]] = False
    left_out = int((~measured).sum())
    return measured, f"{left_out} leading step{'s' if left_out != 1 else ''} before a timed loop: {how}"


def _calls_in_gaps(steps: pd.DataFrame, ops: pd.DataFrame, calls: pd.DataFrame, considered: np.ndarray
                   ) -> dict[int, tuple[np.ndarray, dict[str, np.ndarray]]]:
    """For each process with ``considered`` steps (sorted by start): their rows, and for each kind
    of call (``record``, ``sync``) how many the gap before each step and the one after the last
    hold. A gap runs from a step's last launch to the next step's first, from any thread of its
    process (a step with no launch is bounded by its window); the first from the end of the
    process's steps before these, the last to the end of time."""
    pids, starts, ends = (steps[c].to_numpy() for c in ("pid", "start_ns", "end_ns"))
    launch_pid, launch_start = ops["pid"].to_numpy(), ops["launch_start_ns"].to_numpy()
    call_pid, call_start, call = (calls[c].to_numpy() for c in ("pid", "start_ns", "call"))
    gaps = {}
    for pid in pd.unique(pids[considered]):
        rows = np.flatnonzero((pids == pid) & considered)
        launches = np.sort(launch_start[(launch_pid == pid) & (launch_start >= 0)])
        first = np.searchsorted(launches, starts[rows], side="left")
        last = np.searchsorted(launches, ends[rows], side="right") - 1
        own = first <= last
        first_launch, last_launch = starts[rows].copy(), ends[rows].copy()
        first_launch[own], last_launch[own] = launches[first[own]], launches[last[own]]
        before = ends[(pids == pid) & ~considered & (ends <= starts[rows[0]])]
        bounds = np.r_[before.max(initial=np.iinfo(np.int64).min), last_launch]  # gap i: after step i (0: before all)
        until = np.r_[first_launch, np.iinfo(np.int64).max]
        held = {}
        for kind in ("record", "sync"):
            times = np.sort(call_start[(call_pid == pid) & (call == kind)])
            held[kind] = np.searchsorted(times, until, side="left") - np.searchsorted(times, bounds, side="right")
        gaps[pid] = rows, held
    return gaps


def _steps_before_timer_events(recorded: np.ndarray, steps: int) -> int | None:
    """How many leading steps come before a timer around the loop: ``recorded`` (event records in
    the gap before each of ``steps`` steps and after the last) in two gaps alone, one after some
    leading steps and one after the last step; else None."""
    holding = np.flatnonzero(recorded > 0)
    return int(holding[0]) if len(holding) == 2 and 1 <= holding[0] < steps and holding[1] == steps else None


def _steps_before_waited_steps(waits: np.ndarray, steps: int) -> tuple[int, bool] | None:
    """How many leading steps no wait follows, before at least :data:`TIMED_LOOP_STEPS_MIN` steps
    each followed by one (``waits``: in the gap before each of ``steps`` steps and after the
    last), and whether the one after them is counted with them, its wait being the next step's
    own (the later steps waited for before and after each); else None."""
    waited = waits[1:]  # after each step
    count = int(np.argmax(waited > 0)) if waited.any() else steps
    if not (1 <= count <= steps - TIMED_LOOP_STEPS_MIN and (waited[count:] > 0).all()):
        return None
    between = waited[count + 1:-1]  # between two later steps
    if len(between) and waited[count] < between.min() >= 2:  # its wait: the next step's own
        return count + 1, True
    return count, False


def _departing_steps(steps: pd.DataFrame, figures: pd.DataFrame, considered: np.ndarray) -> tuple[np.ndarray, str]:
    """The leading steps of each process that depart from the steady state: a kernel count outside
    the later steps' range of counts, or a kernel time (communication kernels left out: their time
    holds a rank's wait for the others) or CPU span that stands out from theirs
    (:func:`_stands_out`); the last :data:`WARMUP_STEADY_STEPS` steps (the last of two) are always
    measured. Only the ``considered`` steps are
    read (each process's last run, :func:`_runs`); the others stay True here.
    Processes with as many steps each (the ranks of one job) leave out as many: the most any of
    them does, so that every rank's figures cover the same steps."""
    measured = np.ones(len(steps), dtype=bool)
    span = (steps["end_ns"] - steps["start_ns"]).to_numpy()
    count, time = figures["kernels"].to_numpy(), figures["work_ns"].to_numpy()
    processes = [rows[considered[rows]] for rows in steps.groupby("pid", sort=False).indices.values()]
    departing = []
    for rows in processes:
        leading = 0
        steady = WARMUP_STEADY_STEPS if len(rows) > WARMUP_STEADY_STEPS else 1
        for position in range(len(rows) - steady):
            here, later = rows[position], rows[position + 1:]
            if not (not count[later].min() <= count[here] <= count[later].max()
                    or _stands_out(time[here], time[later]) or _stands_out(span[here], span[later])):
                break
            leading += 1
        departing.append(leading)
    aligned = len(processes) > 1 and len({len(rows) for rows in processes}) == 1 and len(set(departing)) > 1
    for rows, leading in zip(processes, departing):
        measured[rows[:max(departing) if aligned else leading]] = False
    left_out = int((~measured).sum())
    ranks = f"; {max(departing)} on every process, the most any has" if aligned else ""
    kernel_time = f"kernel time{_without_communication(figures)}"
    return measured, (f"{left_out} leading step{'s' if left_out != 1 else ''} whose kernel count, {kernel_time} or CPU span "
                      f"departs from the later steps' (a count outside theirs, a time over {WARMUP_TIME_FACTOR}× their median "
                      f"and {WARMUP_SPREAD_MADS} median absolute deviations above it{ranks})" if left_out else
                      f"no leading step departs from the later steps' kernel count, {kernel_time} or CPU span")


def _without_communication(figures: pd.DataFrame) -> str:
    """The words that say a step's kernel time left its communication kernels out, where it did."""
    return " (communication kernels left out)" if (figures["work_ns"] != figures["kernel_ns"]).any() else ""


# ----------------------------------------------------------------------------- attention, blocks

def _regions(own: pd.DataFrame, labels: pd.DataFrame, phases: pd.DataFrame, names: RangeNames,
             notes: list[str]) -> tuple[pd.Series, bool]:
    """The attention part of each range used as one (range name, indexed by ``range_id``; only
    ranges inside a forward), and whether the model used PyTorch's fused attention instead.

    By name (families of names, or the flags'); a range named like a plain matmul
    (``attn_matmul``) beside a softmax part range (same parent) is the scores matmul before it
    and the final matmul after it."""
    if names.regions is not None:
        _note_missing(names.regions, own, notes)
        parts = dict(zip(names.regions, REGIONS))
        rows = own[own["name"].isin(list(parts))]
        return pd.Series(rows["name"].map(parts).to_numpy(), index=rows["range_id"].to_numpy(), dtype=object), False
    named = own[["name", "normal"]].drop_duplicates("name")
    parts = {name: part for name, normal in zip(named["name"], named["normal"])
             if (part := _region_of_name(name, normal)) and _phase_of(normal) is None}
    rows = own.loc[own["name"].isin(list(parts)), ["name", "range_id", "parent_id", "start_ns", "end_ns"]]
    part_of = rows["name"].map(parts).to_numpy()
    found = pd.Series(part_of, index=rows["range_id"].to_numpy(), dtype=object)
    found = pd.concat([found, _matmuls_beside_softmax(own, rows[part_of == contract.SOFTMAX_RANGE])])
    fused = bool(len(labels)) and bool((labels["name"] == TORCH_SDPA).any())
    if found.empty and len(labels) and not fused:
        softmax = labels[labels["name"].str.match(TORCH_SOFTMAX)]
        found = pd.Series(contract.SOFTMAX_RANGE, index=softmax["range_id"].to_numpy(), dtype=object)
    forwards = phases[phases["name"] == "forward"]
    if len(forwards) and len(found):
        columns = ["range_id", "pid", "start_ns"]  # what _inside_any reads
        everything = pd.concat([own[columns], labels[columns]]).set_index("range_id", drop=False).loc[found.index]
        found = found[_inside_any(everything, forwards)]
    return found, fused


def _matmuls_beside_softmax(own: pd.DataFrame, softmax: pd.DataFrame) -> pd.Series:
    """Ranges named like a plain matmul that share their parent with a softmax part range: the
    scores matmul when they end before it starts, the final matmul when they start after it ends."""
    plain = own[per_name(own["normal"], lambda n: bool(PLAIN_MATMUL.fullmatch(n)) and _region_of(n) is None, dtype=bool)]
    plain = plain[plain["parent_id"].isin(softmax["parent_id"]) & (plain["parent_id"] >= 0)]
    if plain.empty:
        return pd.Series(dtype=object)
    first = softmax.sort_values("start_ns").drop_duplicates("parent_id").set_index("parent_id")
    start = plain["parent_id"].map(first["start_ns"]).to_numpy()
    end = plain["parent_id"].map(first["end_ns"]).to_numpy()
    part = np.where(plain["end_ns"].to_numpy() <= start, contract.ATTENTION_SCORES_RANGE,
                    np.where(plain["start_ns"].to_numpy() >= end, contract.FINAL_MATMUL_RANGE, None))
    keep = part != None  # noqa: E711 (an object array)
    return pd.Series(part[keep], index=plain["range_id"].to_numpy()[keep], dtype=object)


def _blocks(own: pd.DataFrame, labels: pd.DataFrame, phases: pd.DataFrame) -> tuple[str | None, pd.Series]:
    """The block ranges inside the forwards, with each one's block index (indexed by ``range_id``),
    and their family as shown: the user's indexed ranges (``layer_<i>``, ``block_<i>``,
    ``layer<i>``; at least two indices), else the blocks PyTorch's module labels show."""
    forwards = phases[phases["name"] == "forward"]
    stems = own["stem"].to_numpy()
    for stem in dict.fromkeys(stems):
        if not BLOCK_FAMILY.fullmatch(stem):
            continue
        rows = own[stems == stem]
        indexed = [(row, int(match["index"])) for row, normal in zip(rows["range_id"], rows["normal"])
                   if (match := INDEXED.match(normal))]
        if len({index for _, index in indexed}) >= 2 and (forwards.empty or _contains(forwards, rows).any()):
            return family_label(rows["name"].iat[0]), pd.Series(dict(indexed), dtype=np.int64)
    modules = labels[labels["name"].str.match(MODULE_CALL)]
    blocks = [_module_blocks(modules.iloc[rows]) for rows in _starting_inside(modules, forwards) if len(rows)]
    blocks = pd.concat(blocks or [pd.Series(dtype=np.int64)])
    return ("repeated module calls (PyTorch's labels)" if len(blocks) else None), blocks


def _starting_inside(rows: pd.DataFrame, windows: pd.DataFrame) -> list[np.ndarray]:
    """For each window, the positions (ascending) of the ``rows`` of its process that start
    inside it, in ``[start, end)``: one sort of ``rows``, two binary searches per window."""
    found = [np.zeros(0, dtype=np.int64)] * len(windows)
    if rows.empty:
        return found
    starts = rows["start_ns"].to_numpy()
    window_starts, window_ends = windows["start_ns"].to_numpy(), windows["end_ns"].to_numpy()
    groups = rows.groupby("pid", sort=False).indices
    for pid, windows_of_pid in windows.groupby("pid", sort=False).indices.items():
        mine = groups.get(pid, np.zeros(0, dtype=np.int64))
        mine = mine[np.argsort(starts[mine], kind="stable")]
        first = np.searchsorted(starts[mine], window_starts[windows_of_pid], side="left")
        stop = np.searchsorted(starts[mine], window_ends[windows_of_pid], side="left")
        for window, a, b in zip(windows_of_pid, first, stop):
            found[window] = np.sort(mine[a:b])
    return found


def _module_blocks(inside: pd.DataFrame) -> pd.Series:
    """Blocks of one forward from PyTorch's module labels (``inside``: those starting in the
    forward): the model call's children (the outermost module call holding the most calls) that
    hold the same number of module calls, more than none, in the largest such group of two or
    more; indexed in order."""
    held = _contains(inside, inside) - 1
    outermost = ~inside["parent_id"].isin(inside["range_id"]).to_numpy()
    model = inside["range_id"].to_numpy()[outermost][np.argmax(held[outermost])]
    children = (inside["parent_id"] == model).to_numpy()
    counts = pd.Series(held[children])
    groups = counts[counts > 0].value_counts()
    groups = groups[groups >= 2]
    if groups.empty:
        return pd.Series(dtype=np.int64)
    chosen = inside[children][(held[children] == groups.index[0])].sort_values("start_ns")
    return pd.Series(np.arange(len(chosen), dtype=np.int64), index=chosen["range_id"].to_numpy())
