"""Properties of the plan that must hold for any input (hypothesis)."""

import math
from fractions import Fraction

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from service.sizing.formats import FORMATS, default_kv_format
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.plan import Plan, Workload, plan
from service.sizing.weights import model_weight_bytes
from tests.unit.sizing.specs import (
    DEEPSEEK_V3,
    GEMMA_3_27B,
    GPT_OSS_120B,
    H100,
    H200,
    L40S,
    LLAMA_8B,
    LLAMA_70B,
    QWEN25_7B,
    RTX_4090,
)

MODELS = st.sampled_from([LLAMA_8B, LLAMA_70B, DEEPSEEK_V3, GPT_OSS_120B, GEMMA_3_27B, QWEN25_7B])
GPUS = st.sampled_from([RTX_4090, L40S, H100, H200])
SPLITS = (1, 2, 4, 8, 16, 32)
WORKLOADS = st.builds(
    Workload,
    concurrency=st.integers(1, 256),
    context_tokens=st.integers(1, 131_072),
    gpu_memory_utilization=st.sampled_from([0.8, 0.9, 0.95]),
    overhead_bytes_per_gpu=st.sampled_from([0, 2 * 10**9, 4 * 10**9]),
    splits=st.just(SPLITS),
)
FORMAT_LADDER = ["fp32", "bf16", "fp8", "int4"]


def needed(p: Plan) -> float:
    return p.gpu_count if p.fits else math.inf


def sized(model: ModelSpec, gpu: GpuSpec, fmt: str, workload: Workload) -> float:
    weights = FORMATS[fmt]
    return needed(plan(model, gpu, weights, default_kv_format(weights), workload))


@settings(max_examples=60, deadline=None)
@given(MODELS, GPUS, WORKLOADS, st.integers(1, 64))
def test_more_users_never_need_fewer_gpus(
    model: ModelSpec, gpu: GpuSpec, workload: Workload, extra: int
) -> None:
    more = msgspec.structs.replace(workload, concurrency=workload.concurrency + extra)
    assert sized(model, gpu, "bf16", more) >= sized(model, gpu, "bf16", workload)


@settings(max_examples=60, deadline=None)
@given(MODELS, GPUS, WORKLOADS, st.integers(1, 65_536))
def test_longer_context_never_needs_fewer_gpus(
    model: ModelSpec, gpu: GpuSpec, workload: Workload, extra: int
) -> None:
    longer = msgspec.structs.replace(workload, context_tokens=workload.context_tokens + extra)
    assert sized(model, gpu, "fp8", longer) >= sized(model, gpu, "fp8", workload)


@settings(max_examples=60, deadline=None)
@given(MODELS, GPUS, WORKLOADS, st.integers(1, 200).map(lambda g: g * 10**9))
def test_a_larger_gpu_never_needs_more(
    model: ModelSpec, gpu: GpuSpec, workload: Workload, extra_bytes: int
) -> None:
    larger = msgspec.structs.replace(gpu, memory_bytes=gpu.memory_bytes + extra_bytes)
    assert sized(model, larger, "bf16", workload) <= sized(model, gpu, "bf16", workload)


@settings(max_examples=60, deadline=None)
@given(MODELS, GPUS, WORKLOADS, st.integers(0, len(FORMAT_LADDER) - 2))
def test_a_smaller_format_never_needs_more(
    model: ModelSpec, gpu: GpuSpec, workload: Workload, step: int
) -> None:
    bigger, smaller = FORMAT_LADDER[step], FORMAT_LADDER[step + 1]
    assert sized(model, gpu, smaller, workload) <= sized(model, gpu, bigger, workload)


FULL_ATTENTION = {LLAMA_8B.slug: LLAMA_8B, LLAMA_70B.slug: LLAMA_70B, QWEN25_7B.slug: QWEN25_7B}
"""Models whose every layer caches 2 x kv_heads x 128 values per token (head_dim 4096 / 32,
8192 / 64 and 3584 / 28 = 128), for the KV written out by hand below."""


@settings(max_examples=80, deadline=None)
@given(MODELS, GPUS, WORKLOADS, st.sampled_from(list(FORMATS)))
def test_parts_always_add_up(model: ModelSpec, gpu: GpuSpec, workload: Workload, fmt: str) -> None:
    # Each part from the inputs (seed steps 1-5), not from the plan's other fields.
    weights = FORMATS[fmt]
    p = plan(model, gpu, weights, default_kv_format(weights), workload)
    g, n = p.per_gpu, p.gpu_count
    # Step 3 on the default (driver) basis: the nvidia-smi total when the catalogue has one,
    # else the marketed bytes; x the utilisation as typed (0.9 = 9/10), rounded down.
    capacity = gpu.driver_visible_bytes or gpu.memory_bytes
    usable = capacity * Fraction(str(workload.gpu_memory_utilization)).numerator
    usable //= Fraction(str(workload.gpu_memory_utilization)).denominator
    budget = usable - workload.overhead_bytes_per_gpu
    assert (g.capacity_bytes, g.usable_bytes, g.budget_bytes) == (capacity, usable, budget)
    assert g.overhead_bytes == workload.overhead_bytes_per_gpu
    assert p.budget_bytes == n * budget
    # A split moves the weights, never adds or drops a byte: the whole model's, and the
    # busiest GPU holds an even share (rounded either way).
    whole = model_weight_bytes(model, weights)
    assert p.weights_bytes == whole
    assert g.weights_bytes in (whole // n, -(-whole // n))
    if model.slug in FULL_ATTENTION:
        # KV: users x context x 2 (K and V) x layers x KV heads per GPU (replicated once
        # tensor parallel exceeds them) x 128 x bytes per value (the seed rule: 16-bit KV for
        # 16- and 32-bit weights, FP8 otherwise), on every tensor-parallel GPU.
        heads = max(1, model.kv_heads // p.tensor_parallel)
        per_value = 2 if weights.value_bits >= 16 else 1
        per_gpu_stage = workload.concurrency * workload.context_tokens * 2 * heads * 128
        assert p.kv_cache_bytes == per_gpu_stage * model.layers * per_value * p.tensor_parallel
        if p.pipeline_parallel == 1:
            assert g.kv_cache_bytes == per_gpu_stage * model.layers * per_value
    # Step 5: the spare is what the budget leaves, overall and on the busiest GPU; it fits
    # exactly when the busiest GPU's parts fit in its usable bytes.
    assert p.spare_bytes == n * budget - whole - p.kv_cache_bytes
    assert g.spare_bytes == usable - workload.overhead_bytes_per_gpu - g.weights_bytes - (
        g.kv_cache_bytes
    )
    assert p.fits == (
        workload.overhead_bytes_per_gpu + g.weights_bytes + g.kv_cache_bytes <= usable
    )
