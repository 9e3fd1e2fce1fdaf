"""The matrix's closed form (service.sizing.fewest) against the full plan search, per cell.

build_matrix answers each cell as the smallest allowed split whose busiest GPU's need fits the
GPU's budget, with the needs shared across the row and the budgets across the columns;
matrix_cell answers it by running plan() (every split laid out, the larger ladder searched
when none fits). On random models, GPUs, formats and workloads the two must agree to the byte.
"""

import msgspec
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from service.sizing.errors import SizingError
from service.sizing.formats import FORMATS, default_kv_format
from service.sizing.hardware import GpuSpec
from service.sizing.matrix import build_matrix, matrix_cell
from service.sizing.models import ModelSpec, validate_model
from service.sizing.workload import Workload
from tests.unit.sizing.specs import (
    ALL_GPUS,
    DEEPSEEK_V3,
    GEMMA_3_27B,
    GPT_OSS_120B,
    LLAMA_8B,
    LLAMA_70B,
    MIXTRAL_8X7B,
    QWEN3_NEXT_80B,
    QWEN25_7B,
)

GB = 10**9
BASES = [
    LLAMA_8B,
    LLAMA_70B,
    DEEPSEEK_V3,
    GPT_OSS_120B,
    GEMMA_3_27B,
    QWEN25_7B,
    QWEN3_NEXT_80B,
    MIXTRAL_8X7B,
]
WEIGHT_FORMATS = ["fp32", "bf16", "fp8", "int8", "int4", "mxfp4"]


@st.composite
def models(draw: st.DrawFn) -> ModelSpec:
    """A shipped architecture with its size, depth and KV heads redrawn (heads that do not
    divide some splits, more stages than layers, models too big for any split)."""
    base = draw(st.sampled_from(BASES))
    total = draw(st.integers(10**8, 2 * 10**12))
    fields: dict[str, object] = {
        "slug": f"m-{draw(st.integers(0, 10**6))}",
        "total_params": total,
        "active_params": min(base.active_params, total),
        "replicated_params": min(base.replicated_params, total),
        "checkpoint_format": "",
        "checkpoint_bytes": 0,
    }
    if not base.layer_types:
        fields["layers"] = draw(st.integers(1, 160))
    if not base.kv_lora_rank:
        divisors = [h for h in range(1, base.attention_heads + 1) if base.attention_heads % h == 0]
        fields["kv_heads"] = draw(st.sampled_from(divisors))
    spec = msgspec.structs.replace(base, **fields)
    try:
        validate_model(spec)
    except SizingError:
        assume(False)
    return spec


@st.composite
def gpus(draw: st.DrawFn) -> GpuSpec:
    base = draw(st.sampled_from(ALL_GPUS))
    memory = draw(st.integers(4, 400)) * GB
    return msgspec.structs.replace(
        base,
        slug=f"g-{draw(st.integers(0, 10**6))}",
        memory_bytes=memory,
        driver_visible_bytes=draw(st.sampled_from([0, memory - memory // 50])),
        gpus_per_node=draw(st.sampled_from([1, 2, 3, 4, 6, 8, 16])),
    )


WORKLOADS = st.builds(
    Workload,
    concurrency=st.integers(1, 512),
    context_tokens=st.integers(1, 262_144),
    gpu_memory_utilization=st.sampled_from([0.5, 0.8, 0.9, 0.92, 0.95, 1.0]),
    overhead_bytes_per_gpu=st.sampled_from([0, 10**9, 4 * 10**9, 30 * 10**9]),
    capacity_basis=st.sampled_from(["driver", "marketed"]),
    splits=st.none() | st.lists(st.integers(1, 96), min_size=1, max_size=12).map(tuple),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(models(), min_size=1, max_size=3, unique_by=lambda m: m.slug),
    st.lists(st.sampled_from(WEIGHT_FORMATS), min_size=1, max_size=3, unique=True),
    st.lists(gpus(), min_size=1, max_size=4, unique_by=lambda g: g.slug),
    WORKLOADS,
    st.none() | st.sampled_from(["bf16", "fp8"]),
)
def test_each_closed_form_cell_is_the_plan_searchs_to_the_byte(
    model_list: list[ModelSpec],
    formats: list[str],
    gpu_list: list[GpuSpec],
    workload: Workload,
    kv: str | None,
) -> None:
    weights = [FORMATS[f] for f in formats]
    forced = FORMATS[kv] if kv else None
    matrix = build_matrix(model_list, weights, gpu_list, workload, forced)
    searched = [
        [matrix_cell(m, g, w, forced or default_kv_format(w), workload) for g in gpu_list]
        for m in model_list
        for w in weights
    ]
    assert msgspec.json.encode([row.cells for row in matrix.rows]) == msgspec.json.encode(searched)
