"""The rank a launcher gave the profiled process, from the environment nsys recorded.

When each rank of a job runs under its own nsys (``torchrun --no-python nsys profile … python
train.py``, ``srun nsys profile …``, ``mpirun nsys profile …``), each export holds one rank, and
the environment nsys itself started in (``TARGET_INFO_SYSTEM_ENV``, ``DeviceEnvironment``) holds
the launcher's variables for that rank: torchrun's ``RANK`` and ``WORLD_SIZE``, Open MPI's, a PMI
launcher's or Slurm's. Only those variables are read; the rest of the environment (which can hold
credentials) is never kept.
"""
from __future__ import annotations

import sqlite3

from analysis.load.export_map import SYSTEM_ENVIRONMENT

# The variable pairs (rank, world size) launchers set, first found wins: torchrun's first, as
# torchrun under Slurm or MPI sets its own.
LAUNCHER_VARIABLES = (("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                      ("PMI_RANK", "PMI_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"))
# The row of TARGET_INFO_SYSTEM_ENV that holds the environment, as ``KEY=VALUE`` items joined by ``;``.
ENVIRONMENT_ROW = "DeviceEnvironment"


def read_launcher_rank(conn: sqlite3.Connection, schema: dict) -> dict:
    """``{"rank", "world_size", "variables"}`` (``variables``: the pair's names, ``RANK/WORLD_SIZE``)
    from the first launcher's pair of :data:`LAUNCHER_VARIABLES` in the environment nsys ran in,
    when both are whole numbers with ``0 <= rank < world_size``; else ``{}`` (no such table, row or
    pair: nsys started the launcher, or no launcher ran)."""
    table, name, value = (SYSTEM_ENVIRONMENT.in_export(schema), SYSTEM_ENVIRONMENT.column(schema, "name"),
                          SYSTEM_ENVIRONMENT.column(schema, "value"))
    if table is None or name is None or value is None:
        return {}
    wanted = {variable for pair in LAUNCHER_VARIABLES for variable in pair}
    found: dict[str, str] = {}
    for (environment,) in conn.execute(f'SELECT "{value}" FROM {table} WHERE "{name}" = ?', (ENVIRONMENT_ROW,)):
        for item in str(environment).split(";"):
            key, _, setting = item.partition("=")
            if key in wanted:
                found.setdefault(key, setting.strip())
    for rank_variable, size_variable in LAUNCHER_VARIABLES:
        rank, size = found.get(rank_variable, ""), found.get(size_variable, "")
        if rank.isdigit() and size.isdigit() and int(rank) < int(size):
            return {"rank": int(rank), "world_size": int(size), "variables": f"{rank_variable}/{size_variable}"}
    return {}
