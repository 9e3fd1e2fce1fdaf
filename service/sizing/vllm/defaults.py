"""vLLM's defaults for the flags a request leaves unset (``engine_defaults``) and what torch
sees of the GPU."""

import msgspec

from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.units import GiB
from service.sizing.vllm.calibration import DEFAULT_DRIVER_RESERVE_BYTES
from service.sizing.vllm.config import EngineConfig
from service.sizing.vllm.releases import release_rules


class EngineDefaults(msgspec.Struct, frozen=True, kw_only=True):
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    gpu_memory_utilization: float
    """What the budget used: the request's, else the release's default
    (``ReleaseRules.gpu_memory_utilization``)."""
    rule: str


LARGEST_DEFAULTS_BYTES = 160 * GiB
"""vLLM 0.28.0 added a top tier to ``EngineArgs.get_batch_defaults`` ("for GPUs like B200/B300
with >= 160GB memory, use the largest defaults"): ``device_memory >= 160 * GiB_bytes`` gives
max_num_batched_tokens 16,384 and max_num_seqs 1,024 to both the API server and the LLM class
(read in the 0.28.0 wheel's ``vllm/engine/arg_utils.py``; 0.27.0's top tier was >= 70 GiB and
not an A100, and 0.29-0.31 keep 0.28's). The device memory is torch's total."""


def engine_defaults(
    model: ModelSpec, gpu_total_bytes: int, gpu: GpuSpec, config: EngineConfig
) -> EngineDefaults:
    """vLLM's defaults (V1 ``EngineArgs._set_default_args``; V0 scheduler config): GPUs with at
    least 70 GiB that are not A100s get the larger batched-token budget and 1024 sequences, and
    from 0.28 GPUs with at least 160 GiB the largest (``LARGEST_DEFAULTS_BYTES``);
    the utilisation is the release's (``ReleaseRules.gpu_memory_utilization``) unless given.
    vLLM tells an A100 by its device name ("a100" not in ``get_device_name().lower()``): the
    catalogue's name of the GPU ("NVIDIA A100 80GB") stands for it."""
    rules = release_rules(config.era, config.release)
    utilisation = config.gpu_memory_utilization
    if utilisation is None:
        utilisation = rules.gpu_memory_utilization
    mml = config.max_model_len or model.max_context_tokens
    if rules.engine == "V0":
        tokens = config.max_num_batched_tokens or max(mml, 2048)
        return EngineDefaults(
            max_model_len=mml,
            max_num_batched_tokens=tokens,
            max_num_seqs=config.max_num_seqs or 256,
            gpu_memory_utilization=utilisation,
            rule="V0 without chunked prefill: max_num_batched_tokens = max(max_model_len, 2048), "
            "max_num_seqs 256",
        )
    big = gpu_total_bytes >= 70 * GiB and "a100" not in gpu.name.lower()
    if gpu_total_bytes >= LARGEST_DEFAULTS_BYTES and rules.largest_batch_tier:
        tokens, seqs = 16384, 1024
        why = "a GPU with >= 160 GiB (vLLM 0.28 on)"
    elif big:
        tokens, seqs = (8192, 1024) if config.usage == "api_server" else (16384, 1024)
        why = "a GPU with >= 70 GiB that is not an A100"
    else:
        tokens, seqs = (2048, 256) if config.usage == "api_server" else (8192, 256)
        why = "a GPU under 70 GiB or an A100"
    who = "vllm serve" if config.usage == "api_server" else "the LLM class"
    return EngineDefaults(
        max_model_len=mml,
        max_num_batched_tokens=config.max_num_batched_tokens or tokens,
        max_num_seqs=config.max_num_seqs or seqs,
        gpu_memory_utilization=utilisation,
        rule=f"{who} on {why}: max_num_batched_tokens {tokens}, max_num_seqs {seqs}",
    )


def torch_visible_bytes(gpu: GpuSpec) -> int:
    """What torch.cuda.mem_get_info reports as total: the catalogue's measured figure, else
    nvidia-smi's total less the H100's driver reserve."""
    if gpu.torch_visible_bytes:
        return gpu.torch_visible_bytes
    smi = gpu.driver_visible_bytes or gpu.memory_bytes
    return smi - DEFAULT_DRIVER_RESERVE_BYTES
