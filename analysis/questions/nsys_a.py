"""nsys_profile (a): the forward pass's time as nsys sees it, against the Python timer of the same
steps and against the unprofiled benchmark of the same configuration.

nsys's figure is the mean CPU span of the measured ``forward`` ranges: every phase ends with
``torch.cuda.synchronize()``, so that span is the time the GPU took. The GPU projection (first
kernel start to last kernel end) is given beside it. Needs: measured ``forward`` ranges; the
Python timer's forward time from the run record for the ratio. Across traces, the ``bench``
results give the unprofiled forward (a different mode: forward-backward steps) and the
``overhead`` results the profiler's own cost (:mod:`analysis.questions.story`).
"""
from __future__ import annotations

from typing import TypedDict

import pandas as pd

from analysis import text
from analysis.questions import nsys_grid as grid
from analysis.questions import story
from analysis.questions.nsys_inputs import NsysInputs
from analysis.questions.phase_breakdown import shape_summaries
from analysis.questions.question import Evidence, Question
from analysis.questions.results_files import plural
from analysis.records import FigureSpec, ResultsAnswer, Unanswered
from analysis.runs import run_label, sorted_summaries

# A synchronized forward range's GPU projection covers nearly all of its CPU span (the gap is the
# launch latency of the first kernel); below this share the span is not a GPU measurement.
SYNCHRONIZED_SPAN_SHARE = 0.95
# A shape's first range this many times slower than its later ones paid a one-off cost (a cold
# first pass: CUDA context, allocator, kernel selection).
COLD_FIRST_RANGE = 1.5


class Record(TypedDict):
    """The per-trace record of (a), in the summary's ``questions["a"]``."""

    nsys_forward_ms: float | None
    nsys_forward_gpu_ms: float | None
    python_forward_ms: float | None
    nsys_to_python_ratio: float | None
    answer: str


def per_trace(inputs: NsysInputs) -> dict:
    """Answer (a) for one trace from its per-phase figures and the Python timings."""
    forward = inputs.phases.get("forward")
    range_name = inputs.range_name("forward")
    python_forward_ms = inputs.run.python_ms.get("forward")
    if forward is None:
        return {
            "nsys_forward_ms": None,
            "nsys_forward_gpu_ms": None,
            "python_forward_ms": python_forward_ms,
            "nsys_to_python_ratio": None,
            "answer": f"This trace has no measured `{range_name}` range, so nsys cannot time a forward pass.",
        }
    shapes = shape_summaries(inputs).get("forward")
    if shapes:
        return {"nsys_forward_ms": None, "nsys_forward_gpu_ms": None, "python_forward_ms": python_forward_ms,
                "nsys_to_python_ratio": None, "answer": _per_shape_sentence(shapes, range_name)}
    nsys_ms = forward["cpu_span_ms_per_pass"]
    gpu_ms = forward["gpu_span_ms_per_pass"]
    sentence = (
        f"nsys times the forward pass at {text.ms(nsys_ms)}, the mean CPU span of "
        f"{forward['passes']} measured `{range_name}` ranges; their GPU projection (first kernel start "
        f"to last kernel end) is {text.ms(gpu_ms)}"
    )
    if gpu_ms < SYNCHRONIZED_SPAN_SHARE * nsys_ms:
        sentence += (
            f", only {text.pct(gpu_ms / nsys_ms)} of the span, so the range does not measure GPU time "
            "alone (host work before the first launch, or no synchronize at its end)."
        )
    else:
        sentence += f", {text.pct(gpu_ms / nsys_ms)} of the span: the range measures GPU time."
    if python_forward_ms is None:
        ratio = None
        sentence += " No Python-timer forward time came with the trace (step_timing marks or timings.json), so there is nothing to compare with."
    else:
        ratio = nsys_ms / python_forward_ms
        sentence += (
            f" The Python timer measured {text.ms(python_forward_ms)} for the same steps, "
            f"a ratio nsys/Python of {ratio:.3f} ({_agreement(ratio)})."
        )
    return {
        "nsys_forward_ms": nsys_ms,
        "nsys_forward_gpu_ms": gpu_ms,
        "python_forward_ms": python_forward_ms,
        "nsys_to_python_ratio": ratio,
        "answer": sentence,
    }


