"""``analyze-nsys``: analyze nsys SQLite exports and write JSON, CSV, Markdown or HTML results.

A thin layer over :func:`analysis.app.analyze.analyze_trace`: traces are analyzed in parallel (their
stored summaries, which the results cache keeps; the sentences are added to each summary read from
the cache or made), a
trace that cannot be analyzed costs one line on stderr (``TRACE: why``) and the batch goes on.
Exit status: 0 when every trace was analyzed, 1 when some failed, 2 for usage errors.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TypeVar

from analysis.app.batch import distinct, output_names
from analysis.app.cache import CacheUnusable, ResultsCache
from analysis.app.engine import (
    Engine,
    SchedulerUnavailable,
    add_engine_options,
    engine_from,
    imports_uncollected,
    leave_out_pyarrow,
    one_blas_thread,
    returned_memory,
)
from analysis.core.range_names import RangeNames
from analysis.core.safe_write import write_file
from analysis.core.text import printable
from analysis.load.errors import TraceError
from analysis.load.input_cache import MIB, InputCache, file_sha256
from analysis.load.progress import listening
from analysis.questions.sentences import with_sentences
from cs336_profile.contract import PHASES, trace_stem
from cs336_profile.results import unwritable_reason

FORMATS = ("json", "md", "csv", "html")
DEFAULT_FORMATS = ("html", "md", "json")
DEFAULT_OUT = "report"
RESULTS_DB = "results.db"
TRACE_TABLES = "trace-tables"  # the table cache's folder in <out> (analysis.load.table_cache)
Made = TypeVar("Made")

EPILOG = """\
compare two runs:
  analyze-nsys diff A.sqlite B.sqlite [--out DIR]
      writes DIR/diff.json and the diff page: per-category deltas, the kernels that moved most,
      and why.

exit status: 0 every trace analyzed, 1 some traces failed (one line each on stderr), 2 usage error.
"""


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status instead of exiting."""
    leave_out_pyarrow()
    one_blas_thread()
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        command, parser, argv = (_diff, _diff_parser(), argv[1:]) if argv[:1] == ["diff"] else \
            (_analyze, _analyze_parser(), argv)
        args = parser.parse_args(argv)
        return command(args, _range_names(parser, args))
    except SystemExit as stop:  # argparse: --help (0) and usage errors (2)
        return stop.code if isinstance(stop.code, int) else 2
    except SchedulerUnavailable as err:
        say(f"analyze-nsys: {err}")
        return 2
    except KeyboardInterrupt:  # Ctrl-C: the files written so far stay; the shell's status for SIGINT
        say("analyze-nsys: interrupted; the outputs written so far are kept")
        return 130


def _analyze_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="analyze-nsys",
        description="Answer the CS336 profiling questions from nsys traces: .nsys-rep reports (exported with "
                    "`nsys export`, which must be on PATH) or their SQLite exports (.sqlite or .sqlite.xz).\n"
                    "Any program's trace works with no flags: steps, warm-up, phases and attention parts are found in it\n"
                    "(your own NVTX ranges, nsys's PyTorch labels, or the kernels alone), and one line per trace says\n"
                    "what was found and from which names.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("traces", nargs="+", type=Path, metavar="TRACE",
                        help="nsys traces to analyze: .nsys-rep, .sqlite or .sqlite.xz")
    parser.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), help=f"output folder (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--format",
        type=_formats,
        default=DEFAULT_FORMATS,
        help=f"comma-separated outputs among {','.join(FORMATS)} (default: {','.join(DEFAULT_FORMATS)}: "
             "the HTML report with its Markdown pages and the JSON of each trace)",
    )
    parser.add_argument("--results", type=_folder, help="folder of the runner's results files, for the report's other pages")
    parser.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1, help="parallel processes (default: all cores)")
    parser.add_argument("--no-cache", action="store_true",
                        help=f"analyze every trace again, reading every export, ignoring <out>/{RESULTS_DB} and "
                             f"<out>/{TRACE_TABLES}/ (the loaded tables of earlier runs); decompress and export "
                             "inputs into a temporary folder instead of the input cache")
    parser.add_argument("--max-decompressed-mib", type=_positive_int, metavar="MIB",
                        help="refuse an .xz input that decompresses to more (default: the larger of 256 and "
                             "100 × its compressed size)")
    parser.add_argument("--export-timeout", type=_positive_int, default=int(InputCache.export_timeout_s), metavar="S",
                        help=f"seconds `nsys export` may take for an .nsys-rep input (default: {InputCache.export_timeout_s:g})")
    add_engine_options(parser)
    _add_range_name_options(parser)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print each trace's steps (measured or warm-up, with their times) after its structure line")
    return parser


