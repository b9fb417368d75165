"""Independent reference figures for the foreign traces in tests/data/foreign.

Plain ``sqlite3`` and the standard library; nothing is imported from ``analysis/``. The NVTX
names of each trace (which ranges are steps, which are warm-up, which are the phases, the
attention parts) come from ``manifest.json``, written by hand from each script's source. Run
``python -m tests.foreign_reference`` to rewrite ``reference.json``; ``--check`` compares instead.

Definitions (every figure is per process: a DDP trace has one entry per rank):

- Names: an NVTX range's name is ``text``, else ``StringIds[textId]``; with
  ``record_function_scopes`` (a trace whose ranges are ``record_function`` scopes under
  ``emit_nvtx``), ``<scope>, op_id = <n>`` is named ``<scope>``. Ranges are push/pop and
  start/end ranges (eventType 59, 60) with an end. Process of a row: ``(globalTid >> 24) & 0xFFFFFF``
  (``globalPid`` likewise); thread: ``globalTid & 0xFFFFFF``; the main thread is the one whose id is
  the process id.
- Launch: a kernel's launch is the runtime API row with the same ``correlationId`` in the same
  process; the launch time is that call's ``start``, the launching thread its thread. Kernels
  with no such row are counted in ``kernels_without_launch`` and used nowhere else. A CUDA graph
  traced whole (a row of ``CUPTI_ACTIVITY_KIND_GRAPH_TRACE``: nsys's ``--cuda-graph-trace=graph``)
  is a kernel too, named ``[CUDA graph <graphId>]`` (short name the same), launched by the runtime
  row of its ``correlationId`` (its ``cudaGraphLaunch``), as long as its whole execution.
- Window: a kernel belongs to a step, phase or region range when its launch time lies inside the
  range (start <= launch <= end), launched from any thread of the process. A phase range whose
  kernels ran on several GPUs of its process (``torch.nn.DataParallel``'s replicas) is a pass per
  GPU, each holding that GPU's kernels: figures per pass are per GPU; but with ``split_model`` (one
  model whose layers the script puts on several GPUs) a pass holds every GPU's kernels. Attention parts are
  the exception: launches on the part range's own thread only, and a kernel goes to the innermost
  part range enclosing its launch.
- Steps (manifest ``steps.kind``):
  ``ranges``: each range whose name matches ``measured`` is a measured step, each matching
  ``warmup`` a warm-up step; ``warmup_rule: departing`` (a trace that does not mark its warm-up)
  makes the leading steps that depart from the steady state warm-up (:func:`_departing` states it;
  in a trace of several processes with as many steps each, every process leaves out the most
  leading steps any of them does);
  ``warmup_region`` names a range around all warm-up iterations, which are then counted by the
  ranges matching ``warmup_count_by`` inside it (or, where they have no range of their own, are
  ``warmup_count``, the script's number, per such range; also for the other kinds, whose steps the
  phases make: a warm-up range around iterations with no phase range); ``warmup_count_outside`` counts warm-up iterations
  by the ranges matching it that lie outside every measured step (a script whose warm-up
  iterations carry the same phase ranges and no step range); ``warmup_before: autograd_runs``
  counts as warm-up iterations the runs of launches from the autograd thread (the backward
  passes, :func:`_backward_runs`) that start before the first step, measured or not, a range or
  made from the phases (a script whose warm-up iterations have no step or phase range);
  ``warmup_before: call_repeats`` counts as warm-up calls the back-to-back repeats of the last
  step's kernel names that end the kernels launched before the first step (a forward-only
  benchmark whose warm-up calls have no range). A forward outside every step (an inference pass,
  ``inference_forward``) is not measured.
  ``phase_sequence``: no step ranges; a step runs from each ``first`` phase range to the end of
  the next ``last`` phase range (a later ``first`` range before that same ``last`` one is in the
  same step: gradient accumulation); warm-up steps without ranges are invisible (``warmup_unmarked``
  records how many the script ran); with ``inference_forwards``, each ``backward`` range, in
  start order, takes the latest ``first`` range that started before it and that none took yet,
  and a ``first`` range no backward takes is an evaluation pass and starts no step.
  ``runs`` (a list, from the script's source: its steps per run, for a script that trains several
  configurations one after another under the same names): only the last run is measured, the
  steps of the earlier ones are warm-up, and the departing rule reads the last run's steps alone.
  ``warmup_named`` (any kind but ``ranges``): a step whose first phase range's name matches it is
  warm-up (a script that names its warm-up iterations' phases apart, ``warmup.forward`` …).
  ``unranged_steps`` (entry level; a job whose ranges only some processes open, ``if rank == 0``):
  a process holding no range that ``measured`` names takes its steps by this spec instead (with
  no phase ranges: ``optimizer_kernel_runs``).
  ``capture_cut`` (a capture that nsys's ``--duration`` ended while the script ran on): the last
  step of a process is left out (``cut``, neither warm-up nor measured) when it ends after the
  end of the process's last CUDA runtime call (the records stop inside it).
  ``trailing_phases`` (``ranges``; a script that closes each step's range before a phase, the
  optimizer step after ``train_step``): the phase ranges that start after a step's range ends and
  before the next one starts are that step's, which runs on to the end of the last of them.
  ``warmup_inside`` (any kind but ``ranges``): the steps that start inside a range of this name
  are warm-up (a script that wraps its warm-up iterations in one ``warmup`` range).
  ``measured_inside``: the steps that start inside a range of this name are measured, the others
  warm-up (a script that wraps its measured iterations in one range).
  ``warmup_rule: script``: the first ``script_warmup_steps`` steps of the last run are warm-up,
  the count read from the script's source (a script that marks its warm-up only by how it times
  the later steps: a CUDA event recorded after the warm-up, or a synchronize after each timed step).
  ``warmup_rule: profiler_window`` (any kind but ``ranges``): the steps that start inside the
  process's window from its first ``cudaProfilerStart`` runtime call to the next
  ``cudaProfilerStop`` (none: to the end) are measured, the others warm-up.
  ``pytorch_labels`` (``--pytorch=functions-trace``): a step runs from the start of an outermost
  ``torch.nn.modules.Module.__call__`` range on the main thread (the model call) to the end of the
  next ``optimizer`` range (``torch.optim.AdamW.step``); with ``inference_calls``, a model call
  that no ``backward`` range takes (as for ``inference_forwards``) is an evaluation pass and
  starts no step.
  ``between_waits`` (no NVTX phase, a hand-written optimizer with no fused kernel): each span
  between two ``cudaDeviceSynchronize`` calls of the process (the first from the capture's start)
  that holds a launch from another thread (the autograd thread) is a step, from its first launch to
  its last; its backward is those launches, its forward the main thread's before them, its
  optimizer step the main thread's after them (a script that synchronizes after each update).
  With ``forward_only: true`` (a forward-only loop: no launch from another thread) each span
  between two waits that holds launches is a step and its forward pass, from its first launch to
  just before the next one's first launch, the last for the median of the others' lengths (the
  first's left out where there are two others or more), up to before the process's next kernel
  launch; the span from the capture's start (the set-up) is none, or
  with ``first_span_call: true`` (a script that waits after each call only) its last as many
  kernels as the next span holds are the first call.
  ``group: K`` (any kind but ``ranges``; a script that updates K models in turn, each with its
  own optimizer): each K consecutive steps in time are one step, from the first's start to the
  K-th's end.
  ``optimizer_kernel_runs`` (no NVTX): kernels in launch order; the ``multi_tensor_apply_kernel``
  launches (the foreach AdamW step, and a foreach gradient clipping before it) with no launch from
  another thread (the autograd thread) between them form one run, from its first to its last such
  launch, and a run ends a step; step i runs from the first launch after run i-1 (the first launch
  of the capture for i = 0) to the last launch of run i. Its phases: the launches from threads other than the main one (the autograd thread) form
  the backward passes, cut where the main thread launches 10 or more kernels in between (the
  forward of the next micro-batch, with gradient accumulation); each backward runs from its first
  to its last such launch, each forward from the first main-thread launch after the step's start
  or the previous backward to before its backward's first launch; optimizer = the run.
  ``phases_by_name`` (with steps from the kernels or the waits) takes the phases from the
  manifest's ``phases`` rules instead (PyTorch's labels, where the script has no range); a step
  between waits then starts right after the wait before it, where its labels open.
- Phases (manifest ``phases``): ranges with one of the listed names (``outermost``: not inside
  another range of the same name; ``main_thread``: on the main thread only), or for a backward
  with no range (``autograd_thread``) each run of launches from threads other than the main one,
  cut as for ``optimizer_kernel_runs`` below, for a forward with no range (``before_backward``)
  the main thread's launches before each such run, from the first after the previous run to just
  before the run's first launch, and for an optimizer step with no range
  (``optimizer_runs``) each run of ``multi_tensor_apply_kernel`` launches as defined there, or for
  one with neither a range nor a fused kernel (a hand-written optimizer, ``after_backward_in``: a
  regex of step ranges; ``backward``: the backward's range names, or ``autograd_thread``) the main
  thread's launches in each such step after its backward; a phase range inside
  another range of the same phase is not a separate pass. ``closure`` (an optimizer step that runs
  its step's passes: ``optimizer.step(closure)``, as PyTorch Lightning does) names the pass ranges
  it may hold; an optimizer range holding any of them starts 1 ns after the last of them ends.
  ``ends_before: PHASE`` (a ``Backward`` range around ``loss.backward()`` and the optimizer step):
  each of the phase's windows ends 1 ns before the first window of PHASE that starts inside it.
  ``calls`` (one range around a loop of model calls) names the range that opens each call: the
  range is cut into one pass per call, from each such range's start to just before the next's
  (the first from the range's start, the last to its end). ``calls_count: K`` (one range around
  a loop of K model calls that have no range of their own, K from the script) cuts the range's
  kernels, in launch order, into K slices of as many kernels; pass j runs from slice j's first
  launch (the range's start for the first) to just before the next slice's first launch (the last
  to the range's end). A phase range is measured when its start
  lies in a measured step. Passes per phase = measured phase
  ranges. Per pass = the sum over measured passes divided by their number.
- nsys a: mean CPU span (end - start) of the measured forward ranges, their mean kernel time
  (sum of kernel durations) and mean GPU span (first kernel start to last kernel end).
- nsys b: measured forward kernels grouped by demangled name (one template instance a kernel, as
  nsys's kernel summary counts them); the group with the most time, its time and calls per
  forward pass; and the leader over the kernels of the backward passes and of
  the forward passes in the same steps, its time and calls per backward pass (an inference forward
  outside the steps is left out there).
- nsys c: the five non-matmul ``shortName`` groups with the most forward time, with share of the
  forward kernel time.
- nsys d: matmul share of kernel time, forward only and whole measured steps. Matmul (on the
  demangled name, case-insensitive): contains ``nvjet``, ``gemm``, ``xmma``, ``gemv``,
  ``splitkreduce`` or ``cublasLt::epilogue`` (the bias/activation pass that finishes a cuBLASLt
  GEMM), or is a Triton template ``triton_tem_*mm*``; never a Triton pointwise or
  reduction kernel ``triton_poi_``/``triton_red_``/``triton_per_``, nor a cuDNN convolution run as
  an implicit GEMM (``fprop``, ``dgrad``, ``wgrad``, ``convolution`` or ``convolve`` in the name).
  Attention kernels (flash, fmha) are not matmul here.
- nsys e: inside measured forward ranges, kernel time per forward pass in the softmax part range
  and in the two matmul part ranges (scores and value; one figure when a script uses one name for
  both), all kernels launched in them, and the matmul kernels among them; none where the manifest
  lists a part with no name (the script ranges it not: the three parts are needed).
- mem-f (traces with ``CUDA_GPU_MEMORY_USAGE_EVENTS`` and a ``mem_f`` manifest entry): in the
  first measured step, the blocks are the direct children of the model call (outermost
  ``Module.__call__`` on the main thread) that repeat with the same non-zero number of nested
  ``Module.__call__`` ranges. A block's bytes saved for backward = device allocations (memKind
  device, operation allocation) whose event time lies in the block's range and whose address is not
  freed before the first ``torch.autograd.backward`` range after the model call starts. Each saved
  allocation is charged to the outermost autograd-shapes op range (``<op>, seq = …`` or
  ``<op>, op_id = …``) on the allocating thread (the thread of the ``cudaMallocAsync`` row with the
  event's correlationId) enclosing the event time; top five ops over all blocks with their share.
  Also: device bytes allocated and not freed before the step (baseline), at the backward's start,
  and the peak inside the step (events before the capture have time 0).
"""
from __future__ import annotations

