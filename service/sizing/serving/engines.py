"""What engines other than vLLM run by default, where the vLLM method's release defaults do not
apply: (max running sequences, tokens per step).

- SGLang: max_running_requests unset is bounded by its token pool; chunked_prefill_size 8,192
  on 80 GB+ GPUs (sglang ``server_args.py`` defaults);
- trtllm-serve: --max_batch_size 2048, --max_num_tokens 8192 (its CLI defaults).

The KV pool is the vLLM method's for every engine. The accuracy harness and the /speed and
traffic answers read these figures from here.
"""

from service.sizing.serving.efficiency import Engine
from service.sizing.serving.loop import EngineLimits

ENGINE_DEFAULT_LIMITS: dict[Engine, tuple[int, int]] = {
    "sglang": (4096, 8192),
    "tensorrt-llm": (2048, 8192),
}


def limits_for_engine(
    limits: EngineLimits,
    engine: Engine,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
) -> EngineLimits:
    """vLLM's limits (``deploy.engine_limits``) for vLLM; another engine's defaults for the
    others, unless the request names them."""
    if engine not in ENGINE_DEFAULT_LIMITS:
        return limits
    seqs, tokens = ENGINE_DEFAULT_LIMITS[engine]
    return EngineLimits(
        max_num_seqs=max_num_seqs or seqs,
        max_num_batched_tokens=max_num_batched_tokens or tokens,
        kv_pool_tokens=limits.kv_pool_tokens,
    )
