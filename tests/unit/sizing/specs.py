"""Hand-written specs for the core's tests, from docs/reference (models.md, gpus.md).

They are written here rather than read from the catalogue so the core is tested alone.
"""

from typing import Any

from service.sizing.hardware import GpuSpec, LinkSpec
from service.sizing.models import ModelSpec
from service.sizing.plan import Workload

GB = 10**9


def seed_workload(**fields: Any) -> Workload:
    """A Workload on the seeds' capacity basis, the marketed decimal GB ("80 GB x 0.9"); the
    core's default is the driver-visible bytes."""
    return Workload(capacity_basis="marketed", **fields)


NVLINK_4 = LinkSpec(slug="nvlink-4", kind="nvlink", bytes_per_s_per_direction=450 * GB)
NVLINK_5 = LinkSpec(slug="nvlink-5", kind="nvlink", bytes_per_s_per_direction=900 * GB)
NVLINK_3 = LinkSpec(slug="nvlink-3", kind="nvlink", bytes_per_s_per_direction=300 * GB)
# Seed: "PCIe 5.0 x16 at about 64 GB/s" (NVIDIA's 128 GB/s bidirectional, one direction).
PCIE_5 = LinkSpec(slug="pcie-5-x16", kind="pcie", bytes_per_s_per_direction=64 * GB)
PCIE_4 = LinkSpec(slug="pcie-4-x16", kind="pcie", bytes_per_s_per_direction=32 * GB)
NVLINK_C2C = LinkSpec(slug="nvlink-c2c", kind="c2c", bytes_per_s_per_direction=450 * GB)

H100 = GpuSpec(
    slug="h100-sxm",
    vendor="NVIDIA",
    compute_capability=(9, 0),
    memory_bytes=80 * GB,
    driver_visible_bytes=81_559 * 2**20,
    hbm_bytes_per_s=3_350 * GB,
    nvlink=NVLINK_4,
    host_link=PCIE_5,
    fp8=True,
)
H200 = GpuSpec(
    slug="h200",
    vendor="NVIDIA",
    compute_capability=(9, 0),
    memory_bytes=141 * GB,
    driver_visible_bytes=143_771 * 2**20,
    hbm_bytes_per_s=4_800 * GB,
    nvlink=NVLINK_4,
    host_link=PCIE_5,
    fp8=True,
)
B200 = GpuSpec(
    slug="b200",
    vendor="NVIDIA",
    compute_capability=(10, 0),
    memory_bytes=192 * GB,
    driver_visible_bytes=183_359 * 2**20,
    hbm_bytes_per_s=8_000 * GB,
    nvlink=NVLINK_5,
    host_link=PCIE_5,
    fp8=True,
    fp4=True,
)
A100_80 = GpuSpec(
    slug="a100-80gb",
    name="NVIDIA A100 80GB",
    vendor="NVIDIA",
    compute_capability=(8, 0),
    memory_bytes=80 * GB,
    driver_visible_bytes=81_920 * 2**20,
    hbm_bytes_per_s=2_039 * GB,
    nvlink=NVLINK_3,
    host_link=PCIE_4,
)
L40S = GpuSpec(
    slug="l40s",
    vendor="NVIDIA",
    compute_capability=(8, 9),
    memory_bytes=48 * GB,
    driver_visible_bytes=46_068 * 2**20,
    hbm_bytes_per_s=864 * GB,
    host_link=PCIE_4,
    fp8=True,
)
RTX_4090 = GpuSpec(
    slug="rtx-4090",
    name="NVIDIA GeForce RTX 4090",
    vendor="NVIDIA",
    compute_capability=(8, 9),
    peer_to_peer=False,
    memory_bytes=24 * GB,
    driver_visible_bytes=24_564 * 2**20,
    hbm_bytes_per_s=1_008 * GB,
    host_link=PCIE_4,
    fp8=True,
)
ALL_GPUS = (RTX_4090, L40S, A100_80, H100, H200, B200)

