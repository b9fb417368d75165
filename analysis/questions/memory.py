"""Memory: mem-a (allocated memory over a step), mem-b/mem-c (peak memory per context length,
fp32 and bf16), mem-d (one residual-stream activation) and mem-e (the largest allocations).

Reads the memory experiment's results: ``memory`` (one bench summary row per context length,
mode and dtype, with peak allocated bytes), ``memory_timeline`` (allocated bytes over the
recorded step), ``memory_activation`` and ``memory_largest_allocations``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.questions.question import Question
from analysis.questions.records import FigureSpec
from analysis.questions.shared.editions import from_same_model
from analysis.questions.shared.memory_accounting import activation_shapes, fp32_copy_bytes, name_allocation, train_accounting
from analysis.questions.shared.results_files import ResultsAnswer, ResultsSet, Unanswered, ok_rows, used_files
from cs336_profile.contract import MEMORY as PEAKS
from cs336_profile.contract import MEMORY_ACTIVATION as ACTIVATION
from cs336_profile.contract import MEMORY_LARGEST_ALLOCATIONS as LARGEST
from cs336_profile.contract import MEMORY_TIMELINE as TIMELINE
from cs336_profile.contract import MIB, PEAK_COLUMNS, SNAPSHOT_FOLDER, peak_column

if TYPE_CHECKING:
    import pandas as pd

RUN_MEMORY = "python -m cs336_profile.run memory on a CUDA device"
MODEL_FILE = "model.py:"
# The peaks the tables show: the loss peak sits between forward and backward and adds nothing.
SHOWN_PEAKS = tuple(column for column in PEAK_COLUMNS if column != peak_column("loss"))
# A timeline value this close to a phase's measured peak (or to the timeline's own top, if lower)
# counts as reaching it: the peaks come from the same configuration's timed step, the timeline
# from the recorded one, and they differ by about an allocator block.
PEAK_MATCH_BYTES = 2 * MIB
# A bf16/fp32 peak ratio within this of 1 counts as no real change.
SMALL_CHANGE = 0.1


SNAPSHOT_HOWTO = ("python -m cs336_profile.run memory --size {size} --snapshot-context-length {context} on a CUDA "
                  "device writes them to {folder}/ in the results folder")
TIMELINE_TITLE = "Allocated memory over the step"


def _with_time(rows: pd.DataFrame) -> pd.DataFrame:
    """Timeline rows with ``time_ms`` from the first event of their snapshot."""
    start = rows.groupby("snapshot")["time_us"].transform("min")
    return rows.assign(time_ms=(rows["time_us"] - start) / 1000)


def phase_marks(timeline: pd.DataFrame, peaks: pd.DataFrame) -> pd.DataFrame:
    """For each recorded train step: each phase's peak from the peaks results (same context and
    dtype) and when the timeline first reaches it after its lowest point (the gradients freed)."""
    import pandas as pd

    rows = []
    for (snapshot, mode, context, dtype), events in timeline.groupby(
            ["snapshot", "mode", "context_length", "dtype"], sort=False):
        match = peaks[(peaks["mode"] == mode) & (peaks["context_length"] == context) & (peaks["dtype"] == dtype)]
        if match.empty:
            continue
        events = events.reset_index(drop=True)
        after_low = events.iloc[events["allocated_bytes"].idxmin():]
        for phase in ("forward", "backward", "optimizer_step"):
            peak = match.iloc[0].get(peak_column(phase))
            if pd.isna(peak):
                continue
            level = min(peak, events["allocated_bytes"].max()) - PEAK_MATCH_BYTES
            reached = after_low[after_low["allocated_bytes"] >= level]
            rows.append({"mode": mode, "phase": phase, "phase_peak_bytes": peak,
                         "reached_at_ms": reached["time_ms"].iloc[0] if not reached.empty else None})
    return pd.DataFrame(rows)


def answer_mem_a(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mem-a: allocated memory over the recorded step, forward only against a full training step,
    with the state it starts from and when each phase reaches its peak."""
    rows = results.experiment_rows(TIMELINE)
    if rows.empty:
        return Unanswered("mem-a", f"a `{TIMELINE}` results file with allocator snapshots ({RUN_MEMORY})")
    rows = _with_time(rows)
    grouped = rows.groupby(["snapshot", "mode", "context_length", "dtype"], sort=False)
    table = grouped["allocated_bytes"].agg(start_bytes="first", lowest_bytes="min", peak_bytes="max",
                                           end_bytes="last").reset_index()
    table["peak_at_ms"] = grouped.apply(lambda g: g.loc[g["allocated_bytes"].idxmax(), "time_ms"],
                                        include_groups=False).to_numpy()
    table["duration_ms"] = grouped["time_ms"].max().to_numpy()
    table["snapshot_file"] = SNAPSHOT_FOLDER + "/" + table["snapshot"] + ".pickle"
    peaks = results.experiment_rows(PEAKS)
    numbers: dict = {}
    tables = {"Recorded steps": table.drop(columns="snapshot")}
    size = peaks["size"].iloc[0] if not peaks.empty else None
    text = f"Allocated memory {f'of the {size} model ' if size else ''}at context {table['context_length'].iloc[0]} " \
           f"({table['dtype'].iloc[0]}), from the step's first allocator event:"
    for row in table.itertuples():
        text += (f" {row.mode}: {row.start_bytes / MIB:,.0f} MiB at the start, lowest {row.lowest_bytes / MIB:,.0f}, "
                 f"peak {row.peak_bytes / MIB:,.0f} MiB at {row.peak_at_ms:.0f} ms of {row.duration_ms:.0f} ms;")
    text = text.rstrip(";") + "."
    if not peaks.empty:
        marks = phase_marks(rows, peaks)
        if not marks.empty:
            tables["Each phase's peak and when the step reaches it"] = marks
            text += _train_story(table, marks, int(peaks["parameters"].iloc[0]), numbers)
    text += (" The snapshot files are not shipped with this report: "
             + SNAPSHOT_HOWTO.format(size=size or "SIZE", context=table["context_length"].iloc[0], folder=SNAPSHOT_FOLDER)
             + f" ({', '.join(f'{name}.pickle' for name in table['snapshot'])}); drop one on "
             "https://pytorch.org/memory_viz to see every allocation with its stack.")
    return ResultsAnswer("mem-a", text, tables, used_files(rows), numbers,
                         downloads={TIMELINE_TITLE: rows.drop(columns="time_us")})


