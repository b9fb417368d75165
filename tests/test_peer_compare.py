"""The peer benchmark's harness runs without the peer: the floor, a cold analyze-nsys and the same
command repeated (served from its results) are timed, the peer's columns stay empty."""
from __future__ import annotations

import pytest

from benchmarks import peer_compare


def test_without_the_peer_it_times_the_floor_and_the_analyzer(fixture_trace, capsys):
    trace = fixture_trace("small_ctx256_forward_fp32.sqlite")
    peer_compare.main([str(trace), "--runs", "1", "--modes", "floor", "ours cold", "ours again"])
    rows = capsys.readouterr().out.splitlines()
    wall = next(row for row in rows if row.startswith(trace.name)).split()
    kernels = peer_compare.kernel_count(trace)
    assert wall[1:3] == [f"{kernels:,}", "wall"]
    floor, peer_cold, peer_warm, ours_cold, ours_first, ours_warm, ours_renamed, ours_again = wall[4:]
    assert float(floor) > 0 and float(ours_cold) > 0 and float(ours_again) > 0
    assert [peer_cold, peer_warm, ours_first, ours_warm, ours_renamed] == ["-"] * 5


def test_a_peer_without_its_sqlite_extension_is_refused(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'no duckdb here' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(SystemExit, match="cannot load its sqlite extension"):
        peer_compare.check_peer(str(fake))