def _diff_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="analyze-nsys diff",
        description="Compare two nsys traces (.nsys-rep, .sqlite or .sqlite.xz): per-category deltas, the kernels "
                    "that moved most, and why.",
    )
    parser.add_argument("a", type=Path, metavar="A", help="the baseline trace")
    parser.add_argument("b", type=Path, metavar="B", help="the trace compared with it")
    parser.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), help=f"output folder (default: {DEFAULT_OUT})")
    _add_range_name_options(parser)
    return parser


def _add_range_name_options(parser: argparse.ArgumentParser) -> None:
    """Options naming the trace's roles by hand; ``_range_names`` turns them into RangeNames.
    Without them every role is found in the trace (analysis.core.structure)."""
    group = parser.add_argument_group(
        "the run's structure (found in the trace without these: steps, warm-up, phases, attention parts)")
    group.add_argument("--warmup-prefix", metavar="PREFIX",
                       help="warm-up steps are the ranges named PREFIX<i>, or those inside a range whose name starts "
                            "with PREFIX; left out of every figure")
    group.add_argument("--step-prefix", metavar="PREFIX", help="steps are the ranges PREFIX<i>")
    group.add_argument("--phase-names", type=_names(1, len(PHASES)), metavar="FORWARD[,LOSS],BACKWARD,OPTIMIZER",
                       help="the ranges of the phases, in order: 4 names (forward, loss, backward, optimizer), "
                            "3 (no loss range), 2 (forward, backward) or 1 (forward)")
    group.add_argument("--attention-names", type=_names(3, 3), metavar="SCORES,SOFTMAX,FINAL",
                       help="the attention sub-ranges: scores matmul, softmax, final matmul")
    group.add_argument("--warmup-steps", type=_non_negative_int, metavar="N",
                       help="the first N steps of each process are warm-up, whatever the ranges say")


def _names(least: int, most: int):
    """Argument type: ``least`` to ``most`` comma-separated non-empty names."""
    def parse(value: str) -> tuple[str, ...]:
        names = tuple(name.strip() for name in value.split(","))
        if not least <= len(names) <= most or not all(names):
            count = str(least) if least == most else f"{least} to {most}"
            raise argparse.ArgumentTypeError(f"needs {count} comma-separated non-empty names, got {value!r}")
        return names
    return parse


def _range_names(parser: argparse.ArgumentParser, args: argparse.Namespace) -> RangeNames:
    try:
        return RangeNames(warmup_prefix=args.warmup_prefix, step_prefix=args.step_prefix, phases=args.phase_names,
                          regions=args.attention_names, warmup_steps=args.warmup_steps)
    except ValueError as err:
        parser.error(str(err))


def _formats(value: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    unknown = [v for v in chosen if v not in FORMATS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown format {', '.join(unknown) or repr(value)}; choose among {','.join(FORMATS)}")
    return chosen


def _folder(value: str) -> Path:
    """Argument type: an existing folder (a file given instead would be read as no results)."""
    path = Path(value)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value} is not a folder (give the folder that holds the results files)"
                                         if path.exists() else f"no such folder: {value}")
    return path


def _int_at_least(least: int, words: str):
    """Argument type: an integer of at least ``least`` (``words`` says so when it is not)."""
    def parse(value: str) -> int:
        number = int(value)
        if number < least:
            raise argparse.ArgumentTypeError(f"must be {words}")
        return number
    return parse


_positive_int = _int_at_least(1, "at least 1")
_non_negative_int = _int_at_least(0, "0 or more")


def analyze_one(path: Path, names: RangeNames = RangeNames(), inputs: InputCache = InputCache(),
                tables: Path | None = None) -> tuple[dict | None, str | None]:
    """(stored summary, None) for a trace analyzed (:func:`analysis.app.analyze.stored_summary`:
    figures only, as the results cache keeps it, its loaded tables kept in the folder ``tables``),
    (None, one-line reason) for one that failed. The analysis is imported here, by the process
    that analyzes: a run whose every trace is in the results cache never loads it, and the table
    cache is imported only when ``tables`` is given (``--no-cache`` runs never load it). The
    analysis modules (pandas among them) are imported without the garbage collector
    (:func:`analysis.app.engine.imports_uncollected`), and malloc set to give large blocks back
    (:func:`analysis.app.engine.returned_memory`)."""
    from analysis.app.analyze import analysis_modules, stored_summary

    returned_memory()
    with imports_uncollected():
        analysis_modules()
    try:
        return stored_summary(path, names, inputs, None if tables is None else _table_cache(tables)), None
    except TraceError as err:
        return None, str(err)
    except Exception as err:  # a defect must not end the batch; the line says it is unexpected
        return None, f"unexpected {type(err).__name__} while analyzing: {err}"


