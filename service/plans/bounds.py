"""Bounds shared by the computation requests: they keep every computation finite and exact
(JSON integers stay below 2^53); the sizing core checks what bounds cannot and names the field."""

from typing import Annotated, Literal

from msgspec import Meta

SlugRef = Annotated[str, Meta(min_length=1, max_length=100, pattern=r"^[^\x00]+$")]
Users = Annotated[int, Meta(ge=1, le=1_000_000)]
ContextTokens = Annotated[int, Meta(ge=1, le=100_000_000)]
Utilisation = Annotated[float, Meta(gt=0, le=1)]
OverheadBytes = Annotated[int, Meta(ge=0, le=10**15)]
Splits = Annotated[list[int], Meta(min_length=1, max_length=32)]
"""GPU counts; each is checked by the core (positive, at most MAX_GPU_COUNT) and named in a 422,
since the OpenAPI renderer drops constraints on list items."""
WorkloadKind = Literal["inference", "training", "lora", "qlora"]

SEED_OVERHEAD_BYTES = 4_000_000_000
"""The seeds' "about 4 GB of overhead per GPU"."""
