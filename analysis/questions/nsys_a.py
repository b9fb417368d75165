"""nsys_profile (a): the forward pass's time as nsys sees it, against the Python timer of the same
steps and against the unprofiled benchmark of the same configuration.

nsys's figure is the mean CPU span of the measured ``forward`` ranges: every phase ends with
``torch.cuda.synchronize()``, so that span is the time the GPU took. The GPU projection (first
kernel start to last kernel end) is given beside it. Needs: measured ``forward`` ranges; the
Python timer's forward time from the run record for the ratio. Across traces, the ``bench``
results give the unprofiled forward (a different mode: forward-backward steps) and the
``overhead`` results the profiler's own cost (:mod:`analysis.questions.shared.story`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.core import text
from analysis.core.runs import ONE_GPU_GROUPS, is_multi_gpu_group, run_group, run_label, runs_of, sorted_summaries
from analysis.questions.question import Evidence, Question
from analysis.questions.records import FigureSpec, ResultsAnswer, Unanswered
from analysis.questions.shared import nsys_grid as grid
from analysis.questions.shared import story, trace_text
from analysis.questions.shared.editions import same_model
from analysis.questions.shared.results_files import plural
from analysis.trace.question_figures import nsys_a as trace_figures

if TYPE_CHECKING:
    import pandas as pd

# A synchronized forward range's GPU projection covers nearly all of its CPU span (the gap is the
# launch latency of the first kernel); below this share the span is not a GPU measurement.
SYNCHRONIZED_SPAN_SHARE = 0.95
# A shape's first range this many times slower than its later ones paid a one-off cost (a cold
# first pass: kernel modules loaded, allocator grown, kernels chosen).
COLD_FIRST_RANGE = 1.5


def write_trace(record: dict, summary: dict) -> str:
    """(a)'s sentence for one trace, from its record, its ``forward`` figures and shapes."""
    range_names = trace_text.range_names(summary, "forward")
    forward = summary["phases"].get("forward")
    if forward is None:
        return f"This trace has no measured {range_names} range, so nsys cannot time a forward pass."
    shapes = summary["phase_shapes"].get("forward")
    if shapes:
        return _per_shape_sentence(shapes, range_names)
    nsys_ms, gpu_ms = record["nsys_forward_ms"], record["nsys_forward_gpu_ms"]
    sentence = (
        f"nsys times the forward pass at {text.ms(nsys_ms)}, the mean CPU span of "
        f"{forward['passes']} measured {range_names} ranges; their GPU projection (first kernel start "
        f"to last kernel end) is {text.ms(gpu_ms)}"
    )
    if gpu_ms < SYNCHRONIZED_SPAN_SHARE * nsys_ms:
        sentence += (
            f", only {text.pct(gpu_ms / nsys_ms)} of the span, so the range does not measure GPU time "
            "alone (host work before the first launch, or no synchronize at its end)."
        )
    else:
        sentence += f", {text.pct(gpu_ms / nsys_ms)} of the span: the range measures GPU time."
    python_forward_ms, ratio = record["python_forward_ms"], record["nsys_to_python_ratio"]
    if python_forward_ms is None:
        sentence += " No Python-timer forward time came with the trace (step_timing marks or timings.json), so there is nothing to compare with."
    else:
        sentence += (
            f" The Python timer measured {text.ms(python_forward_ms)} for the same steps, "
            f"a ratio nsys/Python of {ratio:.3f} ({_agreement(ratio)})."
        )
    return sentence


def _per_shape_sentence(shapes: list[dict], range_names: str) -> str:
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
    return f"nsys's mean CPU span of the {range_names} ranges per shape: " + "; ".join(parts) + "."


def _agreement(ratio: float) -> str:
    off = abs(ratio - 1)
    if off < 0.005:
        return "they agree to within 0.5%"
    side = "longer" if ratio > 1 else "shorter"
    return f"nsys's range is {text.pct(off)} {side}"


KEYS = ("nsys_forward_ms", "nsys_forward_gpu_ms", "python_forward_ms", "nsys_to_python_ratio")
CONFIG_KEYS = ("handout", "size", "context_length", "mode", "dtype", "compile", "attention")
OVERHEAD_KEYS = ("size", "context_length", "mode")  # how an overhead pair finds its trace
BENCH_TITLE = "Forward pass: traced against the unprofiled benchmark"
OVERHEAD_TITLE = "The profiler's overhead, measured directly"
EDITIONS_TITLE = "The same model and context under the 2025 nsys options"
PLAIN_CAPTURE = "plain"  # a trace captured as nsys_profile asks, nothing added


