"""Console tables for the runner and the sweep (rich), with cell formatters for results rows."""
from __future__ import annotations

import sys
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from cs336_profile.contract import STATUS_OK

Cell = Callable[[dict], str]


def print_table(title: str, rows: list[dict], columns: dict[str, Cell]) -> None:
    """Print rows as a table; `columns` maps each header to the function that formats its cell."""
    table = Table(title=title)
    for header in columns:
        table.add_column(header, justify="right")
    for row in rows:
        table.add_row(*(format_cell(row) for format_cell in columns.values()))
    # Logs and pipes get the full width instead of rich's 80-column default.
    Console(width=None if sys.stdout.isatty() else 220).print(table)


def _not_ok(row: dict) -> str | None:
    """The status to show instead of a number (e.g. "OOM"), None for completed rows."""
    status = row.get("status")
    return status if status not in (None, STATUS_OK) else None


def mean_std(prefix: str) -> Cell:
    """`mean ± std` of `<prefix>_mean` / `<prefix>_std`; the status for OOM or failed rows."""
    def cell(row: dict) -> str:
        mean, std = row.get(f"{prefix}_mean"), row.get(f"{prefix}_std")
        if (status := _not_ok(row)) or mean is None:
            return status or ""
        return f"{mean:.2f}" + (f" ± {std:.2f}" if std is not None else "")
    return cell


def number(key: str, scale: float = 1.0, digits: int = 2, measured: bool = True) -> Cell:
    """`row[key] / scale` with `digits` decimals; for a `measured` value, the status of OOM or failed rows."""
    def cell(row: dict) -> str:
        value, status = row.get(key), _not_ok(row) if measured else None
        if status or value is None:
            return status or ""
        return f"{value / scale:,.{digits}f}"
    return cell


def plain(key: str) -> Cell:
    """The value as text."""
    return lambda row: "" if row.get(key) is None else str(row[key])
