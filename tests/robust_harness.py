"""Run one crafted case through the command line, as a user would, and judge what happened.

A case builds its inputs in a sandbox folder and names the command to run; the harness runs it
in a child process and records what matters to a user: Python tracebacks, ``unexpected ...``
lines, inputs whose bytes changed, files written or changed outside the folders the command
may write (its ``--out``/``--results-dir`` and the decompression cache), a command that hung,
and the case's own checks of the outputs.

    python -m tests.robust_harness            # the table of every group, on this checkout
    python -m tests.robust_harness 4 9        # some groups only
"""
from __future__ import annotations

import hashlib
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MEMORY_LIMIT_BYTES = 6 << 30  # a crafted input must not take the machine down with it


@dataclass
class Invocation:
    """What a case runs: ``argv`` after ``python -m``, the files that must not change, and the
    folders it may write (``may_write``, relative folders of the sandbox)."""

    argv: list[str]
    inputs: list[Path] = field(default_factory=list)
    may_write: list[Path] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 120.0
    interrupt_after_s: float | None = None  # send SIGINT (Ctrl-C) after this long
    interrupt_once: Path | None = None  # ... counted from when this file appears
    kill_after_s: float | None = None  # send SIGKILL after this long, then run ``then``
    then: list[str] | None = None  # a second command run after the first (rerun)
    concurrent: int = 1  # copies of the command started at once
    file_size_limit: int | None = None  # RLIMIT_FSIZE: a full disk
    memory_limit: int = MEMORY_LIMIT_BYTES  # RLIMIT_AS of the command
    check: Callable[[Path, Outcome], list[str]] | None = None  # the case's own checks


@dataclass
class Outcome:
    """What one case did."""

    returncodes: list[int]
    output: str
    tracebacks: int = 0
    unexpected: int = 0
    modified: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    hung: bool = False
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.tracebacks or self.unexpected or self.modified or self.outside or self.hung
                    or self.problems)

    def describe(self) -> str:
        """One paragraph saying what went wrong (for a failing test)."""
        return (f"rc={self.returncodes} tracebacks={self.tracebacks} unexpected={self.unexpected} "
                f"modified={self.modified} outside={self.outside} hung={self.hung} problems={self.problems}"
                f"\n--- output ---\n{self.output[-3000:]}")


def _digest(path: Path) -> str:
    if not path.is_file():
        return "absent"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _snapshot(root: Path, skip: list[Path]) -> dict[str, tuple]:
    """(size, mtime, content hash) of every file under ``root`` outside the ``skip`` folders."""
    seen = {}
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = [d for d in dirs if not any((here / d).resolve() == s.resolve() for s in skip)]
        for name in files:
            path = here / name
            if path.is_symlink() or not path.is_file():
                continue
            info = path.stat()
            seen[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns, _digest(path))
    return seen


def _limits(call: Invocation, full_disk: bool):
    file_size = call.file_size_limit if full_disk else None

    def apply() -> None:
        # Ctrl-C as a terminal delivers it: a test run started in the background by a non-interactive
        # shell inherits SIGINT ignored, and Python would then never raise KeyboardInterrupt.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_AS, (call.memory_limit, call.memory_limit))
        if file_size is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    return apply


def _start(argv: list[str], env: dict, call: Invocation, full_disk: bool = True) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", *argv], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, preexec_fn=_limits(call, full_disk))


def _finish(process: subprocess.Popen, deadline: float) -> tuple[int, str, bool]:
    """Wait for ``process`` until ``deadline``: (returncode, output, hung)."""
    hung = False
    try:
        output, _ = process.communicate(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        hung = True
        process.kill()
        output, _ = process.communicate()
    return process.returncode, output or "", hung


def run_case(build: Callable[[Path], Invocation], sandbox: Path) -> Outcome:
    """Build a case's inputs in ``sandbox`` and run its command; judge the result."""
    sandbox.mkdir(parents=True, exist_ok=True)
    call = build(sandbox)
    env = {**os.environ, "CS336_PROFILE_CACHE": str(sandbox / "cache"), "MPLCONFIGDIR": str(sandbox / "mpl"),
           "HOME": str(sandbox / "home"), "PYTHONPATH": str(REPO), **call.env}
    allowed = [sandbox / "cache", sandbox / "mpl", sandbox / "home"] + [sandbox / p for p in call.may_write]
    inputs = {str(p): _digest(p) for p in call.inputs}
    before = _snapshot(sandbox, allowed)
    started = time.monotonic()
    processes = [_start(call.argv, env, call) for _ in range(call.concurrent)]
    pause = call.interrupt_after_s or call.kill_after_s
    while call.interrupt_once is not None and not call.interrupt_once.exists() \
            and time.monotonic() < started + call.timeout_s and processes[0].poll() is None:
        time.sleep(0.2)
    if pause:
        time.sleep(pause)
        for process in processes:
            process.send_signal(signal.SIGINT if call.interrupt_after_s else signal.SIGKILL)
    results = [_finish(p, started + call.timeout_s) for p in processes]
    if call.then:
        results.append(_finish(_start(call.then, env, call, full_disk=False), time.monotonic() + call.timeout_s))
    output = "\n".join(r[1] for r in results)
    outcome = Outcome(returncodes=[r[0] for r in results], output=output,
                      tracebacks=output.count("Traceback (most recent call last)"),
                      unexpected=sum("unexpected" in line.lower() for line in output.splitlines()),
                      hung=any(r[2] for r in results), seconds=time.monotonic() - started)
    outcome.modified = [p for p, digest in inputs.items() if _digest(Path(p)) != digest]
    after = _snapshot(sandbox, allowed)
    outcome.outside = sorted(p for p, state in after.items() if before.get(p) != state)
    if call.check is not None and not outcome.hung:
        outcome.problems = call.check(sandbox, outcome)
    return outcome


def main(argv: list[str]) -> int:
    """Print, per group, how many cases end in each kind of fault on this checkout."""
    from tests.robust_cases import all_cases

    cases = all_cases()
    groups = {int(a) for a in argv} or {case.group for case in cases}
    print("| group | cases | tracebacks | unexpected | inputs modified | writes outside | hung | other problems |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for group in sorted(groups):
        totals = [0] * 7
        for case in (c for c in cases if c.group == group):
            with tempfile.TemporaryDirectory(prefix=f"robust{group}-") as folder:
                outcome = run_case(case.build, Path(folder))
            counts = [1, outcome.tracebacks, outcome.unexpected, len(outcome.modified), len(outcome.outside),
                      int(outcome.hung), len(outcome.problems)]
            totals = [t + c for t, c in zip(totals, counts)]
            status = "clean" if outcome.clean else outcome.describe().splitlines()[0]
            print(f"  {case.name}: {status} ({outcome.seconds:.1f} s)", file=sys.stderr)
        print(f"| {group} | " + " | ".join(map(str, totals)) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
