"""What the HTML and Markdown renderers share: the jinja2 environment over ``templates/``, the
figure files of each page, and the display tables of a trace page and a diff page."""
from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from analysis.core.safe_write import write_file
from analysis.core.text import kernel_cell, printable
from analysis.questions.records import QuestionRecord
from analysis.report.bar_figures import DRAWINGS as BAR_DRAWINGS
from analysis.report.drawing import FigureFile, FigureJob, FigureNotDrawn, draw_all
from analysis.report.markdown_text import markdown_cell, markdown_value
from analysis.report.site import DiffPage, Site, TracePage
from analysis.report.structure_lines import describe
from analysis.report.tables import DisplayTable, display_table, display_tables

PACKAGE_NAME = "cs336-profile"
PHASE_COLUMNS = ("passes", "kernels_per_pass", "kernel_ms_per_pass", "python_ms_per_pass", "cpu_span_ms_per_pass",
                 "gpu_span_ms_per_pass", "busy_ms_per_pass", "idle_ms_per_pass", "idle_share", "achieved_tflop_per_s",
                 "mfu")
KERNEL_COLUMNS = ("kernel", "category", "tensor_core", "calls_per_pass", "ms_per_pass", "share")
TOP_KERNELS_OVERALL = 20
# No wall of rows on a page: a longer table shows its first rows and links all of them as CSV.
MAX_TABLE_ROWS = 80
INLINE_CODE = re.compile(r"`([^`]+)`")


def templates_dir() -> Path:
    """``templates/`` of a checkout (or editable install), else the copy an install put under
    ``<prefix>/share/cs336-profile/templates``."""
    candidates = (Path(__file__).resolve().parents[2] / "templates",
                  Path(sys.prefix) / "share" / PACKAGE_NAME / "templates")
    for candidate in candidates:
        if (candidate / "base.html").is_file():
            return candidate
    raise FileNotFoundError(f"report templates not found in {' or '.join(str(c) for c in candidates)}")


def _inline_code(text: str) -> Markup:
    """Escape text for HTML and turn `code` spans into <code> elements."""
    return Markup(INLINE_CODE.sub(r"<code>\1</code>", str(escape(text))))


def _page_text(value):
    """What an HTML template writes for ``value``: text made printable (a control character or a
    bidirectional override from a trace shows as its escape), markup kept markup."""
    if isinstance(value, Markup):
        return Markup(printable(value, one_line=False))
    return printable(value, one_line=False) if isinstance(value, str) else value