import bisect
import functools
import json
import lzma
import re
import sqlite3
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

FOREIGN = Path(__file__).resolve().parent / "data" / "foreign"
MANIFEST = FOREIGN / "manifest.json"
REFERENCE = FOREIGN / "reference.json"

MATMUL = re.compile(r"nvjet|gemm|xmma|gemv|splitkreduce|cublaslt::epilogue|(^|\W)triton_tem_\w*mm", re.I)
TRITON_POINTWISE = re.compile(r"(^|\W)triton_(poi|red|per)_")
# cuDNN convolutions run as implicit GEMMs (sm90_xmma_fprop_implicit_gemm_*, ImplicitGemmConvolution):
# convolutions, not matrix multiplications.
CONVOLUTION = re.compile(r"fprop|dgrad|wgrad|convolution|convolve", re.I)
OP_RANGE = re.compile(r"^[A-Za-z_][\w:.]*, (seq|op_id) = ")
MODULE_CALL = "torch.nn.modules.Module.__call__"
OPTIMIZER_KERNEL = "multi_tensor_apply_kernel"
FORWARD_MIN_LAUNCHES = 10  # main-thread launches between two backward runs that make them two passes


@functools.cache
def is_matmul(demangled: str) -> bool:
    return not TRITON_POINTWISE.search(demangled) and not CONVOLUTION.search(demangled) and bool(MATMUL.search(demangled))


def _ms(ns: float) -> float:
    return round(ns / 1e6, 4)


def _round(x: float) -> float:
    return round(x, 4)


