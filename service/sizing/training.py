"""Training and fine-tuning memory, and the fewest GPUs for each.

Seed rules (part 7, "Why does training need so much more memory?"):
- mixed precision with Adam keeps about 16 bytes per parameter (ZeRO paper): 2 for the 16-bit
  weights, 2 for the 16-bit gradients, 12 for the FP32 master copy, momentum and variance;
- activations with checkpointing: budget about 20% on top (70.6B x 16 = 1,130 GB, +20% = 1.36 TB);
- FSDP and DeepSpeed ZeRO shard the states across GPUs: stage 1 the optimizer state, stage 2 the
  gradients too, stage 3 (= FSDP full shard) the weights too;
- LoRA freezes a 16-bit base and trains small adapters; QLoRA stores the frozen base in NF4
  (its linear layers: bitsandbytes quantises nn.Linear only; embeddings, head and norms 16-bit).
The second article ("The Training Multiplier") counts 2 (weights) + 4 (FP32 gradients) + 8 (Adam)
= 14 bytes per parameter: 98 GB for a 7B model.
"""

from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

import msgspec

from service.sizing.errors import SizingError, require
from service.sizing.formats import FORMATS, NumberFormat
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.plan import Workload, budget_bytes_per_gpu, validate_inputs
from service.sizing.units import ceil_div, exact
from service.sizing.weights import model_weight_bytes, qlora_base_bytes

ZeroStage = Literal[0, 1, 2, 3]
TrainingMode = Literal["full", "lora", "qlora"]
Projection = Literal["q", "k", "v", "o", "gate", "up", "down"]

ACTIVATION_FRACTION_WITH_CHECKPOINTING = 0.2
TRAINING_GPU_COUNTS: tuple[int, ...] = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024)


class TrainingRecipe(msgspec.Struct, frozen=True, kw_only=True):
    slug: str
    name: str
    weight_bytes_per_param: int
    gradient_bytes_per_param: int
    optimizer_bytes_per_param: int
    source: str

    @property
    def bytes_per_param(self) -> int:
        return (
            self.weight_bytes_per_param
            + self.gradient_bytes_per_param
            + self.optimizer_bytes_per_param
        )


RECIPES: dict[str, TrainingRecipe] = {
    r.slug: r
    for r in (
        TrainingRecipe(
            slug="mixed-precision-adam",
            name="Mixed-precision Adam (ZeRO paper)",
            weight_bytes_per_param=2,
            gradient_bytes_per_param=2,
            optimizer_bytes_per_param=12,
            source="Rajbhandari et al., ZeRO: 2 + 2 + 12 (FP32 master, momentum, variance) = 16 B",
        ),
        TrainingRecipe(
            slug="fp32-gradients-adam",
            name="16-bit weights, FP32 gradients, Adam (second article)",
            weight_bytes_per_param=2,
            gradient_bytes_per_param=4,
            optimizer_bytes_per_param=8,
            source="AI Infrastructure Ep. 3, 'The Training Multiplier': 2 + 4 + 8 = 14 B",
        ),
    )
}


def get_recipe(slug: str) -> TrainingRecipe:
    try:
        return RECIPES[slug]
    except KeyError:
        raise SizingError("recipe", f"unknown training recipe {slug!r}") from None


class TrainingMemory(msgspec.Struct, frozen=True, kw_only=True):
    """Bytes on each of ``gpu_count`` GPUs (and, for reference, for the whole job)."""

    mode: TrainingMode
    gpu_count: int
    zero_stage: ZeroStage
    trainable_params: int
    weights_bytes_per_gpu: int
    gradients_bytes_per_gpu: int
    optimizer_bytes_per_gpu: int
    activations_bytes_per_gpu: int
    total_bytes_per_gpu: int
    model_state_bytes: int
    """Weights + gradients + optimizer for the whole model, unsharded."""
    total_bytes: int
    """Model states plus activations for the whole job, unsharded (the seed's 1.36 TB)."""