@functools.lru_cache(maxsize=2)
def environment(markdown: bool = False) -> Environment:
    """jinja2 environment: StrictUndefined (a missing value fails loudly), HTML autoescaped; in
    Markdown every value written is made inert (:mod:`analysis.report.markdown_text`). One per
    process and flavour, so each template is compiled once."""
    env = Environment(loader=FileSystemLoader(templates_dir()), undefined=StrictUndefined,
                      autoescape=select_autoescape(["html"]) if not markdown else False,
                      finalize=markdown_value if markdown else _page_text,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["code"] = _inline_code
    env.filters["md_cell"] = markdown_cell
    env.filters["structure_line"] = describe
    return env


def question_figures(page: QuestionRecord) -> list[FigureJob]:
    """The question's figure, drawn from its answer's tables as its figure spec says."""
    spec = page.card.figure
    if spec is None:
        return []
    module = "bar_figures" if spec.kind in BAR_DRAWINGS else "line_figures"
    return [FigureJob(f"analysis.report.{module}:draw", (spec, page.result), f"{page.card.page}.svg",
                      spec.alt or page.card.title)]


@dataclass(frozen=True)
class DataFile:
    """A table written as CSV beside its page: path relative to the page, and its title."""

    path: str
    title: str


def question_content(page: QuestionRecord, out_dir: Path) -> tuple[list[DisplayTable], list[DataFile]]:
    """The answer's tables as shown, and its CSV files written beside the page: its ``downloads``
    and every table longer than :data:`MAX_TABLE_ROWS`, whose first rows alone are shown."""
    shown_tables, long_tables = [], {}
    for title, table in page.result.tables.items():
        if len(table) > MAX_TABLE_ROWS:
            long_tables[f"{title}: all {len(table)} rows"] = table
            title = f"{title} (the first {MAX_TABLE_ROWS} of {len(table)} rows; all of them in the CSV file below)"
            table = table.head(MAX_TABLE_ROWS)
        shown_tables += display_tables(title, table)
    files = []
    for index, (title, table) in enumerate({**page.result.downloads, **long_tables}.items()):
        name = f"{page.card.page}-data{index + 1}.csv"
        write_file(out_dir / name, table.to_csv(index=False), root=out_dir)
        files.append(DataFile(name, title))
    return shown_tables, files


def question_traces(page: QuestionRecord, site: Site) -> list[TracePage]:
    """The trace pages of the traces a question page summarizes (its inputs), in the site's order."""
    inputs = set(page.result.inputs)
    return [trace for trace in site.traces if trace.summary["trace"] in inputs]


def trace_figures(page: TracePage) -> list[FigureJob]:
    """Per-phase categories and spans; the step timeline when the summary has one."""
    phases = page.summary["phases"]
    if not phases:
        return []
    jobs = [FigureJob("analysis.report.bar_figures:phase_categories", (phases,), f"{page.page}-categories.svg",
                      "Kernel time by category per phase"),
            FigureJob("analysis.report.bar_figures:phase_spans", (phases,), f"{page.page}-spans.svg",
                      "Python timer, CPU span, GPU projection and busy time per phase")]
    if page.summary.get("timeline"):
        jobs.append(FigureJob("analysis.report.timeline:step_timeline", (page.summary["timeline"],),
                              f"{page.page}-timeline.svg", "Timeline of one measured step", wide=True))
    return jobs


def diff_figures(page: DiffPage) -> list[FigureJob]:
    """Kernel time by category of the two traces."""
    categories = pd.DataFrame(page.record.diff["categories"])
    return [FigureJob("analysis.report.bar_figures:category_diff",
                      (categories, f"A: {page.a['trace']}", f"B: {page.b['trace']}"), f"{page.page}.svg",
                      "Kernel time by category, A and B")]


def site_figures(site: Site, out_dir: Path) -> dict[str, list[FigureFile | FigureNotDrawn]]:
    """Every figure of the site, drawn where missing or out of date: page name
    (question, trace or diff page) -> its figure files."""
    planned = {**{page.card.page: question_figures(page) for page in site.questions},
               **{page.page: trace_figures(page) for page in site.traces},
               **{ranks_key(page): communication_figures(page) for page in site.traces},
               **{page.page: diff_figures(page) for page in site.diffs}}
    files = iter(draw_all([job for jobs in planned.values() for job in jobs], out_dir))
    return {name: [next(files) for _ in jobs] for name, jobs in planned.items()}


def communication_figures(page: TracePage) -> list[FigureJob]:
    """One step on every rank, compute and communication streams (traces of two or more ranks)."""
    timeline = page.summary["communication"]["timeline"]
    if not timeline:
        return []
    return [FigureJob("analysis.report.timeline:rank_timeline", (timeline,), f"{page.page}-ranks.svg",
                      f"{timeline['title']} on every rank: compute and communication kernels per stream")]


def ranks_key(page: TracePage) -> str:
    """Where :func:`site_figures` files a trace page's per-rank timeline."""
    return f"{page.page}-ranks"


def _label_kernels(table: pd.DataFrame) -> pd.DataFrame:
    """Demangled names → ``kernel`` (the short label) and ``kernel_full`` (the name, on hover)."""
    return table.assign(kernel=table["kernel"].map(kernel_cell), kernel_full=table["kernel"])


def trace_tables(summary: dict) -> dict[str, list[DisplayTable]]:
    """``phases``: the per-phase figures; ``kernels``: the top kernels of each phase, then of the
    whole measured step (or capture) by category and by kernel."""
    phases, overall = summary["phases"], summary["overall"]
    per_phase = pd.DataFrame([{"phase": name, **{c: figures_.get(c) for c in PHASE_COLUMNS}}
                              for name, figures_ in phases.items()])
    kernels = [display_table(f"Top kernels of {name} (per pass)",
                             _label_kernels(pd.DataFrame(figures_["top_kernels"], columns=KERNEL_COLUMNS)))
               for name, figures_ in phases.items() if figures_["top_kernels"]]
    scope = f"per pass of the {overall['scope']}"
    categories = pd.DataFrame(list(overall["by_category_ms_per_pass"].items()), columns=["category", "ms_per_pass"])
    if not categories.empty:
        kernels.append(display_table(f"Kernel time by category, {scope}", categories))
    if overall["top_kernels"]:
        top = pd.DataFrame(overall["top_kernels"][:TOP_KERNELS_OVERALL], columns=KERNEL_COLUMNS)
        kernels.append(display_table(f"Top kernels, {scope}", _label_kernels(top)))
    tables = [display_table("Per phase, mean per measured pass", per_phase)] if phases else []
    metrics = (summary.get("gpu_metrics") or {}).get("phases") or {}
    if metrics:
        rows = pd.DataFrame([{"phase": name, **values} for name, values in metrics.items()])
        tables.append(display_table("GPU metrics per phase, mean % over the measured phase windows", rows))
    return {"phases": tables, "kernels": kernels, "communication": communication_tables(summary["communication"]),
            "structure": structure_tables(summary.get("structure"))}


def structure_tables(structure: dict | None) -> list[DisplayTable]:
    """Every step the trace holds, measured or warm-up, with its CPU span and kernel figures (and
    whether the capture's end cut it off, where one was)."""
    if not structure or not structure["step_table"]:
        return []
    steps = pd.DataFrame(structure["step_table"])
    if "cut" in steps and not steps["cut"].any():
        steps = steps.drop(columns="cut")
    return [display_table("Steps found (a step not measured is left out of every figure)", steps)]


def communication_tables(communication: dict) -> list[DisplayTable]:
    """Per rank and phase, per collective, per FSDP block and the skew per step; nothing for a
    trace of one rank without communication kernels."""
    ranks = communication["ranks"]
    if len(ranks) < 2 and not communication["collectives"]:
        return []
    per_rank = pd.DataFrame([{"rank": r["rank"], "pid": r["pid"], "device_id": r["device_id"], "phase": phase,
                              **figures_} for r in ranks for phase, figures_ in r["phases"].items()])
    tables = [display_table("Per rank and phase, mean per pass of that rank", per_rank),
              display_table("NCCL kernels per rank and collective, per measured step",
                            pd.DataFrame(communication["collectives"]).drop(columns=["pid", "device_id"],
                                                                           errors="ignore"))]
    if communication["fsdp_blocks"]:
        tables.append(display_table("FSDP blocks: all-gather lead over the forward pass (negative: compute waited)",
                                    pd.DataFrame(communication["fsdp_blocks"])))
    skew = pd.DataFrame([{k: v for k, v in step.items() if k != "phase_duration_spread_ms"}
                         | {f"{phase}_spread_ms": ms for phase, ms in step["phase_duration_spread_ms"].items()}
                         for step in communication["skew"]["steps"]])
    tables.append(display_table("Skew between ranks per measured step (GPU clock)", skew))
    return [t for t in tables if t.rows]


RANK_DIFF_TABLE = "Per rank, mean per measured step (spread: longest minus shortest step)"


def diff_content(page: DiffPage) -> tuple[dict, list[DisplayTable]]:
    """The diff numbers and their tables."""
    diff = page.record.diff
    tables = [display_table("Kernel time by category, per pass", pd.DataFrame(diff["categories"])),
              display_table("Per phase", pd.DataFrame(diff["phases"])),
              display_table("Kernels that moved most, per pass", _label_kernels(pd.DataFrame(diff["kernels"])))]
    if diff.get("ranks"):
        tables[:0] = display_tables(RANK_DIFF_TABLE, pd.DataFrame(diff["ranks"]["rows"]))
    if diff["config_changes"]:
        tables.insert(0, display_table("Settings that differ", pd.DataFrame(diff["config_changes"])))
    return diff, [t for t in tables if t.rows]