def connect(path: Path) -> sqlite3.Connection:
    """Open a (possibly xz-packed) export in memory."""
    data = lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()
    con = sqlite3.connect(":memory:")
    if hasattr(con, "deserialize"):
        con.deserialize(data)
        return con
    tmp = tempfile.NamedTemporaryFile(suffix=".sqlite", delete=False)  # Python < 3.11
    tmp.write(data)
    tmp.close()
    return sqlite3.connect(tmp.name)


class Range:
    __slots__ = ("start", "end", "name", "tid", "device")

    def __init__(self, start, end, name, tid, device=None):
        self.start, self.end, self.name, self.tid, self.device = start, end, name, tid, device

    def holds(self, t: int) -> bool:
        return self.start <= t <= self.end


class Kernel:
    __slots__ = ("launch", "tid", "start", "end", "short", "name", "device")

    def __init__(self, launch, tid, start, end, short, name, device):
        self.launch, self.tid, self.start, self.end = launch, tid, start, end
        self.short, self.name, self.device = short, name, device

    @property
    def dur(self) -> int:
        return self.end - self.start


class Process:
    """One process of a trace: its kernels in launch order and its NVTX ranges by start."""

    def __init__(self, pid: int):
        self.pid = pid
        self.kernels: list[Kernel] = []
        self.launches: list[int] = []
        self.ranges: list[Range] = []
        self.no_launch = 0

    def finish(self) -> None:
        self.kernels.sort(key=lambda k: (k.launch, k.start))
        self.launches = [k.launch for k in self.kernels]
        self.ranges.sort(key=lambda r: (r.start, -r.end))

    def launched_in(self, start: int, end: int, tid: int | None = None) -> list[Kernel]:
        lo = bisect.bisect_left(self.launches, start)
        hi = bisect.bisect_right(self.launches, end)
        return [k for k in self.kernels[lo:hi] if tid is None or k.tid == tid]

    def named(self, names, *, tid: int | None = None) -> list[Range]:
        names = {names} if isinstance(names, str) else set(names)
        return [r for r in self.ranges if r.name in names and (tid is None or r.tid == tid)]


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in con.execute(f"PRAGMA table_info({table})")}


def load(path: Path, scopes: bool = False) -> tuple[dict[int, Process], sqlite3.Connection]:
    """The trace's processes; with ``scopes`` (``emit_nvtx``'s record-function scopes), a range
    named ``<scope>, op_id = <n>`` (a lower-case scope name) is named ``<scope>``."""
    con = connect(path)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    strings = dict(con.execute("SELECT id, value FROM StringIds"))
    launch = {}
    for corr, start, gtid in con.execute(
            "SELECT correlationId, start, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IS NOT NULL"):
        launch[((gtid >> 24) & 0xFFFFFF, corr)] = (start, gtid & 0xFFFFFF)
    procs: dict[int, Process] = {}
    rows = [(corr, gpid, start, end, strings.get(short, str(short)), strings.get(name, str(name)), device)
            for corr, gpid, start, end, short, name, device in con.execute(
                "SELECT correlationId, globalPid, start, end, shortName, demangledName, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL")]
    if "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" in tables:
        rows += [(corr, gpid, start, end, f"[CUDA graph {graph}]", f"[CUDA graph {graph}]", device)
                 for corr, gpid, start, end, graph, device in con.execute(
                     "SELECT correlationId, globalPid, start, end, graphId, deviceId FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE")]
    for corr, gpid, start, end, short, name, device in rows:
        pid = (gpid >> 24) & 0xFFFFFF
        proc = procs.setdefault(pid, Process(pid))
        found = launch.get((pid, corr))
        if found is None:
            proc.no_launch += 1
            continue
        proc.kernels.append(Kernel(found[0], found[1], start, end, short, name, device))
    if "NVTX_EVENTS" in tables:
        text_id = "textId" in _columns(con, "NVTX_EVENTS")
        sql = ("SELECT start, end, text, textId, globalTid FROM NVTX_EVENTS" if text_id
               else "SELECT start, end, text, NULL, globalTid FROM NVTX_EVENTS")
        for start, end, text, tid_, gtid in con.execute(sql + " WHERE eventType IN (59, 60) AND end IS NOT NULL"):
            name = text if text is not None else strings.get(tid_)
            if scopes and name is not None:
                name = re.sub(r"^([a-z][a-z0-9_ ]*), op_id = \d+$", r"\1", name)
            pid = (gtid >> 24) & 0xFFFFFF
            if name is None or pid not in procs:
                continue
            procs[pid].ranges.append(Range(start, end, name, gtid & 0xFFFFFF))
    for proc in procs.values():
        proc.finish()
    return procs, con


def outermost(ranges: list[Range]) -> list[Range]:
    """Ranges not inside another range of the list (same thread)."""
    out: list[Range] = []
    last_end: dict[int, int] = {}
    for r in sorted(ranges, key=lambda r: (r.start, -r.end)):
        if r.start <= last_end.get(r.tid, -1) and r.end <= last_end[r.tid]:
            continue
        out.append(r)
        last_end[r.tid] = max(last_end.get(r.tid, -1), r.end)
    return out


# ---------------------------------------------------------------------------------------- steps

def _step_ranges(proc: Process, spec: dict, phase_rules: dict) -> list[Range]:
    measured_re = re.compile(spec["measured"])
    warm_re = re.compile(spec["warmup"]) if spec.get("warmup") else None
    steps = outermost([r for r in proc.ranges if measured_re.search(r.name) or (warm_re and warm_re.search(r.name))])
    if not spec.get("trailing_phases"):
        return steps
    # the script closes each step's range before a phase: the phase ranges that start after a step
    # ends and before the next one starts are that step's, which runs on to their end
    phase_ranges = [r for rule in phase_rules.values() for r in _phase_ranges(proc, rule)]
    out = []
    for i, step in enumerate(steps):
        following = steps[i + 1].start if i + 1 < len(steps) else float("inf")
        ends = [r.end for r in phase_ranges if step.end < r.start < following]
        out.append(Range(step.start, max([step.end, *ends]), step.name, step.tid))
    return out


def _steps_from_ranges(proc: Process, spec: dict, first_n: int, phase_rules: dict) -> tuple[list[Range], list[str]]:
    measured_re = re.compile(spec["measured"])
    warm_re = re.compile(spec["warmup"]) if spec.get("warmup") else None
    steps = _step_ranges(proc, spec, phase_rules)
    measured, warm_names = [], []
    for i, r in enumerate(steps):
        if i < first_n or (warm_re and warm_re.search(r.name) and not measured_re.search(r.name)):
            warm_names.append(r.name)
        else:
            measured.append(r)
    if spec.get("measured_inside"):  # step ranges outside the range around the measured ones are warm-up
        regions = proc.named(spec["measured_inside"])
        warm_names += [r.name for r in measured if not _inside_any(r.start, regions)]
        measured = [r for r in measured if _inside_any(r.start, regions)]
    if spec.get("warmup_count"):  # iterations with no range of their own inside the region: the script's count
        for region in proc.named(spec["warmup_region"]):
            warm_names += [f"{region.name} #{i}" for i in range(spec["warmup_count"])]
    elif spec.get("warmup_region"):
        count_re = re.compile(spec["warmup_count_by"])
        for region in proc.named(spec["warmup_region"]):
            inner = [r for r in proc.ranges if region.start <= r.start and r.end <= region.end and count_re.search(r.name)]
            warm_names += [f"{region.name}/{r.name}" for r in outermost(inner)]
    warm_names += _iterations_before(proc, spec, steps)
    if spec.get("warmup_count_outside"):
        count_re = re.compile(spec["warmup_count_outside"])
        outside = [r for r in proc.ranges if count_re.search(r.name) and not _inside_any(r.start, measured)]
        warm_names += [f"(outside steps)/{r.name}" for r in outermost(outside)]
    return measured, warm_names


