"""Splitting a model across GPUs: tensor parallel inside a node, pipeline stages across nodes.

Seed rules (part 7, "What if it does not fit on one GPU?"): every layer's weight matrices are cut
into equal slices, one per GPU; the KV cache splits the same way because each GPU handles its
share of the KV heads; splits come in 1, 2, 4 or 8 because the attention heads have to divide
evenly. Beyond one server, pipeline parallelism gives each server a run of layers.

The default ladder of GPU counts (``default_splits``) is the one /plan, /matrix, the chat
commands and the CLI try when a request names none: the seed's 1, 2, 4, 8 inside a node (powers
of two up to the catalogue's ``gpus_per_node``, and the whole node), then whole nodes as pipeline
stages, doubling (2, 4 nodes: the matrix's "or two servers").
"""

import msgspec

from service.sizing.errors import SizingError
from service.sizing.models import LayerType, ModelSpec

DEFAULT_MAX_NODES = 4
"""The default ladder stops at four nodes (32 GPUs of 8 per node)."""


def default_splits(gpus_per_node: int, max_nodes: int = DEFAULT_MAX_NODES) -> tuple[int, ...]:
    """Powers of two below ``gpus_per_node``, the whole node, then 2, 4, ... ``max_nodes``
    nodes (8 per node: 1, 2, 4, 8, 16, 32)."""
    if gpus_per_node < 1:
        raise SizingError("gpus_per_node", "must be positive")
    counts: list[int] = []
    n = 1
    while n < gpus_per_node:
        counts.append(n)
        n *= 2
    nodes = 1
    while nodes <= max_nodes:
        counts.append(gpus_per_node * nodes)
        nodes *= 2
    return tuple(counts)


class Split(msgspec.Struct, frozen=True, kw_only=True):
    gpu_count: int
    tensor_parallel: int
    pipeline_parallel: int
    nodes: int


def split_for(gpu_count: int, gpus_per_node: int) -> Split:
    """Tensor parallel up to one node; beyond it, one pipeline stage per node."""
    if gpu_count < 1:
        raise SizingError("splits", "GPU counts must be positive")
    if gpu_count <= gpus_per_node:
        return Split(gpu_count=gpu_count, tensor_parallel=gpu_count, pipeline_parallel=1, nodes=1)
    if gpu_count % gpus_per_node:
        raise SizingError(
            "splits",
            f"{gpu_count} GPUs is more than one node of {gpus_per_node} but not a whole "
            "number of nodes",
        )
    stages = gpu_count // gpus_per_node
    return Split(
        gpu_count=gpu_count, tensor_parallel=gpus_per_node, pipeline_parallel=stages, nodes=stages
    )


def tensor_parallel_problem(model: ModelSpec, tensor_parallel: int) -> str | None:
    """Why ``tensor_parallel`` cannot split this model, or None when it can.

    Valid when the query heads divide evenly and the KV heads either divide evenly or are
    replicated whole (tp a multiple of kv_heads). MLA keeps one latent per token on every rank,
    so only the query heads must divide.
    """
    heads, kv_heads = model.attention_heads, model.kv_heads
    if heads % tensor_parallel:
        return f"{heads} attention heads do not divide into {tensor_parallel} equal slices"
    if model.linear_key_heads and model.linear_key_heads % tensor_parallel:
        # vLLM's Gated DeltaNet divides its key and value heads by TP, never replicates them.
        return (
            f"{model.linear_key_heads} linear-attention key heads do not divide into "
            f"{tensor_parallel} equal slices"
        )
    if model.kv_lora_rank:
        return None
    if kv_heads % tensor_parallel and tensor_parallel % kv_heads:
        return (
            f"{kv_heads} KV heads neither divide into {tensor_parallel} slices "
            f"nor replicate evenly onto {tensor_parallel} GPUs"
        )
    return None


def split_problem(model: ModelSpec, split: Split) -> str | None:
    problem = tensor_parallel_problem(model, split.tensor_parallel)
    if problem is None and split.pipeline_parallel > model.layers:
        problem = f"{model.layers} layers cannot fill {split.pipeline_parallel} pipeline stages"
    return problem


def kv_heads_per_gpu(model: ModelSpec, tensor_parallel: int) -> int:
    """Each GPU holds kv_heads / tp heads; when tp > kv_heads each head is replicated."""
    return max(1, model.kv_heads // tensor_parallel)


def stage_layers(model: ModelSpec, pipeline_parallel: int) -> list[tuple[LayerType, ...]]:
    """Contiguous runs of layers, one per stage; the first stages take the remainder."""
    types = model.resolved_layer_types
    base, extra = divmod(len(types), pipeline_parallel)
    stages: list[tuple[LayerType, ...]] = []
    start = 0
    for stage in range(pipeline_parallel):
        size = base + (1 if stage < extra else 0)
        stages.append(types[start : start + size])
        start += size
    return stages


def even_shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` integers that differ by at most one and sum exactly."""
    base, extra = divmod(total, parts)
    return [base + 1] * extra + [base] * (parts - extra)


def describe_split(split: Split) -> str:
    """'16 GPUs (tensor parallel 8 x 2 pipeline stages, 2 nodes)'."""
    gpus = f"{split.gpu_count} GPU{'s' if split.gpu_count > 1 else ''}"
    if split.nodes == 1:
        return f"{gpus} (tensor parallel {split.tensor_parallel}, 1 node)"
    return (
        f"{gpus} (tensor parallel {split.tensor_parallel} x {split.pipeline_parallel} pipeline "
        f"stages, {split.nodes} nodes)"
    )
