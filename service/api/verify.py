"""POST /verify: a pasted vLLM start-up log (and optionally nvidia-smi CSV) against the plan.

Parse, look the model and GPU up, predict with the vLLM method for the configuration the log
echoes (the request's flags fill what it does not), answer the differences with likely causes.
Text with none of the expected lines is a 422 listing them.
"""

from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, post
from litestar.params import JSONBody
from msgspec import Meta

from service.api.cached_catalogue import SNAPSHOT_ONLY, request_snapshot
from service.api.guards import open_unless_required
from service.api.problems import problems
from service.catalogue.memory import Snapshot
from service.plans.threads import off_loop
from service.schemas.bounds import OptionalUtilisation, SlugRef, Users
from service.sizing.vllm.config import (
    CompileCache,
    KvCacheDtype,
    ModelRunner,
    Quantization,
)
from service.sizing.vllm.flags import (
    BatchedTokens,
    BlockSize,
    Loras,
    ModelLen,
    Seqs,
    TensorParallel,
)
from service.sizing.vllm.lora import LoraRank
from service.sizing.vllm.plan import engine_config_of
from service.sizing.vllm.releases import LATEST_ERA, EngineEra
from service.verify.compare import VerifyAnswer, compare
from service.verify.startup_log import parse_startup_log


class VerifyRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    log: Annotated[str, Meta(min_length=1, max_length=2_000_000)]
    """The engine's start-up log, pasted as is."""
    model: SlugRef
    """The catalogue model the log is for (Llama 3.3 70B: llama-3.1-70b, same shapes)."""
    gpu: SlugRef
    nvidia_smi: Annotated[str, Meta(max_length=100_000)] | None = None
    """Optional ``nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv``."""
    concurrency: Users = 8
    """Users the plan must hold at once (KV tokens / context below it: the plan is short)."""
    tensor_parallel_size: TensorParallel = 1
    max_model_len: ModelLen | None = None
    gpu_memory_utilization: OptionalUtilisation = None
    """Default: what the log echoes, else the default of the release it prints (0.92 from vLLM
    0.20, 0.9 before)."""
    quantization: Quantization | None = None
    """Default: what the log echoes (quantization=...), else none (16-bit)."""
    int4_group_size: Literal[32, 64, 128] = 128
    """quantization w4a16-experts: the checkpoint's group size (not in the log)."""
    compile_cache: CompileCache = "cold"
    """Model Runner V2: default unless the log shows torch.compile loading from its cache
    (warm) or compiling (cold)."""
    model_runner: ModelRunner = "auto"
    """0.23-0.28: v2 when the log says "Using V2 Model Runner" (read from it), original when
    VLLM_USE_V2_MODEL_RUNNER=0 was set; auto: the release's rule for the model's class."""
    kv_cache_dtype: KvCacheDtype = "auto"
    block_size: BlockSize = 16
    max_num_batched_tokens: BatchedTokens | None = None
    max_num_seqs: Seqs | None = None
    engine_version: EngineEra | None = None
    """Default: from the version the log prints, else the current releases' (v2-all)."""
    enable_lora: bool = False
    """Default: what the log shows (--enable-lora, or the LoRA manager's PunicaWrapper line)."""
    max_loras: Loras = 1
    max_lora_rank: LoraRank = 16
    lora_embeddings: bool = False
    """The model's vLLM class puts LoRA on its embedding and LM head (Llama, Mistral,
    Mixtral; not Qwen2/Qwen3)."""


@post(
    "/verify",
    opt=SNAPSHOT_ONLY,
    guards=[open_unless_required("viewer")],
    responses=problems(400, 401, 403, 404, 413, 422),
    summary="Check a vLLM start-up log against the plan for the configuration it echoes",
    status_code=200,
)
async def verify_endpoint(
    request: Request[Any, Any, Any], data: JSONBody[VerifyRequest]
) -> VerifyAnswer:
    try:
        snapshot = await request_snapshot(request)
    except Exception:  # no catalogue yet and no database: a bad log is still its 422 first
        await off_loop(parse_startup_log, data.log, data.nvidia_smi)
        raise
    if len(data.log) + len(data.nvidia_smi or "") <= INLINE_LOG_CHARS:
        return _verify(snapshot, data)
    return await off_loop(_verify, snapshot, data)


INLINE_LOG_CHARS = 40_000
"""A paste up to this long is checked on the event loop: a typical 200-line start-up log
(33,000 characters) parses in about 0.7 ms, about what the hop to a worker thread and back
costs; a longer one (up to 2,000,000 characters) goes to a worker thread, so that no paste
holds up the other requests for more than about a millisecond."""


def _verify(catalogue: Snapshot, data: VerifyRequest) -> VerifyAnswer:
    """Parse, look up, predict and compare, in one worker thread (the snapshot is immutable):
    the log first, so a log without any expected line is a 422 whatever the names say."""
    parsed = parse_startup_log(data.log, data.nvidia_smi)
    model = catalogue.model_spec(data.model)
    gpu = catalogue.gpu_spec(data.gpu)
    # The request's flags by their names; its quantization (none: what the log echoes) is
    # compare's to resolve against the log.
    base = engine_config_of(data, era=LATEST_ERA, quantization=data.quantization or "none")
    return compare(
        model,
        gpu,
        parsed,
        base,
        users=data.concurrency,
        quantization=data.quantization,
        era=data.engine_version,
    )


verify_handlers = [verify_endpoint]