def _iterations_before(proc: Process, spec: dict, steps: list[Range]) -> list[str]:
    """A warm-up name for each iteration with no range before the first of ``steps``: with
    ``warmup_before: autograd_runs``, each backward run (:func:`_backward_runs`) that starts
    before it; with ``warmup_before: call_repeats`` (a forward-only benchmark), each of the
    back-to-back repeats of the last step's kernel names, in launch order, that end the kernels
    launched before it."""
    first = min((r.start for r in steps), default=1 << 62)
    if spec.get("warmup_before") == "autograd_runs":
        runs = _backward_runs(proc.kernels, proc.pid)
        return [f"(before steps) #{i}" for i, (start, _) in enumerate(runs) if proc.kernels[start].launch < first]
    if spec.get("warmup_before") == "call_repeats" and steps:
        call = [k.name for k in _kernels_of(proc, [max(steps, key=lambda r: r.start)])]
        before = [k.name for k in proc.kernels if k.launch < first]
        count = 0
        while call and (count + 1) * len(call) <= len(before) and \
                before[len(before) - (count + 1) * len(call):len(before) - count * len(call)] == call:
            count += 1
        return [f"(calls before steps) #{i}" for i in range(count)]
    return []


def _departing(proc: Process, steps: list[Range]) -> int:
    """How many leading steps depart from the steady state (the stated rule where a trace does
    not mark its warm-up): a step departs when its kernel count lies outside the range of the
    counts of the steps after it, or its kernel time (NCCL kernels left out: theirs is mostly a
    rank's wait for the others) or CPU span is over 1.5 times the median of theirs and over 3
    median absolute deviations of theirs above that median; counting stops at the first step
    that does not; the last two steps never, or of two steps the last."""
    figures = []
    for step in steps:
        kernels = _kernels_of(proc, [step])
        work = sum(k.dur for k in kernels if "nccl" not in k.name.lower())
        figures.append((len(kernels), work, step.end - step.start))

    def stands_out(value, values):
        median = statistics.median(values)
        return value > 1.5 * median and value > median + 3 * statistics.median(abs(v - median) for v in values)

    count = 0
    for position in range(len(steps) - (2 if len(steps) > 2 else 1)):
        later = figures[position + 1:]
        kernels, time, span = figures[position]
        counts = [f[0] for f in later]
        if not min(counts) <= kernels <= max(counts) or stands_out(time, [f[1] for f in later]) \
                or stands_out(span, [f[2] for f in later]):
            count += 1
        else:
            break
    return count


def _training_only(firsts: list[Range], backwards: list[Range]) -> list[Range]:
    """``firsts`` less evaluation passes: each backward range, in start order, takes the latest
    first range that started before it and that no backward took yet; a first range none takes is
    an evaluation pass."""
    taken, waiting = set(), []
    for start, kind, index in sorted([(r.start, 0, i) for i, r in enumerate(firsts)] + [(b.start, 1, -1) for b in backwards]):
        if kind == 0:
            waiting.append(index)
        elif waiting:
            taken.add(waiting.pop())
    return [r for i, r in enumerate(firsts) if i in taken]


def _steps_from_phases(proc: Process, spec: dict, phases: dict) -> list[Range]:
    firsts = sorted(_phase_ranges(proc, phases[spec["first"]]), key=lambda r: r.start)
    if spec.get("inference_forwards"):
        firsts = _training_only(firsts, _phase_ranges(proc, phases["backward"]))
    lasts = sorted(_phase_ranges(proc, phases[spec["last"]]), key=lambda r: r.start)
    steps, used = [], set()
    for f in firsts:
        nxt = [r for r in lasts if r.start >= f.start]
        if nxt and id(nxt[0]) not in used:  # a later first phase before the same last one: the same step
            used.add(id(nxt[0]))
            steps.append(Range(f.start, nxt[0].end, f"{f.name}..{nxt[0].name}", f.tid))
    return steps


def _steps_from_labels(proc: Process, spec: dict, phases: dict) -> list[Range]:
    calls = outermost(proc.named(MODULE_CALL, tid=proc.pid))
    if spec.get("inference_calls"):  # a call whose next call or backward is a call: an evaluation pass
        calls = _training_only(calls, _phase_ranges(proc, phases["backward"]))
    opts = sorted(_phase_ranges(proc, phases[spec["last"]]), key=lambda r: r.start)
    steps, used = [], set()
    for call in calls:
        nxt = [o for o in opts if o.start >= call.end and id(o) not in used]
        if not nxt:
            continue
        if steps and steps[-1].end >= call.start:  # a second model call before the optimizer: same step
            continue
        used.add(id(nxt[0]))
        steps.append(Range(call.start, nxt[0].end, "model call..optimizer", call.tid))
    return steps


def _optimizer_runs(proc: Process) -> list[tuple[int, int]]:
    """(first, last) positions among the process's kernels of each optimizer run: launches of
    ``multi_tensor_apply_kernel`` with no launch from another thread (the autograd thread) between."""
    ks = proc.kernels
    runs: list[tuple[int, int]] = []
    for i, k in enumerate(ks):
        if OPTIMIZER_KERNEL not in k.name:
            continue
        if runs and not any(other.tid != proc.pid for other in ks[runs[-1][1] + 1:i]):
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _steps_from_kernels(proc: Process) -> tuple[list[Range], dict[str, list[Range]]]:
    ks = proc.kernels
    runs = _optimizer_runs(proc)
    steps, phases = [], {"forward": [], "backward": [], "optimizer": []}
    begin = 0
    for first, last in runs:
        steps.append(Range(ks[begin].launch, ks[last].launch, "kernels..optimizer run", proc.pid))
        forwards, backwards = _unranged_passes(ks[begin:first], proc.pid)
        phases["forward"] += forwards
        phases["backward"] += backwards
        phases["optimizer"].append(Range(ks[first].launch, ks[last].launch, "optimizer run", proc.pid))
        begin = last + 1
    return steps, phases