def _table_cache(folder: Path):
    """The table cache in ``folder`` (:mod:`analysis.load.table_cache`, imported here: its writer's
    modules are no part of a run that keeps no tables)."""
    from analysis.load.table_cache import TableCache

    return TableCache(folder)


def analyze_many(paths: list[Path], engine: Engine, cache: ResultsCache | None, names: RangeNames = RangeNames(),
                 inputs: InputCache = InputCache(), on_summary: Callable[[dict], None] | None = None,
                 tables: Path | None = None) -> tuple[list[dict], list[dict]]:
    """Summaries of the traces analyzed on ``engine`` with the range ``names``, with their
    sentences (cache hits included: the cache stores and serves summaries without them; it must
    key on the same names, and only this process writes it) and
    ``{trace, error}`` failures, both in input order. ``inputs`` travels with each task, so a Dask
    worker copies compressed and report inputs under the same bounds (into its own input cache).
    ``tables`` is the folder that keeps the loaded tables of the traces analyzed by local processes
    (Dask workers, which may not see this machine's folders, read every export).

    Inputs with the same content are analyzed and counted once (a line says so); each summary's
    ``trace`` is a name no other input's outputs share (:func:`analysis.app.batch.output_names`).
    ``on_summary`` gets each summary as it is ready. Failures are printed to stderr as they come."""
    digests = {path: digest for path in dict.fromkeys(paths) if (digest := _digest(path, cache)) is not None}
    unique, repeats = distinct(paths, digests)
    for path, first in repeats.items():
        say(f"{path}: the same content as {first}; analyzed and counted once")
    trace_names = output_names(unique, digests)
    results: dict[Path, tuple[dict | None, str | None]] = {}

    def finished(path: Path, summary: dict) -> None:
        results[path] = ({**with_sentences(summary), "trace": trace_names[path]}, None)
        if on_summary is not None:
            on_summary(results[path][0])

    for path in unique:
        cached = _cached(cache, path)
        if cached is not None:
            finished(path, cached)
    todo = [p for p in unique if p not in results]
    with _progress_bar(len(todo), stages=engine.in_process(len(todo))) as progress:
        for path, (summary, error) in engine.map(analyze_one, todo, names, inputs, None if engine.uses_dask else tables,
                                                 lost=lambda why: (None, why)):
            error = error or _other_content(summary, digests.get(path))
            if error is not None:
                results[path] = (None, error)
                say(f"{path}: {error}", progress)
            else:
                cache = _stored(cache, path, summary, progress)
                finished(path, summary)
            progress.update()
    summaries = [results[p][0] for p in unique if results[p][0] is not None]
    failures = [{"trace": str(p), "error": results[p][1]} for p in unique if results[p][1] is not None]
    return summaries, failures


def _other_content(summary: dict, digest: str | None) -> str | None:
    """Why a summary is not of the file hashed here (a Dask worker that sees other content at the
    path, a file rewritten meanwhile), or None; only a summary of this content is used and cached."""
    analyzed = summary.get("trace_sha256")
    if digest is None or analyzed == digest:
        return None
    return (f"was analyzed as other content than this file's (sha256 {str(analyzed)[:12]}…, here {digest[:12]}…: "
            "a worker that sees another file at this path, or a file rewritten meanwhile); not used")


def _digest(path: Path, cache: ResultsCache | None) -> str | None:
    """The content hash of a regular file (hashed once per process, shared with the cache's, and
    read from the cache while the file is unchanged: :meth:`ResultsCache.sha256_of`), or None for
    anything else or a file that cannot be read (a FIFO is never opened: it could block)."""
    if not path.is_file():
        return None
    try:
        return cache.sha256_of(path) if cache is not None else file_sha256(path)
    except OSError:
        return None


def say(line: str, progress=None) -> None:
    """One line on stderr, through the progress bar when one is shown; what it quotes from traces
    and file names is made printable (:func:`analysis.core.text.printable`), so it stays one line."""
    line = printable(line)
    if progress is not None:
        progress.write(line, file=sys.stderr)
    else:
        print(line, file=sys.stderr)


