"""The loader on real exports: counts, joins, names, versions, and inputs left untouched."""
from __future__ import annotations

import csv
import hashlib
import lzma
import os
import shutil

import pytest

from analysis.load import file_sha256, input_cache, load_trace
from analysis.load.errors import TraceError

TRAIN = "small_ctx128_train_fp32.sqlite"


def test_fixture_tables_and_metadata(fixture_trace):
    trace = load_trace(fixture_trace(TRAIN))
    assert len(trace.kernels) == 16_759
    assert (trace.kernels["launch_start_ns"] >= 0).all()          # every kernel has its launch
    assert (trace.kernels["launch_start_ns"] <= trace.kernels["start_ns"]).all()
    assert len(trace.memops) == 356 + 180
    assert len(trace.ranges) == 205 and len(trace.marks) == 0
    assert trace.nsys_version == "2025.3.2.0" and trace.schema_version == "3.20.3"
    assert trace.gpu_name == "NVIDIA H200"
    assert trace.gpus.loc[0, "sm_count"] == 132
    assert trace.kernels["start_ns"].is_monotonic_increasing
    assert trace.ranges["start_ns"].is_monotonic_increasing


def test_kernel_totals_match_nsys_cuda_gpu_kern_sum(fixture_trace):
    """Summed kernel time per demangled name equals nsys's own report to the nanosecond."""
    trace = load_trace(fixture_trace(TRAIN))
    ours = trace.kernels.groupby("demangled_name", observed=True)["dur_ns"].agg(["sum", "size"])
    with open(fixture_trace("small_ctx128_train_fp32.cuda_gpu_kern_sum.csv")) as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(ours)
    for row in rows:
        assert ours.loc[row["Name"], "sum"] == int(row["Total Time (ns)"]), row["Name"]
        assert ours.loc[row["Name"], "size"] == int(row["Instances"]), row["Name"]


def test_nesting_of_push_pop_ranges(fixture_trace):
    ranges = load_trace(fixture_trace(TRAIN)).ranges
    by_id = ranges.set_index("range_id")
    softmax = ranges[ranges["name"] == "computing softmax"]
    assert (softmax["depth"] == 2).all()
    parents = by_id.loc[softmax["parent_id"], "name"]
    assert set(parents) == {"forward"}
    steps = ranges[ranges["name"].str.match(r"^(warmup|step)_\d+$")]
    assert (steps["depth"] == 0).all() and (steps["parent_id"] == -1).all()
    # held in 32 bits, as every trace's ids, threads and depths fit
    assert {str(ranges[column].dtype) for column in ("range_id", "tid", "end_tid", "depth", "parent_id")} == {"int32"}
    assert ranges["range_id"].tolist() == list(range(len(ranges)))


def test_registered_strings_and_domains(fixture_trace):
    """Domain-create rows name the domain of later ranges; they are not ranges themselves."""
    ranges = load_trace(fixture_trace(TRAIN)).ranges
    assert "CCCL" not in set(ranges["name"])
    cub = ranges[ranges["domain"] == "CCCL"]        # CUB's own ranges, one per backward pass
    assert cub["name"].tolist() == ["cub::DeviceRadixSort"] * 5
    assert set(ranges.loc[ranges["domain"] == "", "name"]) >= {"forward", "backward", "step_0"}


def test_xz_compressed_export_loads_the_same(fixture_trace, tmp_path, monkeypatch):
    monkeypatch.setenv("CS336_PROFILE_CACHE", str(tmp_path / "cache"))
    source = fixture_trace("small_ctx256_forward_fp32.sqlite")
    packed = tmp_path / "trace.sqlite.xz"
    with open(source, "rb") as src, lzma.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    plain, compressed = load_trace(source), load_trace(packed)
    assert compressed.path == packed
    assert compressed.kernels.equals(plain.kernels)
    assert compressed.ranges.equals(plain.ranges)


@pytest.mark.parametrize("name", [
    "dlprof_pytorch_cnn_2022.sqlite", "extrap_ex-gpu_2021.sqlite",
    "extrap_profile1_2022win.sqlite", "h100_2gpu_1s.sqlite", "mfu_2gpu_after.sqlite",
    "mfu_2gpu_before.sqlite", "mock.sqlite",
])
def test_external_traces_load_and_stay_untouched(external_trace, name):
    path = external_trace(name)
    before = file_sha256(path)
    trace = load_trace(path)
    assert len(trace.kernels) > 0
    assert trace.kernels["start_ns"].is_monotonic_increasing
    assert file_sha256(path) == before


def test_old_schemas_give_gpu_and_version(external_trace):
    old = load_trace(external_trace("extrap_ex-gpu_2021.sqlite"))      # TARGET_INFO_CUDA_GPU
    assert old.nsys_version is None and old.gpu_name == "A100-PCIE-40GB"
    assert old.gpus["sm_count"].tolist() == [108, 108, 108, 108]
    windows = load_trace(external_trace("extrap_profile1_2022win.sqlite"))  # EXPORT_META_DATA
    assert windows.nsys_version == "2022.1.1.61"
    assert windows.gpu_name == "GeForce GTX 1060 with Max-Q Design"
    assert len(windows.ranges) == 76


def test_two_processes_keep_their_pids(external_trace):
    trace = load_trace(external_trace("h100_2gpu_1s.sqlite"))
    assert trace.kernels.groupby("pid")["device_id"].unique().map(list).to_dict() == \
        {111: [0], 112: [1]}
    assert trace.gpu_name is None                                  # no TARGET_INFO_GPU table
    assert any("no launch call" in note for note in trace.notes)   # trimmed to a 1 s window


def test_runtime_only_export_is_refused(external_trace):
    with pytest.raises(TraceError, match="no CUDA kernel records"):
        load_trace(external_trace("uvmtorch_runtime_only_2025.sqlite"))


def test_the_input_digest_is_computed_once_and_follows_a_replaced_file(tmp_path, monkeypatch):
    path, other = tmp_path / "a.bin", tmp_path / "b.bin"
    path.write_bytes(b"a" * 10)
    reads, read = [], input_cache._sha256
    monkeypatch.setattr(input_cache, "_sha256", lambda file: reads.append(file) or read(file))
    first = file_sha256(path)
    assert file_sha256(path) == first and len(reads) == 1
    other.write_bytes(b"b" * 10)  # same size, same modification time, another inode
    os.utime(other, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
    other.replace(path)
    assert file_sha256(path) == hashlib.sha256(b"b" * 10).hexdigest()
