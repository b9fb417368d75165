"""Two multi-GPU trace summaries compared rank by rank: each rank's measured step (GPU span and its
step-to-step spread, communication, exposed and overlapped communication) in run A and run B,
matched by rank number, and a sentence that weighs each rank's change in step span against the
step-to-step spread of both runs.

Reads the summaries' ``communication`` section (:mod:`analysis.trace.multi_gpu.summary`) through
:func:`analysis.questions.ddp_b.rank_rows`; nothing is recomputed from the trace.
"""
from __future__ import annotations

from analysis.core import text
from analysis.questions.ddp_b import rank_rows

# The per-rank figures compared, as ddp_b's rank rows name them.
FIGURES = ("passes", "step_gpu_span_ms", "step_gpu_span_spread_ms", "communication_ms",
           "exposed_communication_ms", "overlapped_communication_ms")


def rank_diff(a: dict, b: dict) -> dict | None:
    """``rows``: per rank found in both summaries, ``a_<figure>``, ``b_<figure>`` for each of
    :data:`FIGURES` plus ``step_gpu_span_delta_ms`` and ``exposed_delta_ms`` (B − A) and
    ``beyond_spread`` (the span change exceeds the larger spread of the two runs); ``why``: the
    sentence. None unless both summaries hold two or more ranks with a measured step."""
    sides = [{row["rank"]: row for row in rank_rows(s)} if s.get("communication") else {} for s in (a, b)]
    shared = sorted(set(sides[0]) & set(sides[1]))
    if len(sides[0]) < 2 or len(sides[1]) < 2 or not shared:
        return None
    rows = []
    for rank in shared:
        row = {"rank": rank} | {f"{side}_{figure}": ranks[rank][figure]
                                for figure in FIGURES for side, ranks in zip("ab", sides)}
        row["step_gpu_span_delta_ms"] = row["b_step_gpu_span_ms"] - row["a_step_gpu_span_ms"]
        row["exposed_delta_ms"] = row["b_exposed_communication_ms"] - row["a_exposed_communication_ms"]
        row["beyond_spread"] = abs(row["step_gpu_span_delta_ms"]) > max(row["a_step_gpu_span_spread_ms"],
                                                                        row["b_step_gpu_span_spread_ms"])
        rows.append(row)
    return {"rows": rows, "why": _why(rows)}


def _why(rows: list[dict]) -> str:
    """One sentence per rank, then which ranks' span changes stand out from the noise."""
    sentences = [_rank_sentence(row) for row in rows]
    beyond = [row["rank"] for row in rows if row["beyond_spread"]]
    if len(beyond) == len(rows):
        sentences.append(f"On {'both' if len(rows) == 2 else 'all'} ranks the step span changes by more than "
                         "either run's step-to-step spread.")
    elif not beyond:
        sentences.append("On no rank does the step span change by more than the runs' step-to-step spread, "
                         "so the runs' step spans do not measurably differ.")
    else:
        sentences.append(f"Only on {text.plural(len(beyond), 'rank')} ({', '.join(map(str, beyond))}) does the step "
                         "span change by more than the runs' step-to-step spread.")
    return " ".join(sentences)


def _rank_sentence(row: dict) -> str:
    delta = row["step_gpu_span_delta_ms"]
    passes = (f"{text.plural(row['a_passes'], 'step')} each" if row["a_passes"] == row["b_passes"] else
              f"{text.count(row['a_passes'])} and {text.plural(row['b_passes'], 'step')}")
    exposed_a, exposed_b = row["a_exposed_communication_ms"], row["b_exposed_communication_ms"]
    return (f"Rank {row['rank']}: the step's GPU span goes {text.ms(row['a_step_gpu_span_ms'])} → "
            f"{text.ms(row['b_step_gpu_span_ms'])} ({text.signed_ms(delta)}) against a step-to-step spread of "
            f"{text.ms(row['a_step_gpu_span_spread_ms'])} in A and {text.ms(row['b_step_gpu_span_spread_ms'])} "
            f"in B ({passes}); exposed communication goes {text.ms(exposed_a)} → {text.ms(exposed_b)} "
            f"({text.signed_ms(exposed_b - exposed_a)}) of {text.ms(row['a_communication_ms'])} → "
            f"{text.ms(row['b_communication_ms'])} of communication kernels, "
            f"{text.ms(row['a_overlapped_communication_ms'])} → {text.ms(row['b_overlapped_communication_ms'])} "
            "of it overlapped with compute.")

