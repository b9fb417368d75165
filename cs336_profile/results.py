"""Results files: `<results_dir>/<name>.json` and `<name>.csv` holding the same rows.

JSON layout (docs/architecture.md): `{"experiment", "created" (ISO 8601), "environment",
"config", "rows"}`. A row that ran out of memory has `"status": "OOM"` and null measurements.
Non-finite floats (a standard deviation of one sample) are written as null.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path


def _finite_or_none(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def unwritable_reason(folder: Path) -> str | None:
    """Why files cannot be written in ``folder`` (created when absent), or None when they can; a
    name the system refuses (too long, say) or a dangling link on the way is such a reason, not an error."""
    try:
        dangling = next((p for p in (folder, *folder.parents) if p.is_symlink() and not p.exists()), None)
        if dangling is not None:
            return f"{dangling} is a symbolic link to {os.readlink(dangling)}, which does not exist"
        if folder.exists() and not folder.is_dir():
            return "is a file, not a folder"
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-"):
            pass
    except OSError as err:
        return err.strerror or str(err)
    return None


def write_results(results_dir: str | Path, experiment: str, rows: list[dict], *, config: dict,
                  environment: dict, name: str | None = None) -> Path:
    """Write `<name>.json` and `<name>.csv` (name defaults to the experiment); return the JSON path."""
    import pandas as pd

    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    name = name or experiment
    if Path(name).name != name or name in ("", ".", ".."):
        raise ValueError(f"results name {name!r} is not a plain file name: the files would leave {results_dir}")
    clean_rows = [{key: _finite_or_none(value) for key, value in row.items()} for row in rows]
    document = {
        "experiment": experiment,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "environment": environment,
        "config": config,
        "rows": clean_rows,
    }
    json_path = results_dir / f"{name}.json"
    json_path.write_text(json.dumps(document, indent=1) + "\n")
    pd.DataFrame(clean_rows).to_csv(results_dir / f"{name}.csv", index=False)
    return json_path


def read_results(json_path: str | Path) -> dict:
    """Load a results JSON document."""
    return json.loads(Path(json_path).read_text())
