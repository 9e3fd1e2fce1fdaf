"""The plan: the fewest GPUs that hold the weights and the worst-case KV cache.

Seed rule (part 7, "How do you check whether a model will fit, step by step?"):
1. size the weights from total parameters;
2. size the KV cache for the worst case, every conversation at full length;
3. usable memory per GPU = capacity x utilisation - overhead (80 GB x 0.9 - 4 GB = 68 GB);
4. divide and round up to 1, 2, 4 or 8 GPUs (beyond one node, whole nodes as pipeline stages:
   the default ladder of ``service.sizing.parallel.default_splits``);
5. under about 10% spare, look again.

The workload a plan holds is ``service.sizing.workload``; options on several GPUs are ranked by
``service.sizing.ranking``.
"""

import functools
from typing import Literal

import msgspec

from service.sizing.advice import PlanWarning
from service.sizing.errors import NoValidSplit, SizingError
from service.sizing.formats import NumberFormat
from service.sizing.hardware import (
    CapacityBasis,
    GpuSpec,
    validate_gpu,
)
from service.sizing.kv import stage_shapes
from service.sizing.models import ModelSpec, validate_model
from service.sizing.parallel import (
    Split,
    even_shares,
    split_for,
    split_problem,
)
from service.sizing.plan_warnings import plan_warnings
from service.sizing.spare import Status, spare_status
from service.sizing.speed import DecodeCeiling, decode_ceiling
from service.sizing.units import exact, label_bytes
from service.sizing.weights import model_weight_bytes
from service.sizing.workload import Workload as Workload
from service.sizing.workload import larger_ladder, splits_for, validate_workload


def validate_inputs(model: ModelSpec, gpu: GpuSpec, workload: Workload) -> None:
    """Every entry point of the core checks its inputs, so bad input is one SizingError."""
    validate_model(model)
    validate_gpu(gpu)
    validate_workload(workload)


class PerGpu(msgspec.Struct, frozen=True, kw_only=True):
    """The busiest GPU of the split: capacity x utilisation = overhead + budget, and
    budget = weights + kv_cache + spare, exactly."""

    capacity_bytes: int
    usable_bytes: int
    budget_bytes: int
    overhead_bytes: int
    weights_bytes: int
    kv_cache_bytes: int
    spare_bytes: int
    kv_pool_bytes: int


class SplitAttempt(msgspec.Struct, frozen=True, kw_only=True):
    gpu_count: int
    outcome: Literal["fits", "too_small", "invalid"]
    reason: str


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    gpu: str
    weight_format: str
    kv_format: str
    capacity_basis: CapacityBasis
    fits: bool
    status: Status
    gpu_count: int
    tensor_parallel: int
    pipeline_parallel: int
    nodes: int
    weights_bytes: int
    kv_bytes_per_token: int
    """Whole-model KV growth per token of context (tp=1, no replication)."""
    kv_fixed_bytes_per_sequence: int
    """Whole-model KV of the sliding-window layers for one conversation: they hold
    min(context, window) tokens, a fixed cost once the context passes the window."""
    kv_cache_bytes: int
    """Worst-case KV held across all GPUs of the split (replicated heads counted on each)."""
    budget_bytes: int
    spare_bytes: int
    spare_fraction: float
    kv_pool_bytes: int
    """What is left for KV after the weights, across all GPUs (negative: the weights alone
    do not fit)."""
    kv_pool_tokens: int
    """Tokens of context the pool holds, at the busiest GPU's growth per token."""
    max_concurrency: int
    """Whole conversations of ``context_tokens`` tokens the pool holds at once."""
    concurrency: int
    context_tokens: int
    per_gpu: PerGpu
    decode: DecodeCeiling
    warnings: list[PlanWarning]
    considered: list[SplitAttempt]
    smallest_fitting_split: Split | None = None
    """does_not_fit only: the fewest GPUs of the larger ladder (the default one, with no node
    limit) that would hold it; null when none would, or when the plan fits."""


def usable_bytes_per_gpu(gpu: GpuSpec, workload: Workload) -> int:
    """Seed step 3: capacity x utilisation (80 GB x 0.9 = 72 GB), exact to the byte."""
    capacity = gpu.capacity_bytes(workload.capacity_basis)
    share = exact(workload.gpu_memory_utilization)
    return capacity * share.numerator // share.denominator  # int(capacity x share), in integers


def budget_bytes_per_gpu(gpu: GpuSpec, workload: Workload) -> int:
    """Seed step 3: minus the per-GPU overhead (72 GB - 4 GB = 68 GB for weights and cache)."""
    return usable_bytes_per_gpu(gpu, workload) - workload.overhead_bytes_per_gpu


class _Layout(msgspec.Struct, frozen=True):
    split: Split
    per_gpu: PerGpu
    total_weights: int
    total_kv: int
    total_budget: int
    pool_tokens: int
    max_concurrency: int
    mean_share: int
    """The mean weight bytes per GPU and one conversation's KV on the busiest GPU: what the
    decode ceiling reads (computed for the chosen layout only, in ``_decode``)."""
    seq_kv_on_busiest: int


