"""Warnings: the seeds' list of mistakes, each as a stable code and one clear sentence.

Source: part 7, "What do people get wrong about GPU memory?" and "Why does a model that fits on
paper fail?". Codes are part of the API contract; messages may be reworded.
"""

import msgspec


class PlanWarning(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    message: str


CONTEXT_AT_OR_ABOVE_MAX = "context_at_or_above_max"
MOE_SIZED_BY_TOTAL = "moe_sized_by_total"
MOE_OFFLOAD_EXPERTS = "moe_offload_experts"
UTILISATION_ABOVE_095 = "utilisation_above_0_95"
SPLIT_OVER_PCIE = "split_over_pcie"
WEIGHTS_EXCEED_ONE_GPU = "weights_exceed_one_gpu"
SPARE_UNDER_10_PERCENT = "spare_under_10_percent"
FORMAT_NOT_NATIVE = "format_not_native"
KV_REPLICATED = "kv_replicated"
PIPELINE_ACROSS_NODES = "pipeline_across_nodes"
DOES_NOT_FIT = "does_not_fit"
WEIGHT_FORMAT_FROM_CHECKPOINT = "weight_format_from_checkpoint"
CAPACITY_BASIS_FALLBACK = "capacity_basis_fallback"
"""capacity_basis driver on a GPU without a driver-visible figure: its marketed bytes count."""
