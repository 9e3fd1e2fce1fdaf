"""Each engine's KV pool under its own memory rule, on the vLLM method's memory terms (weights,
activation peak, non-torch memory, the GPU's total) and at its bytes per token: the serving
model's unit, a token of every KV layer.

- vLLM: the vLLM method's pool (utilisation x total - weights - activation peak - non-torch).
- SGLang: ``ModelRunner.profile_max_num_token`` (python/sglang/srt/model_executor/
  model_runner.py): ``rest_memory = available_gpu_memory - total_gpu_memory x (1 -
  mem_fraction_static)``, where ``total_gpu_memory`` is the free memory once the distributed
  groups are up (before the weights) and ``available_gpu_memory`` the free memory after the
  weights; the pool is ``rest_memory // cell_size`` (KV heads x head dim x layers x 2 x dtype
  bytes, or MLA's latent plus rope dims x layers). So: fraction x (total - non-torch) - weights;
  activations and CUDA graphs live in the 1 - fraction left over. gpt-oss runs it with one pool
  for every layer (``server_args.py``: ``disable_hybrid_swa_memory = True`` for
  GptOssForCausalLM), the unit here; a linear-attention model's Mamba pool is not carved out.
- TensorRT-LLM: ``KvCacheCreator._cal_max_tokens`` (tensorrt_llm/_torch/pyexecutor/_util.py):
  ``(total - peak + tmp KV) x free_gpu_memory_fraction``, the peak being the weights, the
  warm-up's activations and the memory outside torch; ``max(max_tokens, 0)``, so the pool does
  not wait on vLLM's budget.
"""

import re

import msgspec

from service.sizing.serving.efficiency import Engine
from service.sizing.units import GiB
from service.sizing.vllm.predict import EnginePrediction
from service.sizing.vllm.releases import release_of

TRTLLM_FREE_MEMORY_FRACTION = 0.9
"""trtllm-serve's --kv_cache_free_gpu_memory_fraction default: the KV cache takes 0.9 of the
memory left free once the weights are loaded and a warm-up step has run (its KvCacheConfig's
free_gpu_memory_fraction), where vLLM takes 0.9 of the whole GPU and then subtracts them."""

SGLANG_GENERAL_HEURISTIC = (0, 5, 3)
"""The first release whose default mem_fraction_static comes from chunked_prefill_size and
cuda_graph_max_bs (sglang PR #10975, "Use more general heuristics to set the default value of
--mem-fraction-static", 27 September 2025, with PR #11076's 512 MiB and tp x pp / 8 GiB):
taken as 0.5.3, the first release after them; 0.5.3rc0 (PR #10468, 15 September) and earlier
keep PR #7054's table (``SGLANG_RESERVED_GIB_BEFORE_0_5_3``). Inferred from the dates."""

SGLANG_RESERVED_GIB_BEFORE_0_5_3: tuple[tuple[float, float, float], ...] = (
    (20, 2.8, 0.1),
    (35, 2.8, 0.1),
    (90, 9.5, 0.5),
    (100, 12, 0.5),
    (160, 12, 0.5),
)
"""Before 0.5.3 (``server_args.py`` of PR #7054): for a GPU under the first figure (GiB of
nvidia-smi total), reserved = (second + third x tp x pp) GiB: T4/4080 and A10/4090 2.8 + 0.1 per
GPU, H100/A100 9.5 + 0.5, H20 and H200 12 + 0.5; larger GPUs (B200, MI300) 32 GiB."""
SGLANG_RESERVED_GIB_LARGEST_BEFORE_0_5_3 = 32

SGLANG_GPU_DEFAULTS: tuple[tuple[float, int, int, int], ...] = (
    (20, 2048, 8, 8),
    (35, 2048, 24, 80),
    (60, 4096, 32, 160),
    (90, 8192, 256, 512),
    (160, 8192, 256, 512),
)
"""0.5.3 on (``ServerArgs._handle_gpu_memory_settings``): for a GPU under the first figure (GiB
of nvidia-smi total), chunked_prefill_size and cuda_graph_max_bs at TP < 4 and at TP >= 4;
larger GPUs (B200, MI300X, MI355X) 16,384 and 512."""
SGLANG_GPU_DEFAULTS_LARGEST = (16384, 512)

SGLANG_AITER_LONG_CONTEXT_SHARE = 0.85
"""``server_args.py``: with ``attention_backend == "aiter"`` and a context over 8,192 tokens,
``mem_fraction_static *= 0.85`` (given or default)."""
SGLANG_AITER_LONG_CONTEXT = 8192


class EngineMemory(msgspec.Struct, frozen=True, kw_only=True):
    """What an engine's memory rule reads of a deployment beyond the vLLM method's terms."""

    gpu_mib: float
    """nvidia-smi's total (what SGLang's ``get_device_memory_capacity`` reads), MiB."""
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    release: str | None = None
    """The engine's release ("v0.5.3rc0"); None: the current ones."""
    fraction: float | None = None
    """--mem-fraction-static (SGLang) or --kv_cache_free_gpu_memory_fraction (TensorRT-LLM);
    None: the engine's default."""
    chunked_prefill_size: int | None = None
    cuda_graph_max_bs: int | None = None
    attention_backend: str | None = None
    context_tokens: int = 0
    """SGLang's context_len: the model's maximum context."""


def kv_bytes_per_token(p: EnginePrediction) -> float:
    """The pool's bytes per token: the vLLM method's pool over its tokens, or, where it has no
    pool, a block across the rank's layer groups over the block's tokens (the same figure:
    the tokens line counts blocks per group x block_size)."""
    if p.kv_cache_tokens > 0:
        return p.per_gpu.kv_cache_bytes / p.kv_cache_tokens
    return p.per_gpu.block_bytes * max(p.kv_groups, 1) / p.block_size


