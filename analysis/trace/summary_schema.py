"""The trace summary's layout as types, and the JSON schema generated from them.

:class:`TraceSummary` and the TypedDicts it holds are the summary's one definition: the report and
the results database read these keys, :func:`json_schema` turns them into the JSON schema that
docs/architecture.md shows (a test keeps the two equal and validates real summaries against it),
and :data:`SCHEMA_VERSION` with the schema's hash keys the results cache. The records of the
per-trace questions are declared with their figures (:mod:`analysis.trace.question_figures`).

A summary has two forms. The **stored** one (what :func:`analysis.trace.summary.summarize` returns
and the results cache keeps) holds figures only; the **shown** one (what ``analyze_trace``, the JSON
output and the report read) adds the sentences the writers make from those figures
(:func:`analysis.questions.sentences.with_sentences`). A record key annotated :data:`WRITTEN` is
in the shown form only (a sentence), one annotated :data:`STORED_ONLY` in the stored form only (a
figure that only a sentence reads); :func:`json_schema` gives either form.
"""
from __future__ import annotations

import hashlib
import json
import typing
from typing import Annotated, Any, TypedDict, Union

SCHEMA_VERSION = 8  # 1: before the summary carried its timeline and schema version; 2: before communication;
# 3: before (e) split the matmul ranges into their GEMMs and the rest and phase_shapes; 4: before the memory
# ledger and GPU metrics; 5: before the run's structure replaced the range names looked for; 6: before the
# structure counted the last steps a capture's end cut off; 7: before it named the phase ranges held by a phase

WRITTEN = "written"  # annotation of a key a writer adds to the shown summary (a sentence)
STORED_ONLY = "stored only"  # annotation of a figure the stored summary keeps for a writer alone
STORED, SHOWN = "stored", "shown"  # the two forms of a summary


class StepFiguresRecord(TypedDict):
    step: str
    pid: int
    measured: bool
    cut: bool  # the last step, cut off by the capture's end (not measured)
    cpu_span_ms: float
    kernels: int
    kernel_ms: float


class HeldNamesRecord(TypedDict):
    """Range names of a phase that lie inside a phase's ranges, whose figures hold them."""
    phase: str
    inside: str
    names: list[str]


class StructureRecord(TypedDict):
    """What :mod:`analysis.core.structure` found: the roles and the names behind them."""
    source: str  # ranges, pytorch, ranges+pytorch, kernels or none; +kernels when the kernels fill in phases
    step_ranges: bool  # steps are ranges of the trace (else made from the phases, or none)
    step_rule: str
    warmup_rule: str
    step_names: list[str]
    steps: int
    processes: int
    warmup_steps: int
    measured_steps: int
    cut_steps: int  # last steps cut off by the capture's end, neither warm-up nor measured
    phase_names: dict[str, list[str]]
    attention_names: dict[str, list[str]]
    fused_attention: bool
    block_family: str | None
    inference_passes: int
    inference_names: list[str]
    held_names: list[HeldNamesRecord]
    unused_names: list[str]
    step_table: list[StepFiguresRecord]


class KernelRecord(TypedDict):
    kernel: str
    category: str
    tensor_core: bool
    calls_per_pass: float
    ms_per_pass: float
    share: float


class PhaseRecord(TypedDict):
    passes: int
    kernels_per_pass: float
    kernel_ms_per_pass: float
    memop_ms_per_pass: float
    gpu_span_ms_per_pass: float
    cpu_span_ms_per_pass: float
    busy_ms_per_pass: float
    idle_ms_per_pass: float
    python_ms_per_pass: float | None
    by_category_ms_per_pass: dict[str, float]
    top_kernels: list[KernelRecord]
    model_flops_per_pass: float | None
    achieved_tflop_per_s: float | None
    mfu: float | None
    idle_share: float | None


class OverallRecord(TypedDict):
    scope: str
    passes: int
    kernels_per_pass: float
    kernel_ms_per_pass: float
    distinct_kernels: int
    tensor_core_share: float | None
    by_category_ms_per_pass: dict[str, float]
    top_kernels: list[KernelRecord]


class DeviceRecord(TypedDict):
    pid: int
    device_id: int
    kernels_per_pass: float
    kernel_ms_per_pass: float
    busy_ms_per_pass: float
    by_category_ms_per_pass: dict[str, float]
    top_kernel: KernelRecord | None


class EfficiencyRecord(TypedDict):
    precision: str | None
    peak_gpu: str | None
    peak_tflop_per_s: float | None
    peak_source: str | None
    precision_source: str
    flops_source: str | None  # run config, matmul op shapes, or null (no FLOPs)
    gemm_precision_mix: dict[str, float]
    answer: Annotated[str, WRITTEN]


