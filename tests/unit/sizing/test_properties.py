"""Properties of the plan that must hold for any input (hypothesis)."""

import math

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from service.sizing.formats import FORMATS, default_kv_format
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.plan import Plan, Workload, plan
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


@settings(max_examples=80, deadline=None)
@given(MODELS, GPUS, WORKLOADS, st.sampled_from(list(FORMATS)))
def test_parts_always_add_up(model: ModelSpec, gpu: GpuSpec, workload: Workload, fmt: str) -> None:
    weights = FORMATS[fmt]
    p = plan(model, gpu, weights, default_kv_format(weights), workload)
    g = p.per_gpu
    assert g.overhead_bytes + g.weights_bytes + g.kv_cache_bytes + g.spare_bytes == g.usable_bytes
    assert g.usable_bytes - g.overhead_bytes == g.budget_bytes
    assert p.weights_bytes + p.kv_cache_bytes + p.spare_bytes == p.budget_bytes
    assert p.budget_bytes == g.budget_bytes * p.gpu_count
    assert p.kv_pool_bytes == p.budget_bytes - p.weights_bytes
    if p.pipeline_parallel == 1:
        # Every GPU is alike: the totals are the busiest GPU's parts times the count.
        assert p.kv_cache_bytes == g.kv_cache_bytes * p.gpu_count
        assert g.weights_bytes * p.gpu_count - p.weights_bytes in range(p.gpu_count)
    assert p.fits == (g.spare_bytes >= 0)