def _general_heuristic(release: str | None) -> bool:
    """Whether the release sets mem_fraction_static by 0.5.3's rule (a pre-release of 0.5.3,
    "0.5.3rc0", comes before it)."""
    version = release_of(release) if release else None
    if version is None:
        return True
    if version == SGLANG_GENERAL_HEURISTIC:
        return re.search(r"(rc|dev|a|b)\d*$", release or "") is None
    return version > SGLANG_GENERAL_HEURISTIC


def sglang_reserved_mib(m: EngineMemory) -> float:
    """What SGLang's default keeps out of mem_fraction_static (activations, CUDA graphs), MiB:
    0.5.3 on, 512 + 1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + tp x pp / 8
    GiB, at least 10 GiB on a GPU over 60 GiB; before it, the table by GPU memory."""
    parallel = m.tensor_parallel * m.pipeline_parallel
    gib = m.gpu_mib / 1024
    if not _general_heuristic(m.release):
        for below, base, per_gpu in SGLANG_RESERVED_GIB_BEFORE_0_5_3:
            if gib < below:
                return (base + per_gpu * parallel) * 1024
        return SGLANG_RESERVED_GIB_LARGEST_BEFORE_0_5_3 * 1024
    chunk, small_tp, large_tp = next(
        ((c, s, big) for below, c, s, big in SGLANG_GPU_DEFAULTS if gib < below),
        (*SGLANG_GPU_DEFAULTS_LARGEST, SGLANG_GPU_DEFAULTS_LARGEST[1]),
    )
    chunk = m.chunked_prefill_size or chunk
    graphs = m.cuda_graph_max_bs or (small_tp if m.tensor_parallel < 4 else large_tp)
    reserved = 512 + 1.5 * max(chunk, 2048) + 2 * graphs + parallel / 8 * 1024
    return max(reserved, 10 * 1024) if gib > 60 else reserved


def sglang_mem_fraction_static(m: EngineMemory) -> float:
    """--mem-fraction-static, else SGLang's default round((gpu - reserved) / gpu, 3); x 0.85
    with the aiter backend and a context over 8,192 tokens."""
    fraction = m.fraction
    if fraction is None:
        fraction = round((m.gpu_mib - sglang_reserved_mib(m)) / m.gpu_mib, 3)
    if m.attention_backend == "aiter" and m.context_tokens > SGLANG_AITER_LONG_CONTEXT:
        fraction *= SGLANG_AITER_LONG_CONTEXT_SHARE
    return fraction


def sglang_kv_bytes(p: EnginePrediction, fraction: float) -> float:
    """rest_memory: fraction x the free memory before the weights (the total less the CUDA
    context and communicator buffers, the vLLM method's non-torch figure) - the weights."""
    g = p.per_gpu
    return fraction * (g.total_bytes - g.non_torch_bytes) - g.weights_bytes


def trtllm_kv_bytes(p: EnginePrediction, fraction: float | None = None) -> float:
    """fraction x (total - weights - the warm-up's activations - memory outside torch)."""
    g = p.per_gpu
    free = g.total_bytes - g.weights_bytes - g.activation_bytes - g.non_torch_bytes
    return (fraction or TRTLLM_FREE_MEMORY_FRACTION) * free


def engine_kv_bytes(engine: Engine, p: EnginePrediction, m: EngineMemory) -> float:
    """The bytes the engine gives its KV pool on one GPU (negative: none)."""
    if engine == "sglang":
        return sglang_kv_bytes(p, sglang_mem_fraction_static(m))
    if engine == "tensorrt-llm":
        return trtllm_kv_bytes(p, m.fraction)
    return float(p.per_gpu.kv_cache_bytes)


def kv_pool_tokens_for_engine(engine: Engine, p: EnginePrediction, m: EngineMemory) -> int:
    """The KV pool's tokens under the engine's own memory rule: the vLLM method's for vLLM;
    SGLang's and TensorRT-LLM's from their memory terms, whether or not vLLM would start."""
    if engine == "vllm":
        return p.kv_cache_tokens
    return max(int(engine_kv_bytes(engine, p, m) // kv_bytes_per_token(p)), 0)


def engine_failure(engine: Engine, p: EnginePrediction, m: EngineMemory) -> str | None:
    """Why the engine does not start (vLLM: the vLLM method's failure; another engine: its
    rule leaves no KV pool), or None."""
    if engine == "vllm":
        return None if p.starts else p.failure
    if kv_pool_tokens_for_engine(engine, p, m) > 0:
        return None
    g, left = p.per_gpu, engine_kv_bytes(engine, p, m)
    weights = f"{g.weights_bytes / GiB:.2f} GiB of weights"
    if engine == "sglang":
        rule = (
            f"mem_fraction_static {sglang_mem_fraction_static(m):.3f} x "
            f"{(g.total_bytes - g.non_torch_bytes) / GiB:.2f} GiB free less {weights}"
        )
    else:
        rule = (
            f"{m.fraction or TRTLLM_FREE_MEMORY_FRACTION} x the {g.total_bytes / GiB:.2f} GiB "
            f"less {weights}, {g.activation_bytes / GiB:.2f} GiB of activations and "
            f"{g.non_torch_bytes / GiB:.2f} GiB outside torch"
        )
    return f"{engine}'s memory rule leaves no KV pool: {rule} is {left / GiB:.2f} GiB"
