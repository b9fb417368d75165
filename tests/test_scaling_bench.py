"""The scaling benchmark's harness: a compressed source is decompressed once and reused, a size
measured without its read floor shows none, and the sizes the targets speak of get their lines."""
from __future__ import annotations

import lzma
from pathlib import Path

from benchmarks import scaling
from benchmarks.analysis_speed import Measurement, format_table

MIB = 1 << 20


def test_a_compressed_source_is_decompressed_once(tmp_path, monkeypatch):
    monkeypatch.setattr(scaling, "BENCH_DIR", tmp_path / "bench")
    packed = tmp_path / "run.sqlite.xz"
    packed.write_bytes(lzma.compress(b"an export"))
    export = scaling.source_export(packed)
    assert export == tmp_path / "bench" / "run.sqlite" and export.read_bytes() == b"an export"
    made = export.stat().st_mtime_ns
    assert scaling.source_export(packed) == export and export.stat().st_mtime_ns == made
    plain = tmp_path / "plain.sqlite"
    assert scaling.source_export(plain) == plain


def measured(kernels: int, peak_mib: float, floor_s: float | None = 1.0) -> Measurement:
    return Measurement(Path(f"t_{kernels}.sqlite"), kernels, floor_s, analysis_s=2.0,
                       peak_rss_bytes=int(peak_mib * MIB), baseline_rss_bytes=25 * MIB)


def test_a_size_without_its_floor_shows_none():
    row = format_table([measured(100_030_052, 7_527, floor_s=None)]).splitlines()[-1].split()
    assert row[1:6] == ["100,030,052", "-", "2.00", "-", "7527"]


def test_the_twenty_and_hundred_million_sizes_have_their_targets():
    lines = scaling.target_lines([measured(20_021_822, 1_218), measured(100_030_052, 7_527, floor_s=None)])
    assert "20M kernels: 1,218 MiB (target < 1 GiB): MISSED" in lines
    assert any(line.startswith("100M kernels: analyzed in 2 s, 7.4 GiB of this machine's ") for line in lines)
    assert "20M kernels: 963 MiB (target < 1 GiB): ok" in scaling.target_lines([measured(20_007_574, 963)])
