"""The lines that say what :mod:`analysis.core.structure` found in a trace, from the summary's
``structure`` record: the command line's structure line and steps, and the trace pages'."""
from __future__ import annotations

from analysis.core.structure_text import family_label, name_families


def describe(record: dict, measured_passes: dict[str, int] | None = None) -> str:
    """One line from a structure record: where the structure came from, the roles found and the
    names behind them (a phase none of whose passes the measured steps hold said so, where
    ``measured_passes``, the summary's passes per phase, is given), and the names left unused."""
    if not record["steps"]:
        steps = f"no steps ({record['step_rule']})"
    else:
        names = ", ".join(f"`{family_label(n)}`" for n in name_families(record["step_names"]))
        processes = record.get("processes", 1)
        each = f" in all, over {processes} processes" if processes > 1 else ""
        cut = f", {record['cut_steps']} cut off by the capture's end" if record.get("cut_steps") else ""
        steps = (f"steps {names} ×{record['steps']}{each}: {record['warmup_steps']} warm-up "
                 f"({record['warmup_rule']}), {record['measured_steps']} measured{cut}")
    outside = set(record["phase_names"]) - set(measured_passes) if record["steps"] and measured_passes else set()
    phases = ", ".join(f"{phase} " + "/".join(f"`{shortened(n)}`" for n in names)
                       + (" (none in the measured steps)" if phase in outside else "")
                       for phase, names in record["phase_names"].items() if names)
    parts = [steps, phases or "no phases"]
    holders = dict.fromkeys(held["inside"] for held in record.get("held_names", []))
    for holder in holders:
        shown = ", ".join(f"{held['phase']} " + "/".join(f"`{shortened(n)}`" for n in held["names"])
                          for held in record["held_names"] if held["inside"] == holder)
        parts.append(f"inside the {holder}'s ranges, counted there: {shown}")
    attention = [f"{part} " + "/".join(f"`{n}`" for n in names)
                 for part, names in record["attention_names"].items() if names]
    if attention:
        parts.append("attention parts: " + ", ".join(attention))
    elif record["fused_attention"]:
        parts.append("attention fused (scaled_dot_product_attention)")
    if record["block_family"]:
        parts.append(f"blocks `{record['block_family']}`")
    if record["inference_passes"]:
        shown = "/".join(f"`{n}`" for n in record["inference_names"])
        parts.append(f"{record['inference_passes']} inference forward passes ({shown}) kept apart")
    unused = record["unused_names"]
    if unused:
        shown = ", ".join(f"`{shortened(n)}`" for n in unused[:6])
        parts.append(f"unused: {shown}" + (f" and {len(unused) - 6} more" if len(unused) > 6 else ""))
    base, filled = record["source"].removesuffix("+kernels"), record["source"].endswith("+kernels")
    ranges = record["step_ranges"] or record["block_family"] or unused or any(record["attention_names"].values())
    source = {"ranges": "NVTX ranges", "pytorch": "PyTorch's labels", "ranges+pytorch": "NVTX ranges and PyTorch's labels",
              "kernels": "the kernels (no range marks one pass of a phase)" if ranges else "kernels alone (no NVTX range names a step or phase)",
              "none": "NVTX ranges" if record["step_ranges"] else "nothing found"}[base]
    if filled:
        source += ", the phases they lack from the kernels"
    return f"structure from {source}: " + "; ".join(parts)


def shortened(name: str, most: int = 40) -> str:
    """A range name cut to ``most`` characters (an ellipsis says so)."""
    return name if len(name) <= most else name[:most - 1] + "…"


def describe_steps(record: dict) -> list[str]:
    """One line per step: measured, warm-up or cut (off by the capture's end), its CPU span, kernel
    count and kernel time."""
    return [f"  {row['step']} (pid {row['pid']}): {_status(row)}  "
            f"{row['cpu_span_ms']:9.2f} ms CPU span, {row['kernels']:6d} kernels, {row['kernel_ms']:9.2f} ms of kernels"
            for row in record["step_table"]]


def _status(row: dict) -> str:
    """A step table row's status, in as many characters whatever it is."""
    return "measured" if row["measured"] else "cut     " if row.get("cut") else "warm-up "