def _layout(
    model: ModelSpec,
    gpu: GpuSpec,
    weight_format: NumberFormat,
    kv_format: NumberFormat,
    workload: Workload,
    split: Split,
    usable: int,
) -> _Layout:
    """Lay the model out on one split and measure the busiest GPU (``usable``: capacity x
    utilisation, computed once per plan)."""
    tp, pp = split.tensor_parallel, split.pipeline_parallel
    total_weights = model_weight_bytes(model, weight_format)
    weight_shares = even_shares(total_weights, split.gpu_count)
    mean_share = -(-total_weights // split.gpu_count)
    budget = usable - workload.overhead_bytes_per_gpu
    ctx, users = workload.context_tokens, workload.concurrency

    total_kv = 0
    busiest: PerGpu | None = None
    pool_tokens = max_conc = -1
    seq_kv_on_busiest = 0
    for stage, shape in enumerate(stage_shapes(model, kv_format, tp, pp)):
        seq_bytes = shape.bytes_per_sequence(ctx)
        kv_gpu = users * seq_bytes
        total_kv += kv_gpu * tp
        weights_gpu = weight_shares[stage * tp]  # the stage's largest share comes first
        pool = budget - weights_gpu
        tokens = pool // shape.growth_bytes_per_token if shape.growth_bytes_per_token else 0
        conc = pool // seq_bytes if seq_bytes else 0
        pool_tokens = tokens if pool_tokens < 0 else min(pool_tokens, tokens)
        max_conc = conc if max_conc < 0 else min(max_conc, conc)
        candidate = PerGpu(
            capacity_bytes=gpu.capacity_bytes(workload.capacity_basis),
            usable_bytes=usable,
            budget_bytes=budget,
            overhead_bytes=workload.overhead_bytes_per_gpu,
            weights_bytes=weights_gpu,
            kv_cache_bytes=kv_gpu,
            spare_bytes=budget - weights_gpu - kv_gpu,
            kv_pool_bytes=pool,
        )
        if busiest is None or candidate.spare_bytes < busiest.spare_bytes:
            busiest = candidate
            seq_kv_on_busiest = seq_bytes
    assert busiest is not None
    return _Layout(
        split=split,
        per_gpu=busiest,
        total_weights=total_weights,
        total_kv=total_kv,
        total_budget=budget * split.gpu_count,
        pool_tokens=max(0, pool_tokens),
        max_concurrency=max(0, max_conc),
        mean_share=mean_share,
        seq_kv_on_busiest=seq_kv_on_busiest,
    )


def _decode(model: ModelSpec, gpu: GpuSpec, workload: Workload, layout: _Layout) -> DecodeCeiling:
    return decode_ceiling(
        model,
        weight_bytes_per_gpu=layout.mean_share,
        kv_bytes_per_sequence_per_gpu=layout.seq_kv_on_busiest,
        concurrency=workload.concurrency,
        hbm_bytes_per_s=gpu.hbm_bytes_per_s,
        pipeline_stages=layout.split.pipeline_parallel,
    )


def _finish(
    model: ModelSpec,
    gpu: GpuSpec,
    weight_format: NumberFormat,
    kv_format: NumberFormat,
    workload: Workload,
    layout: _Layout,
    considered: list[SplitAttempt],
    smallest_fitting: Split | None = None,
) -> Plan:
    spare = layout.total_budget - layout.total_weights - layout.total_kv
    fraction = spare / layout.total_budget if layout.total_budget > 0 else -1.0
    per = layout.per_gpu
    busiest_fraction = per.spare_bytes / per.budget_bytes if per.budget_bytes > 0 else -1.0
    status = spare_status(min(fraction, busiest_fraction))
    whole_model_kv = stage_shapes(model, kv_format, 1, 1)[0]  # tp=1, no replication
    decode = _decode(model, gpu, workload, layout)
    return Plan(
        model=model.slug,
        gpu=gpu.slug,
        weight_format=weight_format.slug,
        kv_format=kv_format.slug,
        capacity_basis=workload.capacity_basis,
        fits=status != "does_not_fit",
        status=status,
        gpu_count=layout.split.gpu_count,
        tensor_parallel=layout.split.tensor_parallel,
        pipeline_parallel=layout.split.pipeline_parallel,
        nodes=layout.split.nodes,
        weights_bytes=layout.total_weights,
        kv_bytes_per_token=whole_model_kv.growth_bytes_per_token,
        kv_fixed_bytes_per_sequence=whole_model_kv.fixed_bytes_per_sequence(
            workload.context_tokens
        ),
        kv_cache_bytes=layout.total_kv,
        budget_bytes=layout.total_budget,
        spare_bytes=spare,
        spare_fraction=fraction,
        kv_pool_bytes=layout.total_budget - layout.total_weights,
        kv_pool_tokens=layout.pool_tokens,
        max_concurrency=layout.max_concurrency,
        concurrency=workload.concurrency,
        context_tokens=workload.context_tokens,
        per_gpu=per,
        decode=decode,
        warnings=plan_warnings(
            model,
            gpu,
            weight_format,
            kv_format,
            workload,
            layout.split,
            total_weight_bytes=layout.total_weights,
            one_gpu_budget_bytes=per.budget_bytes,
            status=status,
            smallest_fitting=smallest_fitting,
            decode=decode,
        ),
        considered=considered,
        smallest_fitting_split=smallest_fitting if status == "does_not_fit" else None,
    )


def plan_split(
    model: ModelSpec,
    gpu: GpuSpec,
    weight_format: NumberFormat,
    kv_format: NumberFormat,
    workload: Workload,
    gpu_count: int,
) -> Plan:
    """The plan for exactly ``gpu_count`` GPUs, fitting or not."""
    validate_inputs(model, gpu, workload)
    split = split_for(gpu_count, gpu.gpus_per_node)
    problem = split_problem(model, split)
    if problem:
        raise SizingError("gpu_count", problem)
    usable = usable_bytes_per_gpu(gpu, workload)
    layout = _layout(model, gpu, weight_format, kv_format, workload, split, usable)
    return _finish(model, gpu, weight_format, kv_format, workload, layout, [])


@functools.lru_cache(maxsize=1024)
def plan(
    model: ModelSpec,
    gpu: GpuSpec,
    weight_format: NumberFormat,
    kv_format: NumberFormat,
    workload: Workload,
) -> Plan:
    """Seed step 4: the fewest GPUs among the allowed splits that hold it all.

    When none does, the answer is the largest valid split, marked does_not_fit, naming the
    smallest split of the larger ladder that would hold it (``smallest_fitting_split``).

    Remembered per arguments, all frozen Structs (the same plans come back request after
    request, and a ranking plans every GPU); the plan is shared: callers read it and build
    their answers from it, never changing its lists.
    """
    validate_inputs(model, gpu, workload)
    considered: list[SplitAttempt] = []
    last: _Layout | None = None
    usable = usable_bytes_per_gpu(gpu, workload)
    tried = sorted(set(splits_for(workload, gpu)))
    for count in tried:
        try:
            split = split_for(count, gpu.gpus_per_node)
        except SizingError as exc:
            considered.append(SplitAttempt(gpu_count=count, outcome="invalid", reason=exc.message))
            continue
        problem = split_problem(model, split)
        if problem:
            considered.append(SplitAttempt(gpu_count=count, outcome="invalid", reason=problem))
            continue
        layout = _layout(model, gpu, weight_format, kv_format, workload, split, usable)
        last = layout
        if layout.per_gpu.spare_bytes >= 0:
            considered.append(
                SplitAttempt(gpu_count=count, outcome="fits", reason="holds weights and KV cache")
            )
            return _finish(model, gpu, weight_format, kv_format, workload, layout, considered)
        short = -layout.per_gpu.spare_bytes
        considered.append(
            SplitAttempt(
                gpu_count=count,
                outcome="too_small",
                reason=f"the busiest GPU is {label_bytes(short)} short",
            )
        )
    if last is None:
        reasons = "; ".join(f"{a.gpu_count}: {a.reason}" for a in considered)
        raise NoValidSplit("splits", f"no allowed GPU count can split {model.slug}: {reasons}")
    smallest = smallest_fitting_split(
        model, gpu, weight_format, kv_format, workload, usable, skip=set(tried)
    )
    return _finish(model, gpu, weight_format, kv_format, workload, last, considered, smallest)


def smallest_fitting_split(
    model: ModelSpec,
    gpu: GpuSpec,
    weight_format: NumberFormat,
    kv_format: NumberFormat,
    workload: Workload,
    usable: int,
    skip: set[int],
) -> Split | None:
    """The fewest GPUs of ``larger_ladder`` that hold it (counts in ``skip`` were tried and
    did not); None when none does. The ladder ends where a stage would have no layer."""
    for count in larger_ladder(gpu):
        if count in skip:
            continue
        split = split_for(count, gpu.gpus_per_node)
        if split.pipeline_parallel > model.layers:
            return None
        if split_problem(model, split):
            continue
        layout = _layout(model, gpu, weight_format, kv_format, workload, split, usable)
        if layout.per_gpu.spare_bytes >= 0:
            return split
    return None


def plan_if_splittable(
    model: ModelSpec,
    gpu: GpuSpec,
    weight_format: NumberFormat,
    kv_format: NumberFormat,
    workload: Workload,
) -> Plan | None:
    """The plan, or None when no allowed GPU count can split the model on this GPU (every
    other bad input still raises)."""
    try:
        return plan(model, gpu, weight_format, kv_format, workload)
    except NoValidSplit:
        return None