class _Lines:
    """The progress bar's stand-in when stderr is not a terminal: failure lines only."""

    def write(self, line: str, file=sys.stderr) -> None:
        print(line, file=file)

    def update(self) -> None:
        return None


@contextmanager
def _progress_bar(total: int, stages: bool) -> Iterator:
    """A progress bar of ``total`` traces on a terminal (tqdm, imported only then), plain failure
    lines otherwise. With ``stages`` (the traces run in this process) the bar names each one's
    stage as it goes (:func:`_stages_shown`)."""
    if not sys.stderr.isatty():
        yield _Lines()
        return
    from tqdm import tqdm

    with tqdm(total=total, desc="analyzing", unit="trace", file=sys.stderr) as progress, \
            _stages_shown(progress) if stages else nullcontext():
        yield progress


# While it names stages the bar shows the count and the time spent, no rate (of traces, when one
# trace takes minutes); its own characters (description, percentage, a bar of ten, count, time)
# leave a stage's text the rest of the terminal's width, with room for counts of three digits and
# an hour or more. Its clock moves every TICK_S.
STAGE_BAR_FORMAT = "{l_bar}{bar:10}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"
BAR_CHARS = 46
MIN_STAGE_CHARS = 20
TICK_S = 0.5


@contextmanager
def _stages_shown(progress) -> Iterator[None]:
    """While the block runs, the bar ``progress`` names the stage of the trace this process
    analyzes (:mod:`analysis.load.progress`) and its clock ticks each :data:`TICK_S`: a trace of
    tens of millions of kernels takes minutes."""
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(TICK_S):
            progress.refresh()

    progress.bar_format = STAGE_BAR_FORMAT
    ticking = threading.Thread(target=tick, name="progress clock", daemon=True)
    ticking.start()
    try:
        with listening(lambda what: progress.set_postfix_str(fitted(printable(what), progress.ncols))):
            yield
    finally:
        stop.set()
        ticking.join()
        progress.set_postfix_str("")


def fitted(stage: str, columns: int | None) -> str:
    """A stage's text (``<trace>: <what it does>``) cut to what a bar ``columns`` wide leaves it:
    the trace's name loses its start first (an ellipsis in its place); where what it does does not
    fit beside any of it, that alone, cut at its end."""
    width = max(MIN_STAGE_CHARS, (columns or 0) - BAR_CHARS) if columns else len(stage)
    if len(stage) <= width:
        return stage
    name, separator, doing = stage.rpartition(": ")
    kept = width - len(separator) - len(doing) - 1
    return f"…{name[-kept:]}{separator}{doing}" if separator and kept > 0 else doing[:width]


def _cached(cache: ResultsCache | None, path: Path) -> dict | None:
    if cache is None or not path.is_file():
        return None
    try:
        return cache.get(path)
    except OSError:  # unreadable file: analyze_one reports it
        return None


def _stored(cache: ResultsCache | None, path: Path, summary: dict, progress) -> ResultsCache | None:
    """Store a summary; the cache itself when that worked, else None after one line saying why."""
    if cache is None:
        return None
    try:
        cache.put(path, summary)
        return cache
    except CacheUnusable as err:
        say(str(err), progress)
        cache.close()
        return None


def _analyze(args: argparse.Namespace, names: RangeNames) -> int:
    why = unwritable_reason(args.out)
    if why is not None:
        say(f"analyze-nsys: error: --out {args.out}: {why}")
        return 2
    cache = None if args.no_cache else _open_cache(args.out / RESULTS_DB, names)
    tables = None if args.no_cache else args.out / TRACE_TABLES
    written = OutputLog(args.out)
    try:
        summaries, failures = analyze_many(args.traces, engine_from(args), cache, names, _input_cache(args),
                                           on_summary=written.json if "json" in args.format else None, tables=tables)
    finally:
        if cache is not None:
            cache.close()
    _print_structures(summaries, args.verbose)
    pages = write_outputs(summaries, failures, args.out, tuple(f for f in args.format if f != "json"),
                          args.results, written)
    if "html" in pages:
        print(printable(f"report: {pages['html']}"))
    return 1 if failures or written.failed else 0


def _print_structures(summaries: list[dict], verbose: bool) -> None:
    """One line per trace on stderr: the structure found and the names behind it (with
    ``verbose``, every step too)."""
    from analysis.report.structure_lines import describe, describe_steps  # the report's drawing is not loaded

    for summary in summaries:
        record = summary.get("structure")
        if not record:
            continue
        say(f"{summary['trace']}: {describe(record, summary.get('measured_passes_by_phase'))}")
        if verbose:
            for line in describe_steps(record):
                say(line)


