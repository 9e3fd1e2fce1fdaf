"""The warnings a plan carries: each names a seed mistake or a limit the numbers hide."""

from service.sizing import advice
from service.sizing.advice import PlanWarning
from service.sizing.decode import UNIFORM_ROUTING
from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.parallel import Split, describe_split
from service.sizing.spare import Status
from service.sizing.speed import DecodeCeiling
from service.sizing.units import label_bytes
from service.sizing.workload import Workload

UTILISATION_WARN_ABOVE = 0.95


def plan_warnings(
    model: ModelSpec,
    gpu: GpuSpec,
    weight_format: NumberFormat,
    kv_format: NumberFormat,
    workload: Workload,
    split: Split,
    *,
    total_weight_bytes: int,
    one_gpu_budget_bytes: int,
    status: Status,
    smallest_fitting: Split | None,
    decode: DecodeCeiling,
) -> list[PlanWarning]:
    """What a plan warns of, in the order a reader should see it."""
    out: list[PlanWarning] = []

    def warn(code: str, message: str) -> None:
        out.append(PlanWarning(code=code, message=message))

    if status == "does_not_fit":
        if smallest_fitting is None:
            beyond = (
                "no split of the larger ladder (whole nodes doubling as pipeline stages, while "
                "each stage keeps a layer) would either."
            )
        else:
            beyond = f"the smallest split that would is {describe_split(smallest_fitting)}."
        warn(
            advice.DOES_NOT_FIT,
            f"No allowed split of {gpu.slug} holds the weights plus the worst-case KV cache; "
            f"the closest was {split.gpu_count} GPU(s); {beyond}",
        )
    if gpu.driver_figure_missing(workload.capacity_basis):
        warn(
            advice.CAPACITY_BASIS_FALLBACK,
            f"{gpu.slug} has no driver-visible capacity in the catalogue: its marketed "
            f"{label_bytes(gpu.memory_bytes)} counts, read as decimal bytes.",
        )
    if workload.context_tokens >= model.max_context_tokens:
        warn(
            advice.CONTEXT_AT_OR_ABOVE_MAX,
            f"The context of {workload.context_tokens:,} tokens is at or above the model's "
            f"maximum of {model.max_context_tokens:,}; set what the application needs.",
        )
    if model.is_moe:
        warn(
            advice.MOE_SIZED_BY_TOTAL,
            f"Mixture of experts: memory is sized by all {model.total_params:,} parameters; "
            f"each token computes with about {model.resolved_active_params:,}. A decode step "
            f"of {workload.concurrency:,} conversation(s) reads about "
            f"{decode.experts_read_per_layer:,.2f} of {model.experts} experts per "
            f"layer ({UNIFORM_ROUTING}).",
        )
    if workload.gpu_memory_utilization > UTILISATION_WARN_ABOVE:
        warn(
            advice.UTILISATION_ABOVE_095,
            f"Filling each GPU to {workload.gpu_memory_utilization:.0%} leaves no room for "
            "activation peaks or other processes; plan to about 90%.",
        )
    if split.gpu_count > 1 and gpu.nvlink is None:
        warn(
            advice.SPLIT_OVER_PCIE,
            f"{gpu.slug} has no NVLink: the {split.gpu_count}-GPU split talks over PCIe, "
            "so it holds less and runs slower than one larger card.",
        )
    if total_weight_bytes > one_gpu_budget_bytes:
        warn(
            advice.WEIGHTS_EXCEED_ONE_GPU,
            f"The weights alone ({label_bytes(total_weight_bytes)}) are larger than one "
            f"GPU's budget ({label_bytes(one_gpu_budget_bytes)}).",
        )
    if status in ("tight", "amber"):
        warn(
            advice.SPARE_UNDER_10_PERCENT,
            "Under 10% spare: look again; it holds only while conversations are rarely all "
            "at full length together.",
        )
    for role, fmt in (("weights", weight_format), ("KV cache", kv_format)):
        if (fmt.needs == "fp8" and not gpu.fp8) or (fmt.needs == "fp4" and not gpu.fp4):
            warn(
                advice.FORMAT_NOT_NATIVE,
                f"{gpu.slug} has no hardware {fmt.needs.upper()} support: {fmt.name} "
                f"{role} are emulated or dequantised, which costs speed.",
            )
    tp = split.tensor_parallel
    if tp > 1 and model.kv_lora_rank:
        warn(
            advice.KV_REPLICATED,
            f"MLA keeps the whole latent on each of the {tp} tensor-parallel GPUs: the KV "
            "cache does not shrink with the split.",
        )
    elif tp > model.kv_heads:
        warn(
            advice.KV_REPLICATED,
            f"{model.kv_heads} KV heads on {tp} GPUs: each head is replicated "
            f"{tp // model.kv_heads} times, multiplying the KV cache.",
        )
    if split.nodes > 1:
        warn(
            advice.PIPELINE_ACROSS_NODES,
            f"{split.nodes} nodes of {split.tensor_parallel} GPUs: the layers are split into "
            f"{split.pipeline_parallel} pipeline stages across the inter-node network.",
        )
    return out