def _steps_between_waits(proc: Process, con: sqlite3.Connection, forward_only: bool = False,
                         first_span_call: bool = False, from_wait: bool = False) -> tuple[list[Range], dict[str, list[Range]]]:
    """Steps and phases of ``between_waits``: each span between two of the process's
    ``cudaDeviceSynchronize`` calls (the first from the capture's start) that holds a launch from
    another thread than the main one is a step, from its first launch to its last; its backward
    the other thread's launches, its forward the main thread's before them, its optimizer step the
    main thread's after them. ``forward_only``: each span between two waits that holds a launch is
    a step and its forward pass; with ``first_span_call`` the first span's last as many kernels as
    the second span holds are one too; with ``from_wait`` a step with a backward starts right after
    the wait before it (where phases come from labels, which open before their first launch)."""
    waits = [start for (start,) in con.execute(
        """SELECT r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
        WHERE s.value LIKE 'cudaDeviceSynchronize%' AND ((r.globalTid >> 24) & 16777215) = ? ORDER BY r.start""",
        (proc.pid,))]
    steps, phases = [], {"forward": [], "backward": [], "optimizer": []}
    for low, high in zip([-1, *waits], waits):
        body = proc.launched_in(low + 1, high - 1)
        if forward_only and body and low >= 0:
            steps.append(Range(body[0].launch, body[-1].launch, "between waits", proc.pid))
            continue
        if forward_only and body and first_span_call:  # the set-up, then the first call: as many kernels as the next
            after = proc.launched_in(high + 1, waits[1] - 1) if len(waits) > 1 else []
            call = body[len(body) - len(after):] if 0 < len(after) <= len(body) else []
            steps += [Range(call[0].launch, call[-1].launch, "between waits", proc.pid)] if call else []
            continue
        other = [i for i, k in enumerate(body) if k.tid != proc.pid]
        if not other:
            continue
        # from the wait before (its phases' labels open before their first launch), else the first launch
        steps.append(Range(low + 1 if from_wait else body[0].launch, body[-1].launch, "between waits", proc.pid))
        before = [k for k in body[:other[0]] if k.tid == proc.pid]
        after = [k for k in body[other[-1] + 1:] if k.tid == proc.pid]
        if before:
            phases["forward"].append(Range(before[0].launch, body[other[0]].launch - 1, "forward (main thread)", proc.pid))
        phases["backward"].append(Range(body[other[0]].launch, body[other[-1]].launch, "backward (autograd thread)", proc.pid))
        if after:
            phases["optimizer"].append(Range(after[0].launch, after[-1].launch, "update (main thread)", proc.pid))
    if forward_only and steps:  # each call to the next one's first launch; the last for the median of the others'
        lengths = [b.start - a.start - 1 for a, b in zip(steps, steps[1:])]
        median = statistics.median(lengths[1:] if len(lengths) > 1 else lengths) if lengths else 0
        later = bisect.bisect_right(proc.launches, steps[-1].end)  # the first kernel after the loop
        limit = proc.launches[later] - 1 if later < len(proc.launches) else steps[-1].end + int(median)
        last_end = max(steps[-1].end, min(int(steps[-1].start + median), limit))
        steps = [Range(a.start, b.start - 1, a.name, a.tid) for a, b in zip(steps, steps[1:])] + \
            [Range(steps[-1].start, last_end, steps[-1].name, steps[-1].tid)]
        phases = {"forward": [Range(r.start, r.end, "forward (main thread)", r.tid) for r in steps]}
    return steps, phases


def _unranged_passes(kernels: list[Kernel], pid: int) -> tuple[list[Range], list[Range]]:
    """The forward and backward passes of ``kernels`` (in launch order) with no range: each backward
    is a run of :func:`_backward_runs`, from its first to its last launch; its forward, the main
    thread's launches from the first after the previous run to just before the run's first launch."""
    forwards, backwards, after = [], [], 0  # where the next forward's launches begin
    for first, last in _backward_runs(kernels, pid):
        forward = [k for k in kernels[after:first] if k.tid == pid]
        if forward:
            forwards.append(Range(forward[0].launch, kernels[first].launch - 1, "forward (main thread)", pid))
        backwards.append(Range(kernels[first].launch, kernels[last].launch, "backward (autograd thread)", pid))
        after = last + 1
    return forwards, backwards


def _backward_runs(body: list[Kernel], main_tid: int) -> list[tuple[int, int]]:
    """(first, last) positions in ``body`` of the backward passes: launches from threads other than
    the main one, cut where the main thread launches :data:`FORWARD_MIN_LAUNCHES` or more kernels in
    between (a micro-batch's forward, with gradient accumulation); fewer main-thread launches inside
    a backward leave it whole."""
    runs: list[list[int]] = []
    main_between = 0
    for i, k in enumerate(body):
        if k.tid == main_tid:
            main_between += 1
        elif runs and main_between < FORWARD_MIN_LAUNCHES:
            runs[-1][1], main_between = i, 0
        else:
            runs.append([i, i])
            main_between = 0
    return [(first, last) for first, last in runs]


# --------------------------------------------------------------------------------------- phases

def _phase_ranges(proc: Process, rule: dict) -> list[Range]:
    if rule.get("autograd_thread"):  # a backward with no range: each run of launches from that thread
        return _unranged_passes(proc.kernels, proc.pid)[1]
    if rule.get("before_backward"):  # a forward with no range: the main thread's launches before each backward
        return _unranged_passes(proc.kernels, proc.pid)[0]
    if rule.get("after_backward_in"):  # an update with no range and no fused kernel: the main thread's launches
        return _updates_after_backward(proc, rule)  # after the backward in each step range
    if rule.get("optimizer_runs"):  # an optimizer step with no range: each run of its fused kernels
        return [Range(proc.kernels[first].launch, proc.kernels[last].launch, "optimizer run", proc.pid)
                for first, last in _optimizer_runs(proc)]
    found = proc.named(rule["names"], tid=proc.pid if rule.get("main_thread") else None)
    if rule.get("outermost"):
        found = outermost(found)
    if rule.get("calls"):  # one range around several model calls: each call, opened by a `calls` range, a pass
        found = [Range(start, end, r.name, r.tid) for r in found
                 for opens in [sorted(c.start for c in proc.named(rule["calls"]) if r.start <= c.start and c.end <= r.end)]
                 for start, end in zip([r.start, *opens[1:]], [o - 1 for o in opens[1:]] + [r.end])]
    if rule.get("calls_count"):  # one range around K model calls with no range: K slices of its kernels
        found = [piece for r in found for piece in _cut_into_calls(proc, r, rule["calls_count"])]
    if rule.get("closure"):  # an optimizer step running its step's passes: the update follows the last
        passes = proc.named(rule["closure"])
        found = [Range(max(held) + 1, r.end, r.name, r.tid) if held else r for r in found
                 for held in [[p.end for p in passes if r.start <= p.start and p.end <= r.end]]]
    # a phase range inside another range of the same phase is not a separate pass
    found.sort(key=lambda r: (r.start, -r.end))
    out: list[Range] = []
    for r in found:
        if out and out[-1].start <= r.start and r.end <= out[-1].end:
            continue
        out.append(r)
    return out


def _updates_after_backward(proc: Process, rule: dict) -> list[Range]:
    """In each range whose name matches ``after_backward_in``, the main thread's kernel launches
    after its backward: after the end of the last range named in ``backward`` inside it, or with
    ``backward: autograd_thread``, after its last launch from another thread; from the first such
    launch to the last (none where there is none)."""
    out = []
    for step in [r for r in proc.ranges if re.search(rule["after_backward_in"], r.name)]:
        kernels = proc.launched_in(step.start, step.end)
        if rule["backward"] == "autograd_thread":
            other = [k.launch for k in kernels if k.tid != proc.pid]
            done = max(other, default=None)
        else:
            done = max((r.end for r in proc.named(rule["backward"]) if step.start <= r.start and r.end <= step.end), default=None)
        after = [k for k in kernels if done is not None and k.launch > done and k.tid == proc.pid]
        if after:
            out.append(Range(after[0].launch, after[-1].launch, "update (main thread)", proc.pid))
    return out


