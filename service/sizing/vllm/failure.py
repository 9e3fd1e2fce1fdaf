"""Whether vLLM starts, and the error it prints when it does not, in the order the engine
checks: a max_model_len within the model's, free memory at start-up, a KV pool at all, one
full-length request, CUDA-graph room."""

import msgspec

from service.sizing.models import ModelSpec
from service.sizing.units import GiB
from service.sizing.vllm.calibration import MIN_CUDA_GRAPH_BYTES, STARTUP_USAGE_BYTES
from service.sizing.vllm.config import EngineConfig
from service.sizing.vllm.releases import ReleaseRules


def gib(n: int) -> float:
    """Bytes as GiB to 2 places, as vLLM's log lines print them."""
    return round(n / GiB, 2)


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """The figures of the busiest stage that decide whether the engine starts."""

    total: int
    """What torch sees of the GPU."""
    usable: int
    """total x gpu_memory_utilization."""
    utilisation: float
    kv_bytes: int
    need: int
    """KV bytes one request of max_model_len needs."""
    tokens: int
    """The tokens line's figure."""
    max_model_len: int
    graphs: int
    """The CUDA-graph estimate taken out of the budget (0: none)."""


def length_failure(model: ModelSpec, config: EngineConfig) -> str | None:
    """vLLM refuses a max_model_len above the one it derives from config.json before it
    allocates anything (``ModelConfig``'s ``_get_and_verify_max_len``, vllm/config): the
    catalogue's ``max_context_tokens`` is that ``max_position_embeddings``. The override
    (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1) is not modelled."""
    mml = config.max_model_len
    if mml is None or mml <= model.max_context_tokens:
        return None
    return (
        f"User-specified max_model_len ({mml}) is greater than the derived max_model_len "
        f"(max_position_embeddings={model.max_context_tokens} or model_max_length=None in "
        "model's config.json). To allow overriding this maximum, set the env var "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
    )


def startup_failure(config: EngineConfig, rules: ReleaseRules, o: Outcome) -> str | None:
    """The error vLLM stops with, or None when it starts."""
    mml, usable, total = o.max_model_len, o.usable, o.total
    startup = STARTUP_USAGE_BYTES[
        0 if config.tensor_parallel_size * config.pipeline_parallel_size == 1 else 1
    ]
    v0 = rules.engine == "V0"
    if rules.checks_free_memory and usable > total - startup:
        return (
            f"Free memory on device ({gib(total - startup)}/{gib(total)} GiB) on startup is "
            f"less than desired GPU memory utilization ({o.utilisation}, "
            f"{gib(usable)} GiB)"
        )
    if o.kv_bytes <= 0:
        return (
            "No available memory for the cache blocks (the weights, activation peak and "
            "non-torch memory leave nothing for the KV cache)"
        )
    if not v0 and o.need > o.kv_bytes:
        return (
            f"To serve at least one request with the model's max seq len ({mml}), "
            f"({gib(o.need)} GiB KV cache is needed, which is larger than the available KV cache "
            f"memory ({gib(o.kv_bytes)} GiB)"
        )
    if v0 and o.tokens < mml:
        return (
            f"The model's max seq len ({mml}) is larger than the maximum number of tokens that "
            f"can be stored in KV cache ({o.tokens})"
        )
    if (
        not o.graphs
        and not config.enforce_eager
        and config.device == "cuda"
        and total - usable < MIN_CUDA_GRAPH_BYTES
    ):
        return (
            f"CUDA out of memory capturing CUDA graphs: the KV cache takes the budget up to "
            f"gpu_memory_utilization {o.utilisation}, leaving "
            f"{gib(total - usable)} GiB for the graphs, which this release captures afterwards"
        )
    return None