# The seed rounds Llama 3.1 70B to "about 70.6 billion parameters".
LLAMA_70B_SEED = ModelSpec(
    slug="llama-3.1-70b",
    total_params=70_600_000_000,
    layers=80,
    hidden_size=8192,
    intermediate_size=28672,
    attention_heads=64,
    kv_heads=8,
    vocab_size=128256,
    max_context_tokens=131072,
)
LLAMA_70B = ModelSpec(
    slug="llama-3.1-70b",
    total_params=70_553_706_496,
    layers=80,
    hidden_size=8192,
    intermediate_size=28672,
    attention_heads=64,
    kv_heads=8,
    vocab_size=128256,
    max_context_tokens=131072,
)
LLAMA_8B = ModelSpec(
    slug="llama-3.1-8b",
    total_params=8_030_261_248,
    layers=32,
    hidden_size=4096,
    intermediate_size=14336,
    attention_heads=32,
    kv_heads=8,
    vocab_size=128256,
    max_context_tokens=131072,
)
DEEPSEEK_V3 = ModelSpec(
    slug="deepseek-v3",
    total_params=671_026_404_352,
    active_params=36_625_603_584,
    layers=61,
    hidden_size=7168,
    intermediate_size=2048,
    attention_heads=128,
    kv_heads=128,
    head_dim=128,
    vocab_size=129280,
    max_context_tokens=163840,
    experts=256,
    experts_per_token=8,
    kv_lora_rank=512,
    qk_rope_head_dim=64,
    q_lora_rank=1536,
    dense_layers=3,
    dense_intermediate_size=18432,
)
GPT_OSS_120B = ModelSpec(
    slug="gpt-oss-120b",
    total_params=116_829_156_672,
    active_params=5_132_849_472,
    layers=36,
    hidden_size=2880,
    intermediate_size=2880,
    attention_heads=64,
    kv_heads=8,
    head_dim=64,
    vocab_size=201088,
    max_context_tokens=131072,
    experts=128,
    experts_per_token=4,
    sliding_window_tokens=128,
    layer_types=("sliding", "full") * 18,
)
QWEN25_7B = ModelSpec(
    slug="qwen2.5-7b",
    total_params=7_615_616_512,
    layers=28,
    hidden_size=3584,
    intermediate_size=18944,
    attention_heads=28,
    kv_heads=4,
    vocab_size=152064,
    max_context_tokens=32768,
)
GEMMA_3_27B = ModelSpec(
    slug="gemma-3-27b",
    total_params=27_009_346_304,
    layers=62,
    hidden_size=5376,
    intermediate_size=21504,
    attention_heads=32,
    kv_heads=16,
    head_dim=128,
    vocab_size=262208,
    max_context_tokens=131072,
    sliding_window_tokens=1024,
    layer_types=(("sliding",) * 5 + ("full",)) * 10 + ("sliding",) * 2,
)

# Qwen3-Next-80B-A3B (service/accuracy/cases/vllm_logs/configs/qwen3-next-80b-a3b-instruct.json,
# with its sources): 48 layers, every 4th gated full attention (16 heads, 2 KV heads of 256, rope
# over 64 of them), the others Gated DeltaNet (16 key heads and 32 value heads of 128, convolution
# width 4); 512 experts of 512, 10 a token, one shared expert. 79,674,391,296 parameters, the
# published total (see tests/catalogue/test_hf_config.py for the count).
QWEN3_NEXT_80B = ModelSpec(
    slug="qwen3-next-80b-a3b",
    total_params=79_674_391_296,
    active_params=3_563_764_480,
    layers=48,
    hidden_size=2048,
    intermediate_size=512,
    attention_heads=16,
    kv_heads=2,
    head_dim=256,
    vocab_size=151_936,
    max_context_tokens=262_144,
    experts=512,
    experts_per_token=10,
    layer_types=("linear", "linear", "linear", "full") * 12,
    linear_key_heads=16,
    linear_value_heads=32,
    linear_key_head_dim=128,
    linear_value_head_dim=128,
    linear_conv_kernel=4,
    rotary_dim=64,
)
# Mixtral 8x7B, the catalogue's row (service/catalogue/data/models.json): 32 layers of 8 experts
# of width 14,336, 2 a token; active_params excludes the input embedding.
MIXTRAL_8X7B = ModelSpec(
    slug="mixtral-8x7b",
    total_params=46_702_792_704,
    active_params=12_748_853_248,
    layers=32,
    hidden_size=4096,
    intermediate_size=14336,
    attention_heads=32,
    kv_heads=8,
    vocab_size=32000,
    max_context_tokens=32768,
    experts=8,
    experts_per_token=2,
)