def _cut_into_calls(proc: Process, r: Range, calls: int) -> list[Range]:
    """``r`` cut into ``calls`` passes of as many of its kernels each (launch order)."""
    launches = sorted(k.launch for k in proc.launched_in(r.start, r.end))
    opens = [launches[j * len(launches) // calls] for j in range(1, calls)]
    return [Range(start, end, r.name, r.tid) for start, end in zip([r.start, *opens], [o - 1 for o in opens] + [r.end])]


def _inside_any(t: int, windows: list[Range]) -> bool:
    return any(w.holds(t) for w in windows)


def _launched(proc: Process, r: Range) -> list[Kernel]:
    """The kernels launched inside ``r`` (on its GPU alone, for a pass per GPU)."""
    return [k for k in proc.launched_in(r.start, r.end) if r.device is None or k.device == r.device]


def _per_gpu(proc: Process, ranges: list[Range], split_model: bool = False) -> list[Range]:
    """``ranges`` with each one whose kernels ran on several GPUs made a pass per GPU (none with
    ``split_model``: a pass holds every GPU's work)."""
    if split_model:
        return ranges
    out = []
    for r in ranges:
        devices = sorted({k.device for k in proc.launched_in(r.start, r.end)})
        out += [Range(r.start, r.end, r.name, r.tid, d) for d in devices] if len(devices) > 1 else [r]
    return out


def _kernels_of(proc: Process, ranges: list[Range]) -> list[Kernel]:
    seen, out = set(), []
    for r in ranges:
        for k in _launched(proc, r):
            if id(k) not in seen:
                seen.add(id(k))
                out.append(k)
    return out


def _group(kernels: list[Kernel], key=lambda k: k.short) -> dict[str, list]:
    groups: dict[str, list] = defaultdict(lambda: [0, 0, ""])
    for k in kernels:
        g = groups[key(k)]
        g[0] += k.dur
        g[1] += 1
        g[2] = k.name
    return groups


def _leader(kernels: list[Kernel], passes: int) -> dict | None:
    if not kernels:
        return None
    groups = _group(kernels, key=lambda k: k.name)
    short, (ns, calls, _) = max(groups.items(), key=lambda kv: (kv[1][0], kv[0]))
    return {"kernel": short, "ms_per_pass": _ms(ns / passes), "calls_per_pass": _round(calls / passes)}


# ------------------------------------------------------------------------------------ attention

def _attention(proc: Process, forwards: list[Range], spec: dict) -> dict | None:
    if any(spec.get(part) == [] for part in ("softmax", "matmul_scores", "matmul_value")):
        return None  # a part the script leaves unranged: (e) needs all three
    parts = {}
    for part in ("softmax", "matmul_scores", "matmul_value", "matmul"):
        if spec.get(part):
            parts[part] = spec[part]
    name_to_part = {n: p for p, names in parts.items() for n in names}
    part_ranges = [r for r in proc.ranges if r.name in name_to_part and _inside_any(r.start, forwards)]
    if not part_ranges:
        return None
    owner: dict[int, tuple[int, str, Kernel]] = {}
    for r in part_ranges:
        for k in proc.launched_in(r.start, r.end, tid=r.tid):
            if id(k) not in owner or owner[id(k)][0] < r.start:  # innermost: the latest-starting enclosing range
                owner[id(k)] = (r.start, name_to_part[r.name], k)
    n = len(forwards)
    totals = defaultdict(int)
    gemm = defaultdict(int)
    for _, part, k in owner.values():
        key = "matmul" if part.startswith("matmul") else part
        totals[key] += k.dur
        if part != key:
            totals[part] += k.dur
        if is_matmul(k.name):
            gemm[key] += k.dur
    out = {
        "part_ranges_per_pass": _round(len(part_ranges) / n),
        "softmax_ms_per_pass": _ms(totals["softmax"] / n),
        "matmul_ms_per_pass": _ms(totals["matmul"] / n),
        "matmul_parts_gemm_ms_per_pass": _ms(gemm["matmul"] / n),
        "softmax_gemm_ms_per_pass": _ms(gemm["softmax"] / n),
    }
    for part in ("matmul_scores", "matmul_value"):
        if part in parts:
            out[f"{part}_ms_per_pass"] = _ms(totals[part] / n)
    out["softmax_over_matmul"] = _round(totals["softmax"] / totals["matmul"]) if totals["matmul"] else None
    return out


# ---------------------------------------------------------------------------------------- mem-f

def _mem_f(proc: Process, con: sqlite3.Connection, step: Range, spec: dict) -> dict | None:
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "CUDA_GPU_MEMORY_USAGE_EVENTS" not in tables:
        return None
    device_kind = spec.get("mem_kind", 2)
    events = []
    for start, gpid, address, nbytes, kind, op, corr in con.execute(
            "SELECT start, globalPid, address, bytes, memKind, memoryOperationType, correlationId "
            "FROM CUDA_GPU_MEMORY_USAGE_EVENTS"):
        if (gpid >> 24) & 0xFFFFFF == proc.pid and kind == device_kind:
            events.append((start, op, address, nbytes, corr))
    events.sort()
    callers = {}
    for corr, gtid in con.execute("SELECT correlationId, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
        if (gtid >> 24) & 0xFFFFFF == proc.pid:
            callers[corr] = gtid & 0xFFFFFF
    frees: dict[int, list[int]] = defaultdict(list)
    for start, op, address, _, _ in events:
        if op == 1:
            frees[address].append(start)

    def freed_at(address: int, t: int):
        times = frees.get(address, [])
        i = bisect.bisect_right(times, t)
        return times[i] if i < len(times) else None

    main = proc.pid
    calls = [r for r in proc.named(MODULE_CALL, tid=main) if step.start <= r.start and r.end <= step.end]
    if not calls:
        return None
    model = outermost(calls)[0]
    inner = [r for r in calls if r is not model and model.start <= r.start and r.end <= model.end]
    children = outermost(inner)
    signature = {id(c): sum(1 for r in inner if r is not c and c.start <= r.start and r.end <= c.end) for c in children}
    groups: dict[int, list[Range]] = defaultdict(list)
    for c in children:
        if signature[id(c)]:
            groups[signature[id(c)]].append(c)
    if not groups:
        return None
    blocks = max(groups.values(), key=len)
    backward = [r for r in proc.named(spec.get("backward", "torch.autograd.backward"))
                if model.end <= r.start <= step.end]
    if not backward:
        return None
    bwd_start = backward[0].start
    op_ranges = defaultdict(list)  # per thread, the outermost op ranges: they do not overlap
    for r in outermost([r for r in proc.ranges if OP_RANGE.match(r.name)]):
        op_ranges[r.tid].append(r)
    op_starts = {tid: [r.start for r in rs] for tid, rs in op_ranges.items()}

    def outer_op(tid: int, t: int) -> str:
        i = bisect.bisect_right(op_starts.get(tid, []), t) - 1
        if i >= 0 and op_ranges[tid][i].end >= t:
            return op_ranges[tid][i].name.split(",")[0]
        return "(no op range)"

    per_block, by_op = [], defaultdict(int)
    for b in blocks:
        saved = 0
        for start, op, address, nbytes, corr in events:
            if op != 0 or not b.holds(start):
                continue
            f = freed_at(address, start)
            if f is None or f >= bwd_start:
                saved += nbytes
                by_op[outer_op(callers.get(corr, main), start)] += nbytes
        per_block.append(saved)
    total = sum(per_block)
    live, baseline, at_backward, peak = 0, None, None, 0
    for start, op, _, nbytes, _ in events:
        if baseline is None and start >= step.start:
            baseline, peak = live, live
        if at_backward is None and start >= bwd_start:
            at_backward = live
        if start > step.end:
            break
        live += nbytes if op == 0 else -nbytes
        if baseline is not None:
            peak = max(peak, live)
    mib = 1024 ** 2
    top = sorted(by_op.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    return {
        "blocks": len(blocks),
        "saved_mib_per_block": [round(s / mib, 3) for s in per_block],
        "saved_mib_per_block_mean": round(total / len(blocks) / mib, 3),
        "top_ops": [{"op": op, "mib": round(v / mib, 3), "share": _round(v / total)} for op, v in top] if total else [],
        "baseline_mib": round((baseline or 0) / mib, 3),
        "at_backward_start_mib": round((at_backward or 0) / mib, 3),
        "peak_in_step_mib": round(peak / mib, 3),
    }


# --------------------------------------------------------------------------------------- driver

def _leading_warmup(proc: Process, steps: list[Range], spec: dict) -> int:
    """How many of the last run's leading ``steps`` are warm-up by the manifest's ``warmup_rule``:
    ``departing`` (:func:`_departing`), ``script`` (the script's own count, ``script_warmup_steps``),
    else none."""
    rule = spec.get("warmup_rule")
    return _departing(proc, steps) if rule == "departing" else spec["script_warmup_steps"] if rule == "script" else 0


def reference_for(path: Path, entry: dict) -> list[dict]:
    """One entry per process. Where warm-up is the departing rule and every process has as many
    steps (the ranks of one job), each leaves out the most leading steps any process does."""
    procs, con = load(path, scopes=entry.get("record_function_scopes", False))
    order = sorted(procs, key=lambda p: (min((k.device for k in procs[p].kernels), default=-1), p))
    entries = {pid: _entry_for(procs[pid], entry) for pid in order}
    steps = {pid: _candidate_steps(procs[pid], entries[pid], con)[0] for pid in order}
    earlier = sum(entry["steps"].get("runs", [0])[:-1])  # the steps of the runs before the last one
    if entry["steps"].get("capture_cut"):  # a step the capture's end cut off is no step the rule reads
        steps = {pid: [r for r in rs if r not in _cut_last(con, procs[pid], rs)] for pid, rs in steps.items()}
    departing = {pid: earlier + _leading_warmup(procs[pid], steps[pid][earlier:], entries[pid]["steps"]) for pid in order}
    if len(order) > 1 and len({len(s) for s in steps.values()}) == 1:
        departing = dict.fromkeys(order, max(departing.values()))
    out = [_process_reference(procs[pid], con, entries[pid], departing[pid]) for pid in order]
    if "launcher_rank" in entry:
        for res in out:
            res["launcher_rank"] = _launcher_rank(con)
    con.close()
    return out


def _entry_for(proc: Process, entry: dict) -> dict:
    """``entry``, or for a process holding no range its ``measured`` names, the entry of its
    ``unranged_steps`` (a job whose ranges only some processes open) with no phase ranges."""
    spec = entry["steps"]
    if "unranged_steps" not in entry or any(re.search(spec["measured"], r.name) for r in proc.ranges):
        return entry
    return {**entry, "steps": entry["unranged_steps"], "phases": {}, "attention": None}


def _cut_last(con: sqlite3.Connection, proc: Process, steps: list[Range]) -> list[Range]:
    """The last of ``steps`` (by start) when it ends after the end of the process's last CUDA
    runtime call (the capture's end cut it off), else none."""
    if not steps:
        return []
    last_call = con.execute("SELECT max(end) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE ((globalTid >> 24) & 16777215) = ?",
                            (proc.pid,)).fetchone()[0]
    last = max(steps, key=lambda r: r.start)
    return [last] if last.end > last_call else []


def _profiler_window(con: sqlite3.Connection, pid: int) -> tuple[int, int]:
    """The process's first ``cudaProfilerStart`` call to the next ``cudaProfilerStop`` (runtime
    rows named so; no stop: to the end of time)."""
    rows = con.execute("""SELECT r.start, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
        WHERE s.value LIKE 'cudaProfilerSt%' AND ((r.globalTid >> 24) & 16777215) = ? ORDER BY r.start""",
                       (pid,)).fetchall()
    first = min(start for start, name in rows if name.startswith("cudaProfilerStart"))
    stops = [start for start, name in rows if name.startswith("cudaProfilerStop") and start > first]
    return first, stops[0] if stops else 1 << 62


def _launcher_rank(con: sqlite3.Connection) -> dict | None:
    """torchrun's ``RANK`` and ``WORLD_SIZE`` in the environment nsys started in
    (``TARGET_INFO_SYSTEM_ENV``, row ``DeviceEnvironment``: ``KEY=VALUE`` items joined by ``;``)."""
    row = con.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'").fetchone()
    found = dict(item.split("=", 1) for item in row[0].split(";") if item.split("=", 1)[0] in ("RANK", "WORLD_SIZE"))
    return {"rank": int(found["RANK"]), "world_size": int(found["WORLD_SIZE"])} if len(found) == 2 else None


def _candidate_steps(proc: Process, entry: dict, con: sqlite3.Connection) -> tuple[list[Range], dict[str, list[Range]] | None]:
    """Every step of ``proc`` by the manifest's rule, warm-up included, and for steps from the
    kernels their phases."""
    spec, phase_rules = entry["steps"], entry.get("phases", {})
    kind = spec["kind"]
    if kind == "ranges":
        return _step_ranges(proc, spec, phase_rules), None
    if kind == "phase_sequence":
        steps, kernel_phases = _steps_from_phases(proc, spec, phase_rules), None
    elif kind == "pytorch_labels":
        steps, kernel_phases = _steps_from_labels(proc, spec, phase_rules), None
    elif kind == "optimizer_kernel_runs":
        steps, kernel_phases = _steps_from_kernels(proc)
    elif kind == "between_waits":
        steps, kernel_phases = _steps_between_waits(proc, con, spec.get("forward_only", False),
                                                    spec.get("first_span_call", False), spec.get("phases_by_name", False))
    else:
        raise ValueError(f"unknown steps kind {kind}")
    if spec.get("phases_by_name"):  # steps from the kernels, phases from the manifest's rules (PyTorch's labels)
        kernel_phases = None
    group = spec.get("group", 1)  # K models updated in turn: each K consecutive steps are one
    steps = [Range(steps[i].start, steps[i + group - 1].end, steps[i].name, steps[i].tid)
             for i in range(0, len(steps) - group + 1, group)]
    return steps, kernel_phases


def _process_reference(proc: Process, con: sqlite3.Connection, entry: dict, first_n: int) -> dict:
    spec, phase_rules = entry["steps"], entry.get("phases", {})
    if spec["kind"] == "ranges":
        kernel_phases = None
        measured, warm_names = _steps_from_ranges(proc, spec, first_n, phase_rules)
    else:
        steps, kernel_phases = _candidate_steps(proc, entry, con)
        if spec.get("warmup_rule") == "profiler_window":
            low, high = _profiler_window(con, proc.pid)
            measured = [r for r in steps if low <= r.start < high]
            warm_names = [f"{r.name} #{i}" for i, r in enumerate(steps) if not low <= r.start < high]
        elif spec.get("warmup_inside"):
            regions = proc.named(spec["warmup_inside"])
            warm_names = [f"{r.name} #{i}" for i, r in enumerate(steps) if _inside_any(r.start, regions)]
            measured = [r for r in steps if not _inside_any(r.start, regions)]
        elif spec.get("measured_inside"):
            regions = proc.named(spec["measured_inside"])
            warm_names = [f"{r.name} #{i}" for i, r in enumerate(steps) if not _inside_any(r.start, regions)]
            measured = [r for r in steps if _inside_any(r.start, regions)]
        elif spec.get("warmup_named"):
            named = re.compile(spec["warmup_named"])
            warm_names = [f"{r.name} #{i}" for i, r in enumerate(steps) if named.search(r.name)]
            measured = [r for r in steps if not named.search(r.name)]
        else:
            warm_names = [f"{r.name} #{i}" for i, r in enumerate(steps[:first_n])]
            measured = steps[first_n:]
        for region in proc.named(spec.get("warmup_region", [])):  # iterations with no phase range inside it
            warm_names += [f"{region.name} #{i}" for i in range(spec["warmup_count"])]
        warm_names += _iterations_before(proc, spec, steps)
    cut = _cut_last(con, proc, measured) if spec.get("capture_cut") else []
    measured = [r for r in measured if r not in cut]
    windows = measured

    phases: dict[str, list[Range]] = {}
    if kernel_phases is not None:
        for name, rs in kernel_phases.items():
            phases[name] = [r for r in rs if _inside_any(r.start, windows)]
    else:
        for name, rule in phase_rules.items():
            phases[name] = _per_gpu(proc, [r for r in _phase_ranges(proc, rule) if _inside_any(r.start, windows)],
                                    entry.get("split_model", False))
        for name, rule in phase_rules.items():
            if rule.get("ends_before"):  # a later phase's window inside one of this phase's ends it
                later = phases[rule["ends_before"]]
                phases[name] = [Range(r.start, min([r.end, *(o.start - 1 for o in later if r.start < o.start <= r.end)]),
                                      r.name, r.tid, r.device) for r in phases[name]]

    res: dict = {
        "pid": proc.pid,
        "devices": sorted({k.device for k in proc.kernels}),
        "kernels": len(proc.kernels),
        "kernels_without_launch": proc.no_launch,
        "steps": {
            "found": len(measured) + len(warm_names) + len(cut),
            "cut": len(cut),
            "warmup": len(warm_names) + spec.get("warmup_unmarked", 0),
            "warmup_in_trace": len(warm_names),
            "measured": len(measured),
            "measured_names": sorted(set(r.name for r in measured)),
            "warmup_names": sorted(set(warm_names)),
        },
        "passes": {name: len(rs) for name, rs in phases.items()},
        "phases": {},
    }
    for name, rs in phases.items():
        if not rs:
            res["phases"][name] = None
            continue
        ks = _kernels_of(proc, rs)
        res["phases"][name] = {"kernel_ms_per_pass": _ms(sum(k.dur for k in ks) / len(rs)),
                               "kernels_per_pass": _round(len(ks) / len(rs))}
    step_kernels = _kernels_of(proc, measured)
    res["step"] = ({"kernel_ms_per_step": _ms(sum(k.dur for k in step_kernels) / len(measured)),
                    "kernels_per_step": _round(len(step_kernels) / len(measured))} if measured else None)

    forwards = phases.get("forward", [])
    backwards = phases.get("backward", [])
    if forwards:
        fwd_k = _kernels_of(proc, forwards)
        n = len(forwards)
        spans = []
        for r in forwards:
            ks = _launched(proc, r)
            if ks:
                spans.append(max(k.end for k in ks) - min(k.start for k in ks))
        fwd_ns = sum(k.dur for k in fwd_k)
        res["nsys_a"] = {
            "forward_cpu_ms_mean": _ms(sum(r.end - r.start for r in forwards) / n),
            "forward_kernel_ms_mean": _ms(fwd_ns / n),
            "forward_gpu_span_ms_mean": _ms(sum(spans) / len(spans)) if spans else None,
        }
        # forward and backward together: the backward passes and the forward passes in the same steps
        paired = [f for f in forwards if any(s.holds(f.start) and any(s.holds(b.start) for b in backwards) for s in measured)]
        both = _kernels_of(proc, paired + backwards)
        res["nsys_b"] = {"forward_top": _leader(fwd_k, n),
                         "forward_backward_top": _leader(both, len(backwards)) if backwards else None}
        groups = _group(fwd_k)
        non_mm = sorted(((s, g) for s, g in groups.items() if not is_matmul(g[2])), key=lambda sg: (-sg[1][0], sg[0]))
        res["nsys_c"] = [{"kernel": s, "ms_per_pass": _ms(g[0] / n), "calls_per_pass": _round(g[1] / n),
                          "share_of_forward": _round(g[0] / fwd_ns) if fwd_ns else None} for s, g in non_mm[:5]]
        fwd_mm = sum(k.dur for k in fwd_k if is_matmul(k.name))
        step_ns = sum(k.dur for k in step_kernels)
        step_mm = sum(k.dur for k in step_kernels if is_matmul(k.name))
        res["nsys_d"] = {"forward_matmul_share": _round(fwd_mm / fwd_ns) if fwd_ns else None,
                         "step_matmul_share": _round(step_mm / step_ns) if step_ns else None}
        res["nsys_e"] = _attention(proc, forwards, entry["attention"]) if entry.get("attention") else None
    else:
        res["nsys_a"] = res["nsys_b"] = res["nsys_c"] = res["nsys_d"] = res["nsys_e"] = None
    res["mem_f"] = _mem_f(proc, con, measured[0], entry["mem_f"]) if entry.get("mem_f") and measured else None
    return res


def build(names: list[str] | None = None) -> dict:
    manifest = json.loads(MANIFEST.read_text())
    out = {}
    for name, entry in manifest["traces"].items():
        if names and name not in names:
            continue
        out[name] = {"file": entry["file"], "processes": reference_for(FOREIGN / entry["file"], entry)}
    return out


def main(argv: list[str]) -> int:
    ref = build([a for a in argv if not a.startswith("--")] or None)
    text = json.dumps({"matmul_rule": MATMUL.pattern, "not_matmul": TRITON_POINTWISE.pattern, "traces": ref},
                      indent=1, sort_keys=False) + "\n"
    if "--check" in argv:
        same = REFERENCE.read_text() == text
        print("reference.json is up to date" if same else "reference.json differs")
        return 0 if same else 1
    if "--print" in argv:
        print(text)
        return 0
    REFERENCE.write_text(text)
    print(f"wrote {REFERENCE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
