"""Bounds shared by the computation requests: they keep every computation finite and exact
(JSON integers stay below 2^53); the sizing core checks what bounds cannot and names the field.
Each bound is defined once: here, or in the core when the core checks it too (MAX_GPU_COUNT,
MAX_CONTEXT_TOKENS, the models' MAX_*); the GET /matrix query parameters and vLLM's flags
(service.sizing.vllm.flags) use these."""

from typing import Annotated, Literal

from msgspec import Meta

from service.sizing.workload import (
    MAX_CONTEXT_TOKENS,
    MAX_GPU_COUNT,
    MAX_SPLITS,
    SEED_OVERHEAD_BYTES,
)

MAX_USERS = 1_000_000
MAX_OVERHEAD_BYTES = 10**15

SlugRef = Annotated[str, Meta(min_length=1, max_length=100, pattern=r"^[^\x00]+$")]
Users = Annotated[int, Meta(ge=1, le=MAX_USERS)]
ContextTokens = Annotated[int, Meta(ge=1, le=MAX_CONTEXT_TOKENS)]
Utilisation = Annotated[float, Meta(gt=0, le=1)]
OptionalUtilisation = Annotated[float, Meta(ge=0.01, le=1)] | None
"""An optional fill (None: the method's or the release's default). At least 1%: the OpenAPI
Litestar renders for an optional field keeps ``minimum`` but drops ``exclusiveMinimum``, so the
bound is inclusive to keep the contract and the server in step."""
OverheadBytes = Annotated[int, Meta(ge=0, le=MAX_OVERHEAD_BYTES)]
GpuCount = Annotated[int, Meta(ge=1, le=MAX_GPU_COUNT)]
Splits = Annotated[list[GpuCount], Meta(min_length=1, max_length=MAX_SPLITS)]
"""GPU counts to try: the core's own bounds (validate_splits), so decoding refuses what the core
would and the spec states them (service.api.openapi restores the item bounds Litestar drops)."""
WorkloadKind = Literal["inference", "training", "lora", "qlora"]

__all__ = [
    "MAX_CONTEXT_TOKENS",
    "MAX_OVERHEAD_BYTES",
    "MAX_USERS",
    "SEED_OVERHEAD_BYTES",
    "ContextTokens",
    "GpuCount",
    "OptionalUtilisation",
    "OverheadBytes",
    "SlugRef",
    "Splits",
    "Users",
    "Utilisation",
    "WorkloadKind",
]
