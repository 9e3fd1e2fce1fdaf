"""Bounds shared by the computation requests: they keep every computation finite and exact
(JSON integers stay below 2^53); the sizing core checks what bounds cannot and names the field."""

from typing import Annotated, Literal

from msgspec import Meta

from service.sizing.workload import MAX_GPU_COUNT, MAX_SPLITS

SlugRef = Annotated[str, Meta(min_length=1, max_length=100, pattern=r"^[^\x00]+$")]
Users = Annotated[int, Meta(ge=1, le=1_000_000)]
ContextTokens = Annotated[int, Meta(ge=1, le=100_000_000)]
Utilisation = Annotated[float, Meta(gt=0, le=1)]
OptionalUtilisation = Annotated[float, Meta(ge=0.01, le=1)] | None
"""An optional fill (None: the method's or the release's default). At least 1%: the OpenAPI
Litestar renders for an optional field keeps ``minimum`` but drops ``exclusiveMinimum``, so the
bound is inclusive to keep the contract and the server in step."""
OverheadBytes = Annotated[int, Meta(ge=0, le=10**15)]
GpuCount = Annotated[int, Meta(ge=1, le=MAX_GPU_COUNT)]
Splits = Annotated[list[GpuCount], Meta(min_length=1, max_length=MAX_SPLITS)]
"""GPU counts to try: the core's own bounds (validate_splits), so decoding refuses what the core
would and the spec states them (service.api.openapi restores the item bounds Litestar drops)."""
WorkloadKind = Literal["inference", "training", "lora", "qlora"]

SEED_OVERHEAD_BYTES = 4_000_000_000
"""The seeds' "about 4 GB of overhead per GPU"."""