def compute(evidence: Evidence) -> ResultsAnswer | Unanswered:
    """One row per trace with a measured forward pass (nsys range, Python timer of the same
    steps, kernel time and idle); the one-GPU traces whose configuration the unprofiled benchmark
    ran, beside its forward time; the overhead experiment's plain and nsys runs; and, for a later
    edition, its traces against the earlier edition's runs of the same model and context."""
    summaries = sorted_summaries(evidence.summaries)
    table = grid.rows(summaries, "a", KEYS, "nsys_forward_ms", CONFIG_KEYS)
    if table.empty:
        return Unanswered("nsys-a", "a trace with measured `forward` ranges")
    launch = story.launch_bound(summaries)
    if not launch.empty:
        table = table.merge(launch[["trace", "kernel_ms_per_pass", "idle_ms_per_pass", "idle_share"]],
                            on="trace", how="left")
    tables = {"Forward pass: nsys and the Python timer": table.drop(columns=list(CONFIG_KEYS), errors="ignore")}
    bench = story.unprofiled_forward(evidence.results)
    against = _against_bench(summaries, table[table["group"].isin(ONE_GPU_GROUPS)], bench)
    if not against.empty:
        tables[BENCH_TITLE] = against
    overhead = story.profiler_overhead(evidence.results)
    if not overhead.empty:
        tables[OVERHEAD_TITLE] = _with_noise(overhead, bench, table)
    earlier = _earlier_edition(table, evidence.other_editions)
    if not earlier.empty:
        notes = {run_label(summary): _capture_note(summary) for summary in summaries}
        tables[EDITIONS_TITLE] = earlier.assign(capture=earlier["trace"].map(notes))
    record = grid.finish("nsys-a", tables, summaries)
    record.numbers.pop(grid.SINGLE_TRACE_ANSWER, None)  # the lead below covers a single trace too
    return record


def _against_bench(summaries: list[dict], table: pd.DataFrame, bench: pd.DataFrame) -> pd.DataFrame:
    """Traced forward against the benchmark's forward of the same size, context length, dtype,
    compile and attention; ``nsys_over_bench_*`` divide by the benchmark's highest and lowest run;
    ``noise_ratio`` is the highest over the lowest plain run of the size in fp32 (the spread
    between runs that any effect is weighed against)."""
    import pandas as pd

    rows = []
    labels = {run_label(summary): summary.get("config") or {} for summary in summaries}
    for row in table.itertuples():
        match = story.bench_match(bench, labels.get(row.trace, {}))
        if match is None:
            continue
        rows.append({"trace": row.trace, "trace_mode": row.mode, "nsys_forward_ms": row.nsys_forward_ms,
                     "kernel_ms_per_pass": getattr(row, "kernel_ms_per_pass", None),
                     "idle_ms_per_pass": getattr(row, "idle_ms_per_pass", None),
                     "idle_share": getattr(row, "idle_share", None),
                     "bench_mode": match["bench_mode"], "bench_runs": int(match["bench_runs"]),
                     "bench_forward_ms_min": match["bench_forward_ms_min"],
                     "bench_forward_ms_max": match["bench_forward_ms_max"],
                     "noise_ratio": _noise(bench, row.size)})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["nsys_over_bench_low_ratio"] = frame["nsys_forward_ms"] / frame["bench_forward_ms_max"]
    frame["nsys_over_bench_high_ratio"] = frame["nsys_forward_ms"] / frame["bench_forward_ms_min"]
    return frame


def _noise(bench: pd.DataFrame, size: str) -> float | None:
    """The spread between the benchmark's plain fp32 eager runs of ``size``: highest mean over
    lowest, at the context length with the most runs; None with fewer than two runs."""
    runs = bench[(bench["size"] == size) & (bench["dtype"] == "fp32") & ~bench["compile"].astype(bool)]
    runs = runs[runs["bench_runs"] > 1]
    if runs.empty:
        return None
    row = runs.loc[runs["bench_runs"].idxmax()]
    return float(row["bench_forward_ms_max"] / row["bench_forward_ms_min"])


