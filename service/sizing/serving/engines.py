"""What engines other than vLLM run by default, where the vLLM method's release defaults do not
apply: (max running sequences, tokens per step).

- SGLang: max_running_requests unset is bounded by its token pool; chunked_prefill_size 8,192
  (sglang ``server_args.py``'s default on 60-160 GiB GPUs, taken for every GPU: its 16,384
  above, B200 and MI300X, changed no calibration figure, docs/serving.md);
- trtllm-serve: --max_batch_size 2048, --max_num_tokens 8192 (its CLI defaults).

The KV pool is each engine's own (``kv_pools``). The accuracy harness and the /speed and
traffic answers read these figures from here.
"""

from service.sizing.serving.efficiency import Engine
from service.sizing.serving.loop import EngineLimits
from service.sizing.vllm.releases import release_of

ENGINE_DEFAULT_LIMITS: dict[Engine, tuple[int, int]] = {
    "sglang": (4096, 8192),
    "tensorrt-llm": (2048, 8192),
}


def limits_for_engine(
    limits: EngineLimits,
    engine: Engine,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    kv_pool_tokens: int | None = None,
) -> EngineLimits:
    """vLLM's limits (``deploy.engine_limits``) for vLLM; another engine's defaults for the
    others, unless the request names them; ``kv_pool_tokens``: the engine's own pool
    (``kv_pools.kv_pool_tokens_for_engine``), else vLLM's."""
    if engine not in ENGINE_DEFAULT_LIMITS:
        return limits
    seqs, tokens = ENGINE_DEFAULT_LIMITS[engine]
    return EngineLimits(
        max_num_seqs=max_num_seqs or seqs,
        max_num_batched_tokens=max_num_batched_tokens or tokens,
        kv_pool_tokens=limits.kv_pool_tokens if kv_pool_tokens is None else kv_pool_tokens,
    )


OVERLAPPED_ENGINES: frozenset[Engine] = frozenset({"sglang", "tensorrt-llm"})
"""Engines whose scheduler overlaps the GPU by default: SGLang's overlap scheduler (on unless
--disable-overlap-schedule, ``server_args.py``) and TensorRT-LLM's PyTorch backend
(``disable_overlap_scheduler`` False by default in its LLM API options)."""

VLLM_ASYNC_DEFAULT_RELEASE = (0, 14, 0)
"""vLLM turned async scheduling on by default with vllm-project/vllm#27614, the last item of
its async-scheduling plan (vllm-project/vllm#27679, closed January 2026): taken as from 0.14
(the release after that merge; inferred from the dates, not re-read in a wheel)."""


def async_scheduling(engine: Engine, release: str | None = None, flag: bool = False) -> bool:
    """Whether the engine overlaps its host work with the GPU: another engine by default; vLLM
    when the serve command says --async-scheduling or the release turns it on."""
    if engine in OVERLAPPED_ENGINES or flag:
        return True
    version = release_of(release) if release else None
    return version is not None and version >= VLLM_ASYNC_DEFAULT_RELEASE


DECODE_ONLY_GRAPH_ENGINES: frozenset[Engine] = frozenset({"sglang", "tensorrt-llm"})
"""Engines whose CUDA graphs hold decode batches only, so that every step with prompt tokens
runs eagerly: SGLang replays a graph only for a decode-like forward mode
(``model_runner.py``: ``forward_mode.is_cuda_graph()``, decode, target-verify and idle; its
docs' "Piecewise CUDA Graph" page: "SGLang's regular CUDA graph optimization only captures the
decoding step", the piecewise graphs for prefill being opt-in, ``--enable-piecewise-cuda-graph``,
in the releases measured here), and TensorRT-LLM's PyTorch backend replays a graph only for a
batch with no context request (``_torch/pyexecutor/scheduler.py``: ``ScheduledRequests.
can_run_cuda_graph`` is ``not self.context_requests``; its ``DecodingCUDAGraphRunner``).
vLLM V1 is not among them: its piecewise graphs hold mixed and prefill steps up to the largest
capture size (512 tokens), and a larger step is compute-bound."""


def eager_prefill(engine: Engine) -> bool:
    """Whether ``engine`` runs a step with prompt tokens outside a CUDA graph."""
    return engine in DECODE_ONLY_GRAPH_ENGINES