def _open_cache(db_path: Path, names: RangeNames) -> ResultsCache | None:
    """The results cache, or None after one line saying why it cannot be used; a line also says
    when a damaged or foreign database was set aside."""
    try:
        cache = ResultsCache(db_path, names)
    except CacheUnusable as err:
        say(str(err))
        return None
    for notice in cache.notices:
        say(notice)
    return cache


def _input_cache(args: argparse.Namespace) -> InputCache:
    """How this run copies compressed and report inputs, from its options."""
    bound = args.max_decompressed_mib
    return InputCache(keep=not args.no_cache, max_bytes=bound * MIB if bound else None,
                      export_timeout_s=float(args.export_timeout))


class OutputLog:
    """Writes output files safely into ``out`` (:mod:`analysis.core.safe_write`): a file that cannot be
    written costs one line on stderr and sets ``failed``; the others are still written."""

    def __init__(self, out: Path):
        self.out = out
        self.failed = False

    def write(self, name: str, content: str) -> None:
        """Write ``out/name``."""
        self.attempt(name, lambda path: write_file(path, content, root=self.out))

    def json(self, summary: dict) -> None:
        """Write ``out/<trace stem>.json``."""
        self.write(f"{trace_stem(summary['trace'])}.json", json.dumps(summary, indent=1))

    def attempt(self, name: str, make: Callable[[Path], Made]) -> Made | None:
        """``make(out/name)``; an OSError costs one line (and None) instead of the rest of the outputs."""
        try:
            return make(self.out / name)
        except OSError as err:
            self.failed = True
            say(f"{self.out / name}: not written ({err.strerror or err})")
            return None


def write_outputs(summaries: list[dict], failures: list[dict], out: Path, formats: tuple[str, ...],
                  results_dir: Path | None, log: OutputLog | None = None) -> dict[str, Path]:
    """Write each requested format into ``out`` through ``log``; the questions are answered
    across the traces and the results files in ``results_dir`` for the pages, and the report
    package is imported only when pages are asked for. Returns page format (``html``, ``md``) ->
    its index file, for the pages written."""
    log = log or OutputLog(out)
    if "json" in formats:
        for summary in summaries:
            log.json(summary)
    if "csv" in formats:
        from analysis.trace.summary import flat_tables

        for name, table in flat_tables(summaries).items():
            log.write(f"{name}.csv", table.to_csv(index=False))
    pages = tuple(f for f in formats if f in ("html", "md"))
    if not pages:
        return {}
    from analysis.app.answers import report_data
    from analysis.report import render_report

    data = report_data(summaries, results_dir)
    for problem in data.input_problems:
        say(problem)
    written = log.attempt("index.html" if "html" in pages else "index.md",
                          lambda _: render_report(data, failures, out, pages))
    return written or {}


def _diff(args: argparse.Namespace, names: RangeNames) -> int:
    from analysis.compare.diff import diff_summaries
    from analysis.questions.records import DiffRecord

    why = unwritable_reason(args.out)
    if why is not None:
        say(f"analyze-nsys diff: error: --out {args.out}: {why}")
        return 2
    cache = _open_cache(args.out / RESULTS_DB, names)
    try:
        summaries, failures = analyze_many([args.a, args.b], Engine(jobs=2), cache=cache, names=names,
                                           tables=args.out / TRACE_TABLES)
    finally:
        if cache is not None:
            cache.close()
    if failures:
        return 1
    summary_a, summary_b = _diff_pair(summaries, args.a, args.b)
    record = DiffRecord(summary_a, summary_b, "", diff_summaries(summary_a, summary_b))
    log = OutputLog(args.out)
    log.write("diff.json", json.dumps(record.diff, indent=1))
    from analysis.report import render_diff

    page = log.attempt("diff-*.html", lambda _: render_diff(record, args.out))
    if page is not None:
        print(f"diff: {page} (and {args.out / 'diff.json'})")
    return 1 if log.failed else 0


def _diff_pair(summaries: list[dict], a: Path, b: Path) -> tuple[dict, dict]:
    """The summaries of A and B; where both have one content (analyzed once, said by a line) B's is
    A's under B's name, so the diff says every difference is zero."""
    if len(summaries) == 2:
        return summaries[0], summaries[1]
    if a.resolve() == b.resolve():
        print(f"analyze-nsys diff: {a} is both A and B; every difference is zero", file=sys.stderr)
    return summaries[0], {**summaries[0], "trace": b.name}


if __name__ == "__main__":
    sys.exit(main())
