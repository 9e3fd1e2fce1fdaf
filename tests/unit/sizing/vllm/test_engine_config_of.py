"""The one request-to-EngineConfig mapping (service.sizing.vllm.plan.engine_config_of): /plan's vllm
options and a /verify body reach the engine under vLLM's flag names."""

from service.api.verify import VerifyRequest
from service.sizing.formats import FORMATS
from service.sizing.vllm.config import EngineConfig
from service.sizing.vllm.options import VllmOptions
from service.sizing.vllm.plan import engine_config, engine_config_of

BF16 = FORMATS["bf16"]


def test_every_vllm_option_reaches_the_engine() -> None:
    # Each shared flag away from its default: a flag the mapping dropped would keep the
    # engine's default and fail here.
    options = VllmOptions(
        max_model_len=4096,
        max_num_seqs=64,
        max_num_batched_tokens=4096,
        block_size=32,
        kv_cache_dtype="fp8",
        quantization="fp8",
        dtype="float32",
        usage="llm_class",
        enforce_eager=True,
        compile_cache="warm",
        model_runner="v2",
        pipeline_parallel_size=2,
        int4_group_size=64,
        cpu_offload_bytes=2**30,
        enable_lora=True,
        max_loras=4,
        max_lora_rank=64,
        lora_embeddings=True,
    )
    config = engine_config(options, 4, 8192, 0.8, BF16, BF16)
    assert (config.tensor_parallel_size, config.gpu_memory_utilization) == (4, 0.8)
    assert (config.max_model_len, config.max_num_seqs, config.max_num_batched_tokens) == (
        4096,
        64,
        4096,
    )
    assert (config.block_size, config.kv_cache_dtype, config.quantization) == (32, "fp8", "fp8")
    assert (config.dtype, config.usage, config.enforce_eager) == ("float32", "llm_class", True)
    assert (config.compile_cache, config.model_runner) == ("warm", "v2")
    assert (config.pipeline_parallel_size, config.int4_group_size) == (2, 64)
    assert config.cpu_offload_bytes == 2**30
    assert (config.enable_lora, config.max_loras, config.max_lora_rank) == (True, 4, 64)
    assert config.lora_embeddings


def test_a_verify_body_reaches_the_engine_and_given_fields_win() -> None:
    body = VerifyRequest(
        log="x",
        model="llama-3.1-8b",
        gpu="h100",
        tensor_parallel_size=2,
        max_model_len=2048,
        gpu_memory_utilization=0.5,
        block_size=1,
        max_num_seqs=8,
        quantization="awq",
    )
    config = engine_config_of(body, quantization="none")
    assert (config.tensor_parallel_size, config.max_model_len) == (2, 2048)
    assert (config.gpu_memory_utilization, config.block_size, config.max_num_seqs) == (0.5, 1, 8)
    assert config.quantization == "none"  # given overrides the body's own field
    # Fields the body does not have keep the engine's defaults.
    assert config.usage == EngineConfig().usage == "api_server"