class TimelineBars(TypedDict):
    stream: list[int]
    category: list[str]
    start_ms: list[float]
    dur_ms: list[float]


class TimelinePhases(TypedDict):
    phase: list[str]
    start_ms: list[float]
    dur_ms: list[float]


class TimelineRecord(TypedDict):
    title: str
    duration_ms: float
    bars: TimelineBars
    phases: TimelinePhases


class MemoryLedgerOp(TypedDict):
    op: str
    bytes: float  # per block
    share: float  # of the bytes saved for backward


class MemoryLedgerBlock(TypedDict):
    block: int
    forward_allocated_bytes: int
    saved_for_backward_bytes: int
    backward_change_bytes: int | None
    gradient_bytes: int | None


class MemoryLedgerSpan(TypedDict):
    block: int
    phase: str
    start_ms: float
    dur_ms: float


class MemoryLedgerTimeline(TypedDict):
    time_ms: list[float]
    allocated_bytes: list[int]
    blocks: list[MemoryLedgerSpan]


class MemoryLedgerRecord(TypedDict):
    available: bool
    step: str | None
    blocks_found: int
    baseline_bytes: int | None
    saved_for_backward_bytes_per_block: float | None
    gradient_bytes_per_block: float | None
    expected_gradient_bytes_per_block: int | None
    params_per_block: int | None
    top_ops: list[MemoryLedgerOp]
    blocks: list[MemoryLedgerBlock]
    timeline: MemoryLedgerTimeline | None
    memory_events: Annotated[int, STORED_ONLY]  # tensor-level memory events read
    blocks_problem: Annotated[str | None, STORED_ONLY]  # why the events cannot be placed in blocks
    answer: Annotated[str, WRITTEN]


class GpuMetricsRecord(TypedDict):
    available: bool
    samples_per_s: float | None
    phases: dict[str, dict[str, float]]  # phase -> sm_active_pct, tensor_active_pct, dram_*_pct: mean %


class ShapeGroupRecord(TypedDict):
    group: str
    passes: int
    cpu_span_ms_per_pass: float
    kernel_ms_per_pass: float
    first_cpu_span_ms: float


# The communication section (analysis.trace.multi_gpu): ranks, collectives, FSDP blocks, skew and the
# per-rank timeline.
class RankTimelineBars(TypedDict):
    rank: list[int]
    stream: list[int]
    kind: list[str]
    start_ms: list[float]
    dur_ms: list[float]


class RankTimelinePhases(TypedDict):
    rank: list[int]
    phase: list[str]
    start_ms: list[float]
    dur_ms: list[float]


class RankTimelineRecord(TypedDict):
    title: str
    duration_ms: float
    bars: RankTimelineBars
    phases: RankTimelinePhases


class RankPhaseRecord(TypedDict):
    passes: int
    kernels_per_pass: float
    kernel_ms_per_pass: float
    gpu_span_ms_per_pass: float
    gpu_span_ms_spread: float
    communication_ms_per_pass: float
    exposed_communication_ms_per_pass: float
    overlapped_communication_ms_per_pass: float


class RankRecord(TypedDict):
    pid: int
    device_id: int
    rank: int
    rank_source: str
    passes: int
    phases: dict[str, RankPhaseRecord]


class CollectiveRecord(TypedDict):
    pid: int
    device_id: int
    rank: int
    collective: str
    calls_per_pass: float
    ms_per_pass: float
    mean_call_ms: float
    exposed_ms_per_pass: float
    bytes_per_call: float | None
    bus_bandwidth_gb_per_s: float | None


class FsdpBlockRecord(TypedDict):
    pid: int
    device_id: int
    rank: int
    block: int
    passes: int
    allgather_ms: float
    lead_ms: float
    min_lead_ms: float
    wait_ms: float
    late_passes: int


class SkewStepRecord(TypedDict):
    step: str
    ranks: int
    start_spread_ms: float
    end_spread_ms: float
    duration_spread_ms: float
    phase_duration_spread_ms: dict[str, float]


class SkewRecord(TypedDict):
    steps: list[SkewStepRecord]
    max_start_spread_ms: float | None
    max_end_spread_ms: float | None


class CommunicationRecord(TypedDict):
    """What :func:`analysis.trace.multi_gpu.summary.communication_summary` returns."""

    world_size: int
    world_size_source: str
    ranks: list[RankRecord]
    collectives: list[CollectiveRecord]
    fsdp_blocks: list[FsdpBlockRecord]
    skew: SkewRecord
    timeline: RankTimelineRecord | None


