"""`python -m cs336_profile.launch`: torchrun's launch of a data-parallel run, ending in one line.

    python -m cs336_profile.launch --nproc-per-node 2 --parallel ddp-overlap --sizes medium

is ``torchrun --standalone --nproc_per_node=2 -m cs336_profile.run --parallel ...`` in this
process, with torchrun's endings put in a line each: Ctrl-C stops every rank (each keeps what it
wrote) and exits 130 instead of torchrun's page-long traceback and exit 1; a rank that failed
is named, exit 1. Every option after ``--nproc-per-node`` goes to the runner.
"""
from __future__ import annotations

import argparse
import sys

from cs336_profile.preflight import positive_int


def build_parser() -> argparse.ArgumentParser:
    """The launcher's own options; the rest of the command line goes to the runner."""
    parser = argparse.ArgumentParser(prog="python -m cs336_profile.launch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nproc-per-node", type=positive_int, required=True, metavar="N",
                        help="ranks (processes) on this host")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Launch the ranks; returns the exit status."""
    args, runner_args = build_parser().parse_known_args(sys.argv[1:] if argv is None else argv)
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import main as torchrun

    try:
        torchrun(["--standalone", f"--nproc_per_node={args.nproc_per_node}", "-m", "cs336_profile.run",
                  *runner_args])
    except SignalException as stop:
        print(f"interrupted (signal {stop.sigval}): every rank was stopped; what rank 0 wrote so far is in its "
              "results folder", file=sys.stderr)
        return 128 + int(stop.sigval)
    except ChildFailedError as failed:
        rank, failure = failed.get_first_failure()
        print(f"rank {rank} ended with exit status {failure.exitcode}; its own lines are above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