def _memory(
    mode: TrainingMode,
    gpu_count: int,
    zero_stage: ZeroStage,
    trainable_params: int,
    weights: int,
    grads: int,
    optim: int,
    activation_fraction: float,
) -> TrainingMemory:
    """Shard the whole job's states by ZeRO stage (1: optimizer, 2: + gradients, 3: + weights)
    and add activations as a fraction of each GPU's states."""

    def shard(total: int, from_stage: int) -> int:
        return ceil_div(total, gpu_count) if zero_stage >= from_stage else total

    w, g, o = shard(weights, 3), shard(grads, 2), shard(optim, 1)
    act = _activations(w + g + o, activation_fraction)
    states = weights + grads + optim
    return TrainingMemory(
        mode=mode,
        gpu_count=gpu_count,
        zero_stage=zero_stage,
        trainable_params=trainable_params,
        weights_bytes_per_gpu=w,
        gradients_bytes_per_gpu=g,
        optimizer_bytes_per_gpu=o,
        activations_bytes_per_gpu=act,
        total_bytes_per_gpu=w + g + o + act,
        model_state_bytes=states,
        total_bytes=states + _activations(states, activation_fraction),
    )


def _activations(states: int, fraction: float) -> int:
    require(0 <= fraction <= 10, "activation_fraction", "must be between 0 and 10")
    share = states * exact(fraction)
    return ceil_div(share.numerator, share.denominator)


def full_training_memory(
    model: ModelSpec,
    recipe: TrainingRecipe,
    gpu_count: int = 1,
    zero_stage: ZeroStage = 3,
    activation_fraction: float = ACTIVATION_FRACTION_WITH_CHECKPOINTING,
) -> TrainingMemory:
    """Full training: every parameter carries weights, gradients and optimizer state.

    Activations are budgeted as ``activation_fraction`` of each GPU's model states (the seed's
    20% with checkpointing); sharded stages shard them with the states they ride on.
    """
    require(gpu_count >= 1, "gpu_count", "must be at least 1")
    require(zero_stage in (0, 1, 2, 3), "zero_stage", "must be 0, 1, 2 or 3")
    params = model.total_params
    return _memory(
        "full",
        gpu_count,
        zero_stage,
        params,
        params * recipe.weight_bytes_per_param,
        params * recipe.gradient_bytes_per_param,
        params * recipe.optimizer_bytes_per_param,
        activation_fraction,
    )


def _projection_shape(model: ModelSpec, projection: Projection) -> tuple[int, int, int]:
    """(in features, out features, copies per layer) of one projection's weight matrix."""
    hidden, head_dim = model.hidden_size, model.resolved_head_dim
    q_width = model.attention_heads * head_dim
    kv_width = model.kv_heads * head_dim
    ffn = model.intermediate_size
    copies = model.experts if model.is_moe else 1
    shapes: dict[str, tuple[int, int, int]] = {
        "q": (hidden, q_width, 1),
        "k": (hidden, kv_width, 1),
        "v": (hidden, kv_width, 1),
        "o": (q_width, hidden, 1),
        "gate": (hidden, ffn, copies),
        "up": (hidden, ffn, copies),
        "down": (ffn, hidden, copies),
    }
    return shapes[projection]


def lora_adapter_params(model: ModelSpec, rank: int, targets: Sequence[Projection]) -> int:
    """LoRA (Hu et al.): each adapted d_in x d_out matrix gains A (d_in x r) and B (r x d_out).

    Projection widths come from the architecture (GQA: k and v are kv_heads x head_dim wide);
    MoE MLP targets adapt every expert. MLA's low-rank q/kv projections are approximated by
    heads x head_dim.
    """
    require(rank >= 1, "lora_rank", "must be at least 1")
    require(bool(targets), "lora_targets", "must name at least one projection")
    total = 0
    for target in dict.fromkeys(targets):
        if target not in ("q", "k", "v", "o", "gate", "up", "down"):
            raise SizingError("lora_targets", f"unknown projection {target!r}")
        d_in, d_out, copies = _projection_shape(model, target)
        if target in ("gate", "up", "down"):
            require(
                model.intermediate_size > 0,
                "model_spec.intermediate_size",
                "is needed to adapt MLP projections",
            )
        total += copies * rank * (d_in + d_out)
    return total * model.layers