def _train_story(table: pd.DataFrame, marks: pd.DataFrame, parameters: int, numbers: dict) -> str:
    """The train step read against its state: what it starts with, what zero_grad frees, when
    each phase reaches its peak and which phase's peak is the step's."""
    import pandas as pd

    train = table[table["mode"] == "train"]
    marks = marks[marks["mode"] == "train"].dropna(subset=["phase_peak_bytes"])
    if train.empty or marks.empty:
        return ""
    step = train.iloc[0]
    copy = fp32_copy_bytes(parameters)
    top = marks.loc[marks["phase_peak_bytes"].idxmax()]
    numbers.update(start_bytes=step["start_bytes"], state_bytes=4 * copy, lowest_bytes=step["lowest_bytes"],
                   peak_phase=top["phase"])
    text = (f" The training step starts with the weights, their gradients and AdamW's two moments in fp32 "
            f"(4 × {copy / MIB:,.0f} MiB = {4 * copy / MIB:,.0f} MiB for {parameters:,} parameters; "
            f"{(step['start_bytes'] - 4 * copy) / MIB:,.0f} MiB more are other buffers); zero_grad(set_to_none) "
            f"frees the gradients (down to {step['lowest_bytes'] / MIB:,.0f} MiB), then")
    reached = [f"the {row.phase.replace('_', ' ')} reaches its peak, {row.phase_peak_bytes / MIB:,.0f} MiB, at "
               f"{row.reached_at_ms:.0f} ms" for row in marks.itertuples() if pd.notna(row.reached_at_ms)]
    text += " " + "; ".join(reached) if reached else ""
    return text + f". The step's peak is set by the {top['phase'].replace('_', ' ')}."