def _with_noise(overhead: pd.DataFrame, bench: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """The overhead pairs with the spread between plain runs of the size (``noise_ratio``) and
    this report's own trace of the same configuration (``traced_forward_ms``, the nsys range)."""
    traced = {tuple(row[k] for k in OVERHEAD_KEYS): row["nsys_forward_ms"] for _, row in table.iterrows()
              if row["group"] == "fp32 eager"} if set(OVERHEAD_KEYS) <= set(table) else {}
    return overhead.assign(
        noise_ratio=[_noise(bench, size) if not bench.empty else None for size in overhead["size"]],
        traced_forward_ms=[traced.get(tuple(row[k] for k in OVERHEAD_KEYS)) for _, row in overhead.iterrows()])


def _earlier_edition(table: pd.DataFrame, other: Evidence | None) -> pd.DataFrame:
    """Each one-GPU trace of a later edition beside the earlier edition's run of the same model
    (by dimensions, :func:`~analysis.questions.shared.editions.same_model`), context length and mode:
    the earlier sweep's nsys forward time, and its trace's kernel time where one was given. The
    earlier runs used the earlier nsys options, so the ratio is what the options cost."""
    import pandas as pd

    if other is None or "handout" not in table:
        return pd.DataFrame()
    sweep = other.results.experiment_rows("sweep")
    earlier_traces = {(s["config"].get("size"), s["config"].get("context_length"), s["config"].get("mode")): s
                      for s in other.summaries if run_group(s) == "fp32 eager"}
    rows = []
    for row in table[table["group"] == "fp32 eager"].itertuples():
        handout = str(row.handout)
        earlier = "2025" if handout != "2025" else None
        size = same_model(row.size, handout, earlier) if earlier else None
        if size is None:
            continue
        found = sweep[(sweep["size"] == size) & (sweep["context_length"] == row.context_length)
                      & (sweep["mode"] == row.mode) & (sweep["dtype"] == "fp32") & ~sweep["compile"].astype(bool)
                      & (sweep["status"] == "ok")] if not sweep.empty else sweep
        trace = earlier_traces.get((size, row.context_length, row.mode))
        earlier_ms = (trace["questions"]["a"]["nsys_forward_ms"] if trace else
                      float(found["nsys_forward_ms"].iloc[-1]) if len(found) else None)
        if earlier_ms is None:
            continue
        source = "trace" if trace else "sweep table"
        rows.append({"trace": row.trace, "earlier_run": f"{size} ctx{row.context_length} {row.mode} fp32 ({earlier} {source})",
                     "nsys_forward_ms": row.nsys_forward_ms, "earlier_nsys_forward_ms": earlier_ms,
                     "slowdown_ratio": row.nsys_forward_ms / earlier_ms,
                     "kernel_ms_per_pass": getattr(row, "kernel_ms_per_pass", None),
                     "earlier_kernel_ms_per_pass": (trace["phases"]["forward"]["kernel_ms_per_pass"] if trace else None),
                     "idle_share": getattr(row, "idle_share", None)})
    return pd.DataFrame(rows)


def _capture_note(summary: dict) -> str:
    """How a trace's capture differs from a plain nsys_profile trace: per-layer ranges and CUDA
    memory tracing (the mem-f capture) add host work to every step; :data:`PLAIN_CAPTURE` for a
    plain one."""
    notes = (["per-layer NVTX ranges"] if (summary.get("config") or {}).get("layer_ranges") else []) + \
        (["CUDA memory tracing"] if (summary.get("memory_ledger") or {}).get("available") else [])
    return " and ".join(notes) or PLAIN_CAPTURE


def _grid_text(record: ResultsAnswer) -> str:
    """The lead (what nsys's figure is worth, what profiling costs against the noise), then per
    group the evidence."""
    table = grid.first_table(record)
    overhead = record.tables.get(OVERHEAD_TITLE)
    against = record.tables.get(BENCH_TITLE)
    earlier = record.tables.get(EDITIONS_TITLE)
    lead = [_match_text(table), _editions_lead(earlier) if earlier is not None else
            _overhead_lead(overhead) if overhead is not None else "",
            _standing_out(against) if against is not None and earlier is None else ""]
    details = [_group_text(name, rows) for name, rows in table.groupby("group", sort=False)]
    details += [_bench_text(against) if against is not None else "",
                _overhead_text(overhead) if overhead is not None else "",
                _editions_text(earlier) if earlier is not None else ""]
    return text.answer_text(lead, details)


def _match_text(table: pd.DataFrame) -> str:
    """The Python timer against nsys's range over the one-GPU traces: what their agreement shows
    and what it does not."""
    table = table[~table["group"].map(is_multi_gpu_group)]
    ratio = table.dropna(subset=["nsys_to_python_ratio"]) if "nsys_to_python_ratio" in table else table.iloc[:0]
    if table.empty:
        return ""
    if ratio.empty:
        return (f"nsys times the forward pass at {grid.span(table['nsys_forward_ms'])} ms over "
                f"{plural(len(table), 'trace')}; no Python timings came with them to compare.")
    return (f"nsys's `forward` range and the Python timer time the same synchronized span, so they match "
            f"(nsys/Python {grid.span(ratio['nsys_to_python_ratio'], '{:.3f}')}, {plural(len(ratio), 'trace')}); "
            "that checks the annotation, not profiling's cost.")


def _overhead_lead(overhead: pd.DataFrame) -> str:
    """What the profiler adds to the first configuration's forward, weighed against the spread
    between plain runs of its size and against this report's own trace of it."""
    import pandas as pd

    row = overhead.iloc[0]
    added = (f"the overhead run's {row['size']} ctx{row['context_length']} {row['mode']} forward (Python timer median) "
             f"goes {row['forward_ms']:,.2f} → {row['forward_ms_nsys']:,.2f} ms under nsys "
             f"(+{text.pct(row['forward_added_share'])})")
    if pd.isna(row["noise_ratio"]):
        return f"Profiling's measured cost: {added}, with no repeated plain runs to weigh it against."
    inside = 1 + row["forward_added_share"] <= row["noise_ratio"]
    traced = (f", and this report's trace of the same configuration times {row['traced_forward_ms']:,.2f} ms by its "
              "`forward` range"
              if pd.notna(row["traced_forward_ms"]) else "")
    return (f"Profiling's measured cost is {'inside' if inside else 'beyond'} the noise: {added}, "
            f"{'within' if inside else 'beyond'} the {row['noise_ratio']:.2f}× spread between plain runs{traced}.")


def _standing_out(against: pd.DataFrame) -> str:
    """The traces whose excess over the unprofiled benchmark is larger than the spread between
    plain runs of their size, with how idle their GPU is (launch-bound work pays per launch)."""
    import pandas as pd

    over = against["nsys_over_bench_low_ratio"]
    stands = against[against["noise_ratio"].notna() & (over > against["noise_ratio"])]
    if stands.empty:
        return "No traced forward exceeds the unprofiled one by more than the spread between plain runs."
    worst = stands.loc[stands["nsys_over_bench_low_ratio"].idxmax()]
    idle = f", its GPU idle {text.pct(worst['idle_share'])} of the span" if pd.notna(worst.get("idle_share")) else ""
    bound = pd.notna(worst.get("idle_share")) and worst["idle_share"] >= story.LAUNCH_BOUND_IDLE_SHARE
    where = "It stands out where the GPU waits for launches" if bound else "It exceeds that spread most"
    return (f"{where}: {worst['trace']} {worst['nsys_forward_ms']:,.2f} against "
            f"{worst['bench_forward_ms_max']:,.2f} ms unprofiled ({worst['nsys_over_bench_low_ratio']:.2f}×){idle}.")


def _group_text(group: str, rows: pd.DataFrame) -> str:
    """One group's forward times and ratio to the Python timer."""
    sentence = f"Among {runs_of(group)} ({plural(len(rows), 'trace')}) nsys times the forward pass at {grid.span(rows['nsys_forward_ms'])} ms"
    ratio = rows["nsys_to_python_ratio"].dropna() if "nsys_to_python_ratio" in rows else rows.iloc[:0]
    if len(ratio):
        worst = rows.loc[(rows["nsys_to_python_ratio"] - 1).abs().idxmax()]
        sentence += (f", nsys/Python {grid.span(ratio, '{:.3f}')} (farthest from 1 for {worst['trace']})")
    if (untimed := len(rows) - len(ratio)) > 0:
        sentence += f"; {plural(untimed, 'trace')} {'carries' if untimed == 1 else 'carry'} no Python timings"
    return sentence + "."


def _bench_text(against: pd.DataFrame) -> str:
    """The traced forward against the unprofiled benchmark, each excess weighed against the
    spread between plain runs of the size, with where the added time goes (kernels or idle)."""
    import pandas as pd

    modes = " and ".join(sorted(set(against["trace_mode"])))
    bench_modes = " and ".join(sorted(set(against["bench_mode"])))
    beyond, inside = [], []
    for row in against.itertuples():
        item = f"{row.trace} {row.nsys_forward_ms:,.2f} against {row.bench_forward_ms_min:,.2f}"
        if row.bench_runs > 1:
            item += f"–{row.bench_forward_ms_max:,.2f}"
        item += f" ms ({row.nsys_over_bench_low_ratio:.2f}×"
        if pd.notna(row.kernel_ms_per_pass):
            item += f"; kernels {row.kernel_ms_per_pass:,.2f} ms, idle {row.idle_ms_per_pass:,.2f} ms"
        item += ")"
        noisy = pd.isna(row.noise_ratio) or row.nsys_over_bench_low_ratio <= row.noise_ratio
        (inside if noisy else beyond).append(item)
    found = [f"{name}: {'; '.join(items)}" for name, items in
             (("Beyond the spread between plain runs of the size", beyond),
              ("Within it (or no spread known)", inside)) if items]
    return (f"Against the unprofiled benchmark of the same configuration (its {bench_modes} steps, these traces "
            f"{modes} mode), per forward pass in ms. " + ". ".join(found) + ".")


def _overhead_text(overhead: pd.DataFrame) -> str:
    """The overhead experiment run plain and under nsys: what the profiler adds per step and forward."""
    parts = [f"{row.size} ctx{row.context_length} {row.mode} steps {row.step_ms:,.2f} → {row.step_ms_nsys:,.2f} ms "
             f"(+{text.pct(row.step_added_share)}), forward {row.forward_ms:,.2f} → {row.forward_ms_nsys:,.2f} ms "
             f"(+{text.pct(row.forward_added_share)})"
             for row in overhead.itertuples()]
    return ("The overhead experiment, the same runner plain and under nsys (medians of the Python timer, no NVTX "
            "ranges in either): " + "; ".join(parts) + ".")


def _editions_lead(earlier: pd.DataFrame) -> str:
    """How much slower this edition's plain traces run than the earlier edition's runs of the same
    work, and apart from them a trace whose capture added more (the mem-f trace)."""
    import pandas as pd

    plain = earlier[earlier["capture"] == PLAIN_CAPTURE]
    other = earlier[earlier["capture"] != PLAIN_CAPTURE]
    parts = []
    if not plain.empty:
        worst = plain.loc[plain["slowdown_ratio"].idxmax()]
        idle = f", GPU idle {text.pct(worst['idle_share'])}" if pd.notna(worst["idle_share"]) else ""
        parts.append(f"{grid.span(plain['slowdown_ratio'])}× slower than with the 2025 options ({worst['trace']} "
                     f"{worst['nsys_forward_ms']:,.1f} against {worst['earlier_nsys_forward_ms']:,.1f} ms{idle})")
    parts += [f"{row.trace}, captured with {row.capture}, {row.slowdown_ratio:.2f}×" for row in other.itertuples()]
    return ("Under this edition's nsys options the same model and context run " + "; ".join(parts)
            + ": these forward times measure the profiler as much as the model.")


def _editions_text(earlier: pd.DataFrame) -> str:
    """Per pair: both forward times, and the kernel time where both are known (the added time is idle)."""
    import pandas as pd

    parts = []
    for row in earlier.itertuples():
        part = (f"{row.trace} {row.nsys_forward_ms:,.1f} ms against {row.earlier_run} {row.earlier_nsys_forward_ms:,.1f} ms "
                f"({row.slowdown_ratio:.2f}×")
        if row.capture != PLAIN_CAPTURE:
            part += f"; captured with {row.capture} for the memory questions, so no like-for-like timing"
        if pd.notna(row.kernel_ms_per_pass):
            part += f"; kernels {row.kernel_ms_per_pass:,.1f} ms"
            if pd.notna(row.earlier_kernel_ms_per_pass):
                part += f" against {row.earlier_kernel_ms_per_pass:,.1f} ms"
            part += f", GPU idle {text.pct(row.idle_share)} of the span" if pd.notna(row.idle_share) else ""
        parts.append(part + ")")
    return "Against the earlier edition's run of the same model, context and mode: " + "; ".join(parts) + "."


QUESTION = Question(
    id="nsys-a", section="nsys_profile", title="Forward time: nsys against Python",
    text="Total forward-pass time as nsys sees it, against the Python timer of the same steps and the unprofiled "
         "benchmark.",
    needs=grid.NEEDS_TRACES,
    per_trace=trace_figures.figures, record=trace_figures.Record, write_trace=write_trace, summary_key="a", compute=compute, write=grid.grid_writer(_grid_text),
    figure=FigureSpec("trace_bars", {
        "series": [["nsys forward range", "nsys_forward_ms", 1], ["nsys GPU projection", "nsys_forward_gpu_ms", 1],
                   ["Python timer", "python_forward_ms", 1]],
        "xlabel": "ms per forward pass", "title": "Forward pass: nsys against the Python timer"}),
)