class TraceSummary(TypedDict):
    schema_version: int
    trace: str
    trace_sha256: str
    gpu: str | None
    nsys_version: str | None
    analyzer_version: str
    notes: list[str]
    cuda_graph_launches: int
    config: dict[str, Any] | None
    config_source: str | None
    python_ms_per_pass: dict[str, float]
    python_ms_source: str | None
    structure: StructureRecord
    has_steps: bool
    measured_passes: int
    measured_passes_by_phase: dict[str, int]
    phases: dict[str, PhaseRecord]
    phase_shapes: dict[str, list[ShapeGroupRecord]]  # phases whose ranges run different shapes
    overall: OverallRecord
    devices: list[DeviceRecord]
    efficiency: EfficiencyRecord
    questions: dict[str, Any]  # replaced by one property per per-trace question in the schema
    timeline: TimelineRecord | None
    communication: CommunicationRecord
    memory_ledger: MemoryLedgerRecord
    gpu_metrics: GpuMetricsRecord


JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def type_schema(kind, form: str = SHOWN) -> dict:
    """The JSON schema of one annotation in a summary of ``form`` (:data:`STORED` or
    :data:`SHOWN`): TypedDicts, ``dict[str, X]``, ``list[X]``, ``X | None``, ``Any`` and the
    scalar types."""
    if kind is Any:
        return {}
    if kind in JSON_TYPES:
        return {"type": JSON_TYPES[kind]}
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is Union or (origin is not None and origin.__name__ == "UnionType"):
        options = [type_schema(arg, form) for arg in args if arg is not type(None)]
        (inner,) = options
        return {"anyOf": [inner, {"type": "null"}]} if type(None) in args else inner
    if origin is list:
        return {"type": "array", "items": type_schema(args[0], form)}
    if origin is dict:
        return {"type": "object", "additionalProperties": type_schema(args[1], form)}
    if typing.is_typeddict(kind):
        hints = record_keys(kind, form)
        return {"type": "object", "properties": {name: type_schema(hint, form) for name, hint in hints.items()},
                "required": sorted(hints), "additionalProperties": False}
    raise TypeError(f"no JSON schema for {kind!r}")


def record_keys(record: type, form: str = SHOWN) -> dict[str, Any]:
    """The keys of a record TypedDict in a summary of ``form``, in order, with their types."""
    left_out = WRITTEN if form == STORED else STORED_ONLY
    found = {}
    for name, hint in typing.get_type_hints(record, include_extras=True).items():
        if typing.get_origin(hint) is Annotated:
            if left_out in hint.__metadata__:
                continue
            hint = hint.__origin__
        found[name] = hint
    return found


def json_schema(question_records: dict[str, type], form: str = SHOWN) -> dict:
    """The JSON schema of a summary of ``form``; ``question_records``: summary key -> record
    TypedDict of each per-trace question (its ``questions`` section)."""
    schema = type_schema(TraceSummary, form)
    questions = {key: type_schema(record, form) for key, record in question_records.items()}
    schema["properties"]["questions"] = {"type": "object", "properties": questions, "required": sorted(questions),
                                         "additionalProperties": False}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "TraceSummary",
            "version": SCHEMA_VERSION, **schema}


def schema_hash(schema: dict) -> str:
    """sha256 of the schema's canonical JSON."""
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()


def problems(value, schema: dict, where: str = "$") -> list[str]:
    """Where ``value`` breaks ``schema`` (the subset :func:`type_schema` writes), one line each."""
    if "anyOf" in schema:
        if any(not problems(value, option, where) for option in schema["anyOf"]):
            return []
        return [f"{where}: {value!r:.60} matches none of {[o.get('type') for o in schema['anyOf']]}"]
    kind = schema.get("type")
    checks = {"string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
              "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "null": lambda v: v is None, "array": lambda v: isinstance(v, list),
              "object": lambda v: isinstance(v, dict)}
    if kind is None:
        return []
    if not checks[kind](value):
        return [f"{where}: expected {kind}, got {type(value).__name__}"]
    found = []
    if kind == "array":
        for index, item in enumerate(value):
            found += problems(item, schema["items"], f"{where}[{index}]")
    if kind == "object":
        properties = schema.get("properties", {})
        found += [f"{where}: missing {name!r}" for name in schema.get("required", []) if name not in value]
        for name, item in value.items():
            if name in properties:
                found += problems(item, properties[name], f"{where}.{name}")
            elif schema.get("additionalProperties") is False:
                found.append(f"{where}: unexpected key {name!r}")
            elif isinstance(schema.get("additionalProperties"), dict):
                found += problems(item, schema["additionalProperties"], f"{where}.{name}")
    return found