def peak_table(rows: pd.DataFrame, dtype: str) -> pd.DataFrame:
    """Context lengths × modes of one dtype: the peak allocated bytes per phase and overall."""
    chosen = rows[rows["dtype"] == dtype].sort_values(["context_length", "mode"])
    return chosen[["size", "context_length", "mode", "dtype", "status",
                   *[c for c in SHOWN_PEAKS if c in chosen]]].reset_index(drop=True)


def _peak_sentence(table: pd.DataFrame) -> str:
    """``forward 1.2–3.4 GiB, train 5.6–7.8 GiB over contexts 128–512``."""
    parts = []
    for mode, rows in table.groupby("mode", sort=False):
        done = ok_rows(rows)
        if done.empty:
            parts.append(f"{mode} ran out of memory at every context length")
            continue
        low, high = done.iloc[0], done.iloc[-1]
        span = f"{low['peak_memory_bytes'] / MIB:,.0f} MiB at context {low['context_length']}"
        if len(done) > 1:
            span += f" to {high['peak_memory_bytes'] / MIB:,.0f} MiB at {high['context_length']}"
        oom = rows[rows["status"] != "ok"]
        if not oom.empty:
            span += f" (out of memory at {', '.join(str(c) for c in oom['context_length'])})"
        parts.append(f"{mode} peaks at {span}")
    return "; ".join(parts)


