"""Where the analysis of a trace is: each long stage announced as it starts (:func:`stage`), for a
caller that shows it (:func:`listening`). The command line's progress bar names the stage of the
trace its own process analyzes: a trace of tens of millions of kernels takes minutes. Without a
listener an announcement does nothing."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

_listeners: list[Callable[[str], None]] = []


def stage(what: str) -> None:
    """Announce that the analysis now does ``what`` (the trace's name and a few words, e.g.
    ``x.sqlite: reading kernels``)."""
    for listener in _listeners:
        listener(what)


@contextmanager
def listening(listener: Callable[[str], None]) -> Iterator[None]:
    """``listener`` hears every stage announced in this process while the block runs."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)