def _per_shape_sentence(shapes: list[dict], range_name: str) -> str:
    """nsys's time of each shape group's ranges, with the first (cold) range apart when it stands out."""
    parts = []
    for shape in shapes:
        part = (f"`{shape['group']}` {shape['cpu_span_ms_per_pass']:,.2f} ms over {shape['passes']} ranges "
                f"(kernels {shape['kernel_ms_per_pass']:,.3f} ms)")
        passes, first = shape["passes"], shape["first_cpu_span_ms"]
        rest = (shape["cpu_span_ms_per_pass"] * passes - first) / (passes - 1) if passes > 1 else None
        if rest and first > COLD_FIRST_RANGE * rest:
            part += f"; the first of them {first:,.2f} ms against {rest:,.2f} ms for the rest"
        parts.append(part)
    return f"nsys's mean CPU span of the `{range_name}` ranges per shape: " + "; ".join(parts) + "."


def _agreement(ratio: float) -> str:
    off = abs(ratio - 1)
    if off < 0.005:
        return "they agree to within 0.5%"
    side = "longer" if ratio > 1 else "shorter"
    return f"nsys's range is {text.pct(off)} {side}"


KEYS = ("nsys_forward_ms", "nsys_forward_gpu_ms", "python_forward_ms", "nsys_to_python_ratio")
CONFIG_KEYS = ("size", "context_length", "mode", "dtype", "compile", "attention")
BENCH_TITLE = "Forward pass: traced against the unprofiled benchmark"
OVERHEAD_TITLE = "The profiler's overhead, measured directly"


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """One row per trace with a measured forward pass (nsys range, Python timer of the same
    steps, kernel time and idle); the traces whose configuration the unprofiled benchmark ran,
    beside its forward time; the overhead experiment's plain and nsys runs."""
    summaries = sorted_summaries(evidence.summaries)
    table = grid.rows(summaries, "a", KEYS, "nsys_forward_ms", CONFIG_KEYS)
    if table.empty:
        return Unanswered("nsys-a", "a trace with measured `forward` ranges")
    launch = story.launch_bound(summaries)
    if not launch.empty:
        table = table.merge(launch[["trace", "kernel_ms_per_pass", "idle_ms_per_pass", "idle_share"]],
                            on="trace", how="left")
    tables = {"Forward pass: nsys and the Python timer": table.drop(columns=list(CONFIG_KEYS), errors="ignore")}
    against = _against_bench(summaries, table, story.unprofiled_forward(evidence.results))
    if not against.empty:
        tables[BENCH_TITLE] = against
    overhead = story.profiler_overhead(evidence.results)
    if not overhead.empty:
        tables[OVERHEAD_TITLE] = overhead
    record = grid.finish("nsys-a", tables, summaries)
    if len(tables) > 1:  # the single-trace sentence cannot carry the benchmark comparison
        record.numbers.pop(grid.SINGLE_TRACE_ANSWER, None)
    return record


def _against_bench(summaries: list[dict], table: pd.DataFrame, bench: pd.DataFrame) -> pd.DataFrame:
    """Traced forward against the benchmark's forward of the same size, context length, dtype,
    compile and attention; ``nsys_over_bench_*`` divide by the benchmark's highest and lowest run."""
    rows = []
    labels = {run_label(summary): summary.get("config") or {} for summary in summaries}
    for row in table.itertuples():
        match = story.bench_match(bench, labels.get(row.trace, {}))
        if match is None:
            continue
        rows.append({"trace": row.trace, "trace_mode": row.mode, "nsys_forward_ms": row.nsys_forward_ms,
                     "kernel_ms_per_pass": getattr(row, "kernel_ms_per_pass", None),
                     "idle_ms_per_pass": getattr(row, "idle_ms_per_pass", None),
                     "bench_mode": match["bench_mode"], "bench_runs": int(match["bench_runs"]),
                     "bench_forward_ms_min": match["bench_forward_ms_min"],
                     "bench_forward_ms_max": match["bench_forward_ms_max"]})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["nsys_over_bench_low_ratio"] = frame["nsys_forward_ms"] / frame["bench_forward_ms_max"]
    frame["nsys_over_bench_high_ratio"] = frame["nsys_forward_ms"] / frame["bench_forward_ms_min"]
    return frame


