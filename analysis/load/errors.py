"""Errors for inputs the analyzer cannot use.

Every error's ``str()`` is one line a user can act on; the CLI prints it after the file name and
goes on with the next trace. Nothing here ever raises for a trace that merely lacks optional data
(no NVTX, no GPU info): those become notes on the analysis instead.
"""
from __future__ import annotations


class TraceError(Exception):
    """A file that cannot be analyzed; the message says why in one line."""


class NotATraceFile(TraceError):
    """The path is missing, a directory, or unreadable."""


class NotSQLite(TraceError):
    """The file is not an SQLite database."""


class TruncatedTrace(TraceError):
    """An SQLite file cut short or damaged."""


class NotNsysExport(TraceError):
    """An SQLite database written by some other program."""


class NsysReportGiven(TraceError):
    """An ``.nsys-rep``/``.qdrep`` report where an SQLite export was expected."""


class TraceBeingWritten(TraceError):
    """An export that nsys (or another writer) has not finished."""


class UnsupportedSchema(TraceError):
    """An export whose tables lack columns the analysis needs."""


class NoKernels(TraceError):
    """An export without CUDA kernel records."""


class NoLaunchCalls(TraceError):
    """An export with NVTX ranges whose kernels have no launch call to tie them to a range."""