def adapter_training_memory(
    model: ModelSpec,
    mode: Literal["lora", "qlora"],
    rank: int = 16,
    targets: Sequence[Projection] = ("q", "k", "v", "o"),
    gpu_count: int = 1,
    activation_fraction: float = ACTIVATION_FRACTION_WITH_CHECKPOINTING,
    adapter_recipe: TrainingRecipe | None = None,
    base_format: NumberFormat | None = None,
) -> TrainingMemory:
    """LoRA: frozen 16-bit base (no gradients, no optimizer state) plus adapters trained with
    the full recipe; QLoRA: the same with the base's linear layers in NF4 and its embedding,
    LM head and norms 16-bit (``qlora_base_bytes``: bitsandbytes quantises ``nn.Linear`` only).
    Everything is sharded evenly across ``gpu_count`` GPUs (FSDP); activations are
    ``activation_fraction`` of the per-GPU bytes."""
    require(gpu_count >= 1, "gpu_count", "must be at least 1")
    recipe = adapter_recipe or RECIPES["mixed-precision-adam"]
    adapters = lora_adapter_params(model, rank, targets)
    if mode == "qlora":
        base = qlora_base_bytes(model, base_format or FORMATS["nf4"])
    else:
        base = model_weight_bytes(model, base_format or FORMATS["bf16"])
    return _memory(
        mode,
        gpu_count,
        3,  # FSDP shards the frozen base too
        adapters,
        base + adapters * recipe.weight_bytes_per_param,
        adapters * recipe.gradient_bytes_per_param,
        adapters * recipe.optimizer_bytes_per_param,
        activation_fraction,
    )


class TrainingPlan(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    gpu: str
    mode: TrainingMode
    fits: bool
    gpu_count: int
    budget_bytes_per_gpu: int
    spare_bytes_per_gpu: int
    spare_fraction: float
    memory: TrainingMemory


def training_plan(
    model: ModelSpec,
    gpu: GpuSpec,
    workload: Workload,
    mode: TrainingMode = "full",
    recipe: TrainingRecipe | None = None,
    zero_stage: ZeroStage = 3,
    activation_fraction: float = ACTIVATION_FRACTION_WITH_CHECKPOINTING,
    lora_rank: int = 16,
    lora_targets: Sequence[Projection] = ("q", "k", "v", "o"),
    gpu_counts: Sequence[int] = TRAINING_GPU_COUNTS,
) -> TrainingPlan:
    """The fewest GPUs (from ``gpu_counts``) whose per-GPU share fits the per-GPU budget
    (capacity x utilisation - overhead, as for serving). When none does, the largest count,
    marked as not fitting."""
    validate_inputs(model, gpu, workload)
    require(bool(gpu_counts), "gpu_counts", "must name at least one GPU count")
    budget = budget_bytes_per_gpu(gpu, workload)
    memory: TrainingMemory | None = None
    for count in sorted(set(gpu_counts)):
        require(count >= 1, "gpu_counts", "GPU counts must be positive")
        if mode == "full":
            memory = full_training_memory(
                model,
                recipe or RECIPES["mixed-precision-adam"],
                count,
                zero_stage,
                activation_fraction,
            )
        else:
            memory = adapter_training_memory(
                model, mode, lora_rank, lora_targets, count, activation_fraction, recipe
            )
        if memory.total_bytes_per_gpu <= budget:
            break
    assert memory is not None
    spare = budget - memory.total_bytes_per_gpu
    return TrainingPlan(
        model=model.slug,
        gpu=gpu.slug,
        mode=mode,
        fits=spare >= 0,
        gpu_count=memory.gpu_count,
        budget_bytes_per_gpu=budget,
        spare_bytes_per_gpu=spare,
        spare_fraction=float(Fraction(spare, budget)) if budget > 0 else -1.0,
        memory=memory,
    )