def _grid_text(record: ResultsAnswer) -> str:
    table = grid.first_table(record)
    text_ = f"Over {len(table)} traces nsys times the forward pass at {grid.span(table['nsys_forward_ms'])} ms."
    if "nsys_to_python_ratio" in table:
        ratio = table.dropna(subset=["nsys_to_python_ratio"])
        worst = ratio.loc[(ratio["nsys_to_python_ratio"] - 1).abs().idxmax()]
        text_ += (f" Against the Python timer of the same profiled steps the ratio nsys/Python is "
                  f"{grid.span(ratio['nsys_to_python_ratio'], '{:.3f}')} (median {ratio['nsys_to_python_ratio'].median():.3f}, "
                  f"farthest from 1 for {worst['trace']}): both time one synchronized span, so they agree by construction.")
        if len(ratio) < len(table):
            text_ += f" {plural(len(table) - len(ratio), 'trace')} carry no Python timings."
    against = record.tables.get(BENCH_TITLE)
    if against is not None:
        text_ += " " + _bench_text(against)
    overhead = record.tables.get(OVERHEAD_TITLE)
    if overhead is not None:
        text_ += " " + _overhead_text(overhead)
    return text_


def _bench_text(against: pd.DataFrame) -> str:
    """The traced forward against the unprofiled benchmark, grouped by how it sits against the
    benchmark's spread between runs, with where the added time goes (kernels or idle)."""
    modes = " and ".join(sorted(set(against["trace_mode"])))
    bench_modes = " and ".join(sorted(set(against["bench_mode"])))
    above, inside, below, single = ("Above the benchmark's spread between runs", "Inside that spread",
                                    "Below it", "With one benchmark run only, no spread to weigh against")
    groups = {above: [], inside: [], below: [], single: []}
    for row in against.itertuples():
        low, high = row.bench_forward_ms_min, row.bench_forward_ms_max
        bench = f"{low:,.2f} ms" if row.bench_runs == 1 else f"{low:,.2f}–{high:,.2f} ms"
        item = f"{row.trace} {row.nsys_forward_ms:,.2f} against {bench}"
        if row.nsys_forward_ms > high:
            item += f" (+{text.pct(row.nsys_over_bench_low_ratio - 1)}"
            if pd.notna(row.kernel_ms_per_pass):
                item += f"; kernels {row.kernel_ms_per_pass:,.2f} ms, idle {row.idle_ms_per_pass:,.2f} ms"
            item += ")"
        if row.bench_runs == 1:
            groups[single].append(item)
        elif row.nsys_forward_ms > high:
            groups[above].append(item)
        else:
            groups[inside if row.nsys_forward_ms >= low else below].append(item)
    found = [f"{name}: {'; '.join(items)}" for name, items in groups.items() if items]
    return (f"Against the unprofiled benchmark of the same configuration (its {bench_modes} steps time the forward "
            f"with autograd on; these traces ran in {modes} mode, a forward-mode trace under no_grad, so the modes "
            "differ), per forward pass in ms. " + ". ".join(found) + ".")


def _overhead_text(overhead: pd.DataFrame) -> str:
    """The overhead experiment run plain and under nsys: what the profiler adds per step and forward."""
    parts = [f"{row.size} ctx{row.context_length} {row.mode} steps {row.step_ms:,.2f} → {row.step_ms_nsys:,.2f} ms "
             f"(+{text.pct(row.step_added_share)}), forward {row.forward_ms:,.2f} → {row.forward_ms_nsys:,.2f} ms "
             f"(+{text.pct(row.forward_added_share)})"
             for row in overhead.itertuples()]
    return ("Measured directly, the same runner plain and under nsys (medians, no NVTX ranges in either): "
            + "; ".join(parts) + ". nsys lengthens every launch, which costs most where kernels are short and the "
            "GPU already waits for the host.")


QUESTION = Question(
    id="nsys-a", section="nsys_profile", title="Forward time: nsys against Python",
    text="Total forward-pass time as nsys sees it, against the Python timer of the same steps and the unprofiled "
         "benchmark.",
    needs=grid.NEEDS_TRACES,
    per_trace=per_trace, record=Record, summary_key="a", compute=compute, write=grid.grid_writer(_grid_text),
    figure=FigureSpec("trace_bars", {
        "series": [["nsys forward range", "nsys_forward_ms", 1], ["nsys GPU projection", "nsys_forward_gpu_ms", 1],
                   ["Python timer", "python_forward_ms", 1]],
        "xlabel": "ms per forward pass", "title": "Forward pass: nsys against the Python timer"}),
)