def answer_mem_b(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mem-b: peak memory per context length, forward only against a full training step (fp32),
    and what the training peak is made of."""
    import pandas as pd

    rows = results.experiment_rows(PEAKS)
    table = peak_table(rows, "fp32") if not rows.empty else rows
    if table.empty or ok_rows(table)["peak_memory_bytes"].isna().all():
        return Unanswered("mem-b", f"a `{PEAKS}` results file with fp32 peaks ({RUN_MEMORY})")
    text = f"{table['size'].iloc[0]} in fp32: {_peak_sentence(table)}."
    growth = _train_over_forward(table)
    if growth:
        text += f" A training step needs {growth} the forward pass's peak at the same context length."
    tables = {"Peak memory, fp32": table}
    numbers: dict = {}
    accounting = train_accounting(rows[rows["dtype"] == "fp32"]) if "parameters" in rows else pd.DataFrame()
    if not accounting.empty:
        tables["What the training step holds, fp32"] = accounting
        text += _accounting_text(accounting, numbers)
    return ResultsAnswer("mem-b", text, tables, used_files(rows[rows["dtype"] == "fp32"]), numbers)


def _mib_list(values: pd.Series) -> str:
    return " / ".join(f"{v / MIB:,.0f}" for v in values) + " MiB"


def _accounting_text(accounting: pd.DataFrame, numbers: dict) -> str:
    """State, activations (their T² part and the rest per position) and the phase of the peak."""
    copy = accounting["fp32_copy_bytes"].iloc[0]
    contexts = "/".join(str(c) for c in accounting["context_length"])
    numbers.update(activations_bytes=dict(zip(accounting["context_length"], accounting["activations_bytes"])),
                   peak_phase=dict(zip(accounting["context_length"], accounting["peak_phase"])))
    text = (f" Accounting of the training step: the weights and AdamW's two moments ({3} × {copy / MIB:,.0f} MiB = "
            f"{3 * copy / MIB:,.0f} MiB) stay all step and the runner's zero_grad(set_to_none) frees the gradients "
            f"before the forward, so the train forward's peak minus them is what the forward keeps for backward: "
            f"{_mib_list(accounting['activations_bytes'])} at context {contexts}.")
    if "attention_t2_bytes" in accounting:
        text += (f" Its T² part, the two fp32 B×H×T×T matrices eager attention keeps per layer, is "
                 f"{_mib_list(accounting['attention_t2_bytes'])}; the rest grows with T alone: "
                 + " / ".join(f"{v / MIB:.1f}" for v in accounting["rest_per_position_bytes"])
                 + " MiB per context position.")
    by_phase = [f"the {row.peak_phase.replace('_', ' ')} at {row.context_length} ({row.peak_bytes / MIB:,.0f} MiB)"
                for row in accounting.itertuples()]
    by_phase = by_phase[0] if len(by_phase) == 1 else ", ".join(by_phase[:-1]) + " and " + by_phase[-1]
    text += (f" The backward adds the gradients ({copy / MIB:,.0f} MiB) while it frees activations; the step's peak is "
             f"set by {by_phase}.")
    return text


def _train_over_forward(table: pd.DataFrame) -> str:
    peaks = ok_rows(table).pivot_table(index="context_length", columns="mode", values="peak_memory_bytes")
    if not {"forward", "train"} <= set(peaks.columns):
        return ""
    ratio = (peaks["train"] / peaks["forward"]).dropna()
    if ratio.empty:
        return ""
    return f"{ratio.min():.1f}×" if len(ratio) == 1 or ratio.max() - ratio.min() < 0.05 else \
        f"{ratio.min():.1f}–{ratio.max():.1f}×"


def answer_mem_c(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mem-c: the same peaks under bf16 autocast, next to fp32."""
    import pandas as pd

    rows = results.experiment_rows(PEAKS)
    bf16 = peak_table(rows, "bf16") if not rows.empty else rows
    if bf16.empty or ok_rows(bf16)["peak_memory_bytes"].isna().all():
        return Unanswered("mem-c", f"a `{PEAKS}` results file with bf16 peaks ({RUN_MEMORY})")
    keys = ["context_length", "mode"]
    both = peak_table(rows, "fp32")[[*keys, "status", "peak_memory_bytes"]].merge(
        bf16[[*keys, "status", "peak_memory_bytes"]], on=keys, suffixes=("_fp32", "_bf16"))
    compared = pd.DataFrame({
        "context_length": both["context_length"], "mode": both["mode"],
        "status": both["status_fp32"].where(both["status_fp32"] != "ok", both["status_bf16"]),
        "fp32_peak_bytes": both["peak_memory_bytes_fp32"], "bf16_peak_bytes": both["peak_memory_bytes_bf16"],
        "bf16_over_fp32_ratio": both["peak_memory_bytes_bf16"] / both["peak_memory_bytes_fp32"],
    })
    text = f"{bf16['size'].iloc[0]} under bf16 autocast: {_peak_sentence(bf16)}."
    ratios = {mode: group.dropna() for mode, group in compared.groupby("mode", sort=False)["bf16_over_fp32_ratio"]}
    ratios = {mode: ratio for mode, ratio in ratios.items() if not ratio.empty}
    effects = {mode: _precision_effect(ratio) for mode, ratio in ratios.items()}
    if len(set(effects.values())) == 1:
        text += f" Against fp32 the peak is {_ratio_span(pd.concat(ratios.values()))} as large: " \
                + "{}: {}.".format(*next(iter(effects.values())))
    elif effects:
        text += " Against fp32 the peak is " + " and ".join(
            f"{_ratio_span(ratios[mode])} as large in {mode} ({effect}: {reason})"
            for mode, (effect, reason) in effects.items()) + "."
    numbers: dict = {}
    text += _bf16_accounting_text(rows, numbers)
    return ResultsAnswer("mem-c", text, {"Peak memory, bf16 autocast": bf16, "bf16 against fp32": compared},
                         used_files(rows), numbers)


def _bf16_accounting_text(rows: pd.DataFrame, numbers: dict) -> str:
    """The bf16 forward's extra memory against autocast's weight copies, and the bf16 train step's
    activations against fp32's."""
    import pandas as pd

    forward = peak_table(rows, "fp32").merge(peak_table(rows, "bf16"), on=["context_length", "mode"],
                                               suffixes=("_fp32", "_bf16"))
    forward = ok_rows(forward.rename(columns={"status_fp32": "status"}))
    forward = forward[forward["mode"] == "forward"]
    text = ""
    if not forward.empty and "parameters" in rows:
        extra = forward["peak_memory_bytes_bf16"] - forward["peak_memory_bytes_fp32"]
        copies = int(rows["parameters"].iloc[0]) * 2
        numbers.update(forward_extra_bytes=extra.tolist(), bf16_weight_copies_bytes=copies)
        text += (f" The bf16 forward holds {_mib_span(extra)} more than fp32, about autocast's bf16 copies of the "
                 f"weights ({int(rows['parameters'].iloc[0]):,} × 2 B = {copies / MIB:,.0f} MiB), which it caches "
                 "for the whole forward.")
    accounting = train_accounting(rows) if "parameters" in rows else pd.DataFrame()
    if accounting.empty or set(accounting["dtype"]) != {"fp32", "bf16"}:
        return text
    kept = accounting.pivot_table(index="context_length", columns="dtype", values="activations_bytes")
    ratio = (kept["bf16"] / kept["fp32"]).dropna()
    if ratio.empty:
        return text
    numbers["activation_ratio"] = ratio.to_dict()
    return text + (f" In the training step the activations kept for backward (forward peak minus weights, moments "
                   f"and the bf16 copies) are {_ratio_span(ratio)} fp32's ("
                   + ", ".join(f"{kept.loc[c, 'bf16'] / MIB:,.0f} against {kept.loc[c, 'fp32'] / MIB:,.0f} MiB at {c}"
                               for c in ratio.index)
                   + "): bf16 halves what the GEMMs output, not what autocast keeps in fp32 (softmax, norms, loss), "
                   "and the weight copies come on top, so the train peak moves little.")


def _mib_span(values: pd.Series) -> str:
    low, high = f"{values.min() / MIB:,.0f}", f"{values.max() / MIB:,.0f}"
    return f"{low} MiB" if low == high else f"{low}–{high} MiB"


def _ratio_span(ratio: pd.Series) -> str:
    low, high = f"{ratio.min():.2f}", f"{ratio.max():.2f}"
    return f"{low}×" if low == high else f"{low}–{high}×"


def _precision_effect(ratio: pd.Series) -> tuple[str, str]:
    """What bf16/fp32 peak ratios say about mixed precision and memory: the effect, and why."""
    if (ratio - 1).abs().max() < SMALL_CHANGE:
        return ("mixed precision barely changes peak memory",
                "parameters, gradients and optimizer state stay fp32, and autocast keeps bf16 copies next to the "
                "fp32 tensors")
    if ratio.max() < 1:
        return "mixed precision lowers peak memory", "activations saved for backward are bf16, half the bytes"
    return "mixed precision raises peak memory here", "autocast's bf16 copies of the weights come on top of the fp32 ones"


def answer_mem_d(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mem-d: size of one residual-stream activation tensor in fp32, with its derivation, in MiB
    (bytes / 1024²) and MB (bytes / 10⁶)."""
    rows = results.experiment_rows(ACTIVATION)
    if rows.empty:
        return Unanswered("mem-d", f"a `{ACTIVATION}` results file (python -m cs336_profile.run memory)")
    first = rows.iloc[0]
    derivations = [f"{r.batch_size} × {r.context_length} × {r.d_model} × 4 B = {r.bytes:,} B = "
                   f"{r.bytes / MIB:.2f} MiB ({r.bytes / 1e6:.2f} MB)" for r in rows.itertuples()]
    text = (f"One residual-stream activation of {first['size']} is batch × context × d_model fp32 values: "
            + "; ".join(f"at context {r.context_length}, {d}" for r, d in zip(rows.itertuples(), derivations)) + ".")
    table = rows[["size", "batch_size", "context_length", "d_model", "bytes", "mib"]].rename(
        columns={"bytes": "activation_bytes_exact", "mib": "activation_mib"})
    table = table.assign(activation_mb=table["activation_bytes_exact"] / 1e6, derivation=derivations)
    return ResultsAnswer("mem-d", text, {"Residual-stream activation, fp32": table}, used_files(rows),
                         {"activation_bytes": rows["bytes"].tolist()})


def answer_mem_e(results: ResultsSet) -> ResultsAnswer | Unanswered:
    """mem-e: the largest allocations of the forward pass: the tensor each is (from the model's
    activation shapes of the same size), the model code that made it, how many."""
    rows = results.experiment_rows(LARGEST)
    if rows.empty:
        return Unanswered("mem-e", f"a `{LARGEST}` results file from an allocator snapshot ({RUN_MEMORY})")
    peaks = results.experiment_rows(PEAKS)
    shapes = activation_shapes(peaks["size"].iloc[0], int(peaks["batch_size"].iloc[0]), int(rows["context_length"].iloc[0]),
                               peaks["handout"].iloc[0] if "handout" in peaks else None) if not peaks.empty else []
    table = rows.sort_values(["size_bytes", "count"], ascending=False)[
        ["size_bytes", "count", "site", "stack", "snapshot"]].reset_index(drop=True)
    named = [name_allocation(size, shapes) for size in table["size_bytes"]]
    table.insert(1, "tensor", [what for what, _ in named])
    table.insert(2, "shape", [shape for _, shape in named])
    # Stacks differ below the model code; keep the model's frames, the answer speaks of those.
    table["stack"] = [_model_frames(stack) or site for stack, site in zip(table["stack"], table["site"])]
    table["made_at"] = table["stack"].map(lambda stack: " ← ".join(stack.split(" ← ")[:2]))
    counted = table.groupby(["size_bytes", "tensor", "shape", "made_at"], sort=False)["count"].sum().reset_index()
    counted["site_count"] = counted["made_at"] + " (" + counted["count"].astype(str) + ")"
    by_size = counted.groupby(["size_bytes", "tensor", "shape"], sort=False).agg(
        count=("count", "sum"), sites=("site_count", ", ".join)).reset_index()
    what, where = [], []
    for row in by_size.head(3).itertuples():
        label = f"{row.size_bytes / MIB:,.1f} MiB × {int(row.count)}"
        if row.tensor:
            label = f"{row.tensor.split(' (')[0]} ({label}, {row.shape.removesuffix(' fp32').replace('×', ' × ')} × 4 B)"
        what.append(label)
        where.append(f"{row.size_bytes / MIB:,.1f} MiB at {row.sites}")
    text = ("The largest allocations of the forward pass are " + "; then ".join(what) + ".\n\n"
            "Where the model's code made them (stack frames, with counts): " + "; ".join(where) + ".")
    table = table.drop(columns="made_at")
    return ResultsAnswer("mem-e", text, {"Largest allocations of the forward pass": table}, used_files(rows),
                         {"largest_bytes": int(by_size["size_bytes"].iloc[0]), "largest_tensor": by_size["tensor"].iloc[0]})


def _model_frames(stack: str) -> str:
    """The frames of a stack inside the model's code (``model.py:143 in forward <- ...``)."""
    frames = [frame for frame in str(stack).split(" <- ") if frame.startswith(MODEL_FILE)]
    return " ← ".join(frame.split(" in ")[0] for frame in frames)


MEM_A = Question(
    id="mem-a", section="Memory", title="Memory over a step",
    text="Allocated memory over a forward pass and over a full training step.",
    needs=f"a `{TIMELINE}` results file with allocator snapshots ({RUN_MEMORY})",
    compute=from_same_model(answer_mem_a), figure=FigureSpec("mem-a", alt="Memory over a step"),
)

MEM_B = Question(
    id="mem-b", section="Memory", title="Peak memory per context length",
    text="Peak memory per context length: forward only against a full training step.",
    needs=f"a `{PEAKS}` results file with fp32 peaks ({RUN_MEMORY})",
    compute=from_same_model(answer_mem_b), figure=FigureSpec("mem-b", alt="Peak memory per context length"),
)

MEM_C = Question(
    id="mem-c", section="Memory", title="Peak memory with bf16 autocast",
    text="The same peaks under bf16 autocast: does mixed precision change peak memory much?",
    needs=f"a `{PEAKS}` results file with bf16 peaks ({RUN_MEMORY})",
    compute=from_same_model(answer_mem_c), figure=FigureSpec("mem-c", alt="Peak memory with bf16 autocast"),
)

MEM_D = Question(
    id="mem-d", section="Memory", title="One residual-stream activation",
    text="Size of one residual-stream activation tensor in fp32, in MB (MiB here: bytes / 1024²), and its derivation.",
    needs=f"a `{ACTIVATION}` results file (python -m cs336_profile.run memory)",
    compute=from_same_model(answer_mem_d), figure=FigureSpec("mem-d", alt="One residual-stream activation"),
)

MEM_E = Question(
    id="mem-e", section="Memory", title="Largest allocations",
    text="The largest allocations of the forward pass and where they come from.",
    needs=f"a `{LARGEST}` results file from an allocator snapshot ({RUN_MEMORY})",
    compute=from_same_model(answer_mem_e), figure=FigureSpec("mem-e", alt="Largest allocations"),
)
