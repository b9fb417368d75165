"""The nsys benchmark's harness runs without nsys: the read floors and analyze-nsys are timed, the
nsys column and the ratio stay empty, and the floor's numpy variant imports numpy."""
from __future__ import annotations

import subprocess

from benchmarks import nsys_compare
from benchmarks.analysis_speed import floor_command, trace_floor_queries


def test_without_nsys_it_times_the_floors_and_the_analyzer(fixture_trace, capsys):
    trace = fixture_trace("small_ctx256_forward_fp32.sqlite")
    nsys_compare.main([str(trace), "--runs", "1", "--nsys", "no-such-nsys"])
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "no-such-nsys is not on the PATH: analyze-nsys alone"
    nsys, read, numpy_read, ours, ratio = next(row for row in rows if row.startswith(trace.name)).split()[1:]
    assert nsys == ratio == "-"
    assert 0 < float(read) and 0 < float(numpy_read) and 0 < float(ours)


def test_the_floor_reads_every_query_and_imports_numpy_only_when_asked(fixture_trace):
    trace = fixture_trace("small_ctx256_forward_fp32.sqlite")
    queries = trace_floor_queries(trace)
    assert any("CUPTI_ACTIVITY_KIND_KERNEL" in query for query in queries)
    for numpy in (False, True):
        command = floor_command(trace, queries, numpy=numpy)
        command[2] += "\nimport sys; print(len(rows), 'numpy' in sys.modules)"
        assert subprocess.run(command, capture_output=True, text=True, check=True).stdout.split() == \
            [str(len(queries)), str(numpy)]
