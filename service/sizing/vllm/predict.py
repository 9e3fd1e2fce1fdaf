"""Engine-faithful sizing: predict what vLLM reports at start-up (the seeds' step 6 without a GPU).

The budget, per GPU (vLLM ``gpu_worker.determine_available_memory`` / V0 ``worker``):

    kv_bytes = torch-visible total x gpu_memory_utilization
               - weights as loaded on this rank
               - activation peak of the profiling pass (max_num_batched_tokens + sampler)
               - non-torch memory (CUDA context, NCCL / custom all-reduce buffers with TP > 1)
               - CUDA-graph memory (only in the engine era that counts it)

The KV pool then becomes blocks (``vllm/v1/core/kv_cache_utils.py`` and
``vllm/v1/kv_cache_interface.py``, as read in docs/reference/models.md): a page holds
``block_size`` tokens of one layer; full-attention and sliding-window layers are grouped in
equal-size groups (hybrid manager) and each KV tensor is shared by one layer of every group, so a
block costs ``group_size x page``; MLA pages hold one latent per token, whole on every TP rank;
a linear-attention layer (Gated DeltaNet) takes one page per request for its recurrent state,
the attention block being raised until a page holds it (``hybrid_block_size``).
The count is the minimum over pipeline stages (every TP rank of a stage is alike).

What is exact here: the page and block arithmetic, the log lines' formulas, the default flags.
Derived from vLLM's source: V0's activation peak (``v0_activation_bytes``), Model Runner V2's
warm peak, CPU offload. What is FITTED (documented constants below, fitted on the real logs in
tests/data/vllm_logs, reported case by case by ``python -m service accuracy``): the
torch-visible total per GPU, the V1 sampler factors, V2's first-start peak and the non-torch
memory. Weights as loaded follow the checkpoint's layout
(16-bit, FP8 linear layers, MXFP4 experts in the padded per-rank layout of the MoE backend
vLLM picks: Marlin, triton_kernels or FlashInfer; see ``mxfp4_expert_bytes``).
"""

import re
from typing import Literal

import msgspec

from service.sizing.errors import SizingError, require
from service.sizing.formats import FORMATS, NumberFormat
from service.sizing.hardware import GpuSpec
from service.sizing.kv import kv_shape, linear_state_values
from service.sizing.models import LayerType, ModelSpec, validate_model
from service.sizing.parallel import even_shares, tensor_parallel_problem
from service.sizing.units import GiB, ceil_div

EngineEra = Literal["v0", "v1-0.10", "v1-0.11", "v1-0.19", "v1-cudagraph", "v2-runner", "v2-all"]
"""How a vLLM release accounts memory at start-up (``era_of_version`` maps a release to one):
v0: the V0 engine (0.5-0.7, profiling without chunked prefill); v1-0.10: the V1 engine in 0.10.0
and 0.10.1 (a small sampler peak); v1-0.11: the V1 engine in 0.8, 0.9 and 0.10.2-0.16 (the dummy
sampler's fp32 logits dominate the activation peak); v1-0.19: 0.17-0.20 (a smaller sampler peak,
all-reduce buffers counted as non-torch memory; CUDA-graph memory estimated but not subtracted);
v1-cudagraph: 0.21 and 0.22, which subtract the estimated CUDA-graph memory from the KV budget
("default since v0.21.0" in its log) and print the tokens line as concurrency x max_model_len;
v2-runner: 0.23-0.28, where the models each release picks (``runs_on_model_runner_v2``) run on
Model Runner V2 (``model_runner.py``, "Using V2 Model Runner"), whose budget has no graph term,
while the others keep the original runner and its 0.21 accounting (the 0.27.1 logs: Qwen3-32B
and Qwen3-8B on V2, Qwen3-235B-A22B on ``gpu_model_runner.py``);
v2-all: 0.29 and later, every model on Model Runner V2 (vLLM PR #53183, "Use MRV2 for all models
by default", which dropped the per-model gate; the 0.29 gpt-oss-20b log on XPU runs on it)."""

Quantization = Literal["none", "fp8", "mxfp4", "awq", "gptq", "w4a16-experts", "bnb-nf4"]
BnbAbsmax = Literal["nested", "fp32"]
"""How vLLM keeps a bitsandbytes 4-bit matrix's block scales after loading (``bnb_matrix_bytes``):
nested, the checkpoint's double quantisation (a uint8 per 64 values and an fp32 per 256 of
those); fp32, one fp32 per 64 values (0.9.2 on dequantizes the nested scales while loading)."""
KvCacheDtype = Literal["auto", "fp8"]
Dtype = Literal["auto", "bfloat16", "float16", "float32"]
CompileCache = Literal["cold", "warm"]
ModelRunner = Literal["auto", "v2", "original"]
Device = Literal["cuda", "xpu"]
"""The vLLM platform: cuda (NVIDIA, and AMD through ROCm, told apart by the GPU) or xpu (Intel
GPUs, the vllm/vllm-openai-xpu images)."""
UsageContext = Literal["api_server", "llm_class"]

DEFAULT_ERA: EngineEra = "v1-0.11"
"""EngineConfig's era when none is given (the core's worked examples use it)."""
LATEST_ERA: EngineEra = "v2-all"
"""The era of the current releases: what the API assumes when no version is given."""

# --- fitted constants (see the module docstring; every one is named in the accuracy report) ---
DEFAULT_DRIVER_RESERVE_BYTES = 494_000_000
"""nvidia-smi total minus what torch sees (mem_get_info): H100 81,559 MiB = 79.65 GiB against
79.18-79.22 GiB in real logs (llm-d table, vLLM PR #10511), i.e. about 0.46 GiB."""
DRIVER_RESERVE_BYTES: dict[str, int] = {
    "a100-80gb": 805_000_000,
    "a100-40gb": 655_000_000,
    "h200": 634_975_683,
    "l40s": 728_298_946,
    "rtx-4090": 0,
    "mi300x": -314_000_000,
}
"""A100 80GB: two dennislee22 logs at utilisation 0.5 and 0.25 pin the total to 79.25 GiB
(0.25 x total = 24.83 - 5.01 + 0 -> 79.24-79.32 GiB), 0.75 GiB under nvidia-smi's 80 GiB.
A100 40GB: torch's "total capacity of 39.39 GiB" in the CUDA OOM of vLLM issue #2363, 0.61 GiB
under nvidia-smi's 40,960 MiB. H200: torch's 139.81 GiB in the 2x H200 Qwen3-Next log of
vLLM 0.10.2 ("Free memory on device (139.21/139.81 GiB) on startup"). L40S: torch's 44.31 GiB
in vLLM issue #15196 ("total_gpu_memory (44.31GiB)", 0.68 GiB under nvidia-smi's 46,068 MiB;
the Llama 3.2 1B log's "Requested memory: 0.90 (util), 39.88 GiB" gives the same). RTX 4090:
torch sees all of nvidia-smi's 24,564 MiB (23.99 GiB in the WSL2 Qwen2.5-0.5B log of 0.27.1;
the RunPod Qwen3-8B budget adds up with the same total). MI300X: ROCm's torch
reports 191.98 GiB (the MI300X Llama 3.1 8B runs on vLLM 0.28), 0.29 GiB MORE than the
catalogue's driver figure (196,288 MiB), hence the negative reserve."""
SAMPLER_FACTOR: dict[EngineEra, float] = {
    "v1-0.10": 2.87,
    "v1-0.11": 9.71,
    "v1-0.19": 3.9,
    "v1-cudagraph": 3.9,
    "v2-runner": 3.9,
    "v2-all": 3.9,
}
"""V1 activation peak = factor x max_num_seqs x vocab x 4 B (the dummy sampler pass over fp32
logits dominates the profile). 9.71: least squares over the llm-d H100 table (Llama 3.1 8B 4.76,
Qwen3 32B 5.64, gpt-oss-20b 7.38, Llama 3.3 70B 4.84 GiB; the table's gpt-oss-120b row is left
out: its own numbers do not add up, 71.26 - 64.38 - 7.38 - 0.13 is not its 3.33 GiB of KV).
2.87: the dennislee22 A100 Qwen2 7B log at utilisation 0.5 (0.55 GiB of activation plus
non-torch). 3.9: the llm-d-planner v0.19.0 H100 logs' "torch peak memory increase" (Qwen2.5 7B
FP8-dynamic 2.21 GiB, Llama 3.3 70B FP8-dynamic TP2 1.96 GiB: 3.81 and 4.01); later releases are
assumed to keep it (their logs agree within the bar, see the accuracy report)."""
V0_SAMPLER_BYTES_PER_LOGIT = 38
"""V0's profile samples max_num_seqs rows with top-k = vocab - 1 and top-p 0.99
(``sampler.py _apply_top_k_top_p``): alive per logit at the sort, the caller's 16-bit logits (2
B), their fp32 copy (4), the sorted values (4) and int64 indices (8), and the sort's temporaries
(8 B of reverse indices, 12 B of radix-sort alternates): 38 B. Read from the source, not fitted;
checked on PR #10511's Llama 3 8B (1.26 GiB at 256 x 128,256) and vLLM issue #13061's driver."""
FUSED_MOE_CHUNK_TOKENS = 32_768
"""``VLLM_FUSED_MOE_CHUNK_SIZE``'s default in 0.6-0.7: fused_experts sizes its caches for at most
this many tokens."""
CUBLAS_WORKSPACE_BYTES: tuple[int, int] = (33_554_432, 8_519_680)
"""(Hopper, other GPUs): cuBLAS's workspace, first allocated by the first GPU matmul (PyTorch
2.5 ``CublasHandlePool``: 32 MiB on sm90, 8.125 MiB elsewhere). V0 counts it in the activation
peak unless a matmul already ran while loading (MLA's absorbed weights on the GPU)."""
V2_ACTIVATION_BYTES_PER_HIDDEN = 343_409
"""Model Runner V2's profile peak on a first start, per unit of hidden size: the two cold
torch.compile logs, Llama 3.1 8B on vLLM 0.31 (1.44 GiB) and Qwen3-8B on 0.27.1 (1.18 GiB),
both 4,096 wide: 1.31 GiB / 4,096. Its sampler pass is small (0.19 GiB for Qwen3-8B once the
compile cache is warm, the same RunPod run restarted): a warm cache leaves about 1 GiB more
for the KV cache than predicted. From 0.29 (read in the 0.29-0.31 wheels,
``Worker.determine_available_memory``) the budget also loses Model Runner V2's CUDA-graph estimate
(``gpu/cudagraph_utils.profile_cudagraph_memory``: the capture sizes captured into a throwaway
pool, unless enforce_eager), which the log folds into "peak activation" (its "CUDAGraph memory"
is the real capture, made after the KV cache): the 0.31 log's 1.44 GiB holds both, so on v2-all
this figure stands for the compile spike and the estimate together."""
V2_FORWARD_VALUES_PER_TOKEN = (3, 2)
"""Model Runner V2 with a warm compile cache: the profile peak is the forward pass over
max_num_batched_tokens, whose widest moment is the MLP: the gate/up output (2 x intermediate),
the activated half (intermediate) and two hidden-size tensors (the residual and the normed
input), all in the model's dtype: tokens x (3 x intermediate + 2 x hidden) x 2 B. Qwen2.5-0.5B
at 32,768 tokens: 32,768 x (3 x 4,864 + 2 x 896) x 2 B = 1.0 GiB (the 0.26 log: 1.06 GiB);
Qwen3-8B at 2,048 tokens: 2,048 x (3 x 12,288 + 2 x 4,096) x 2 B = 0.17 GiB (0.27.1: 0.19).
Below that the dummy sampler's logits in the model's dtype set the peak (seqs x vocab x 2 B:
0.07 GiB for 256 x 151,936; Qwen2.5-0.5B at 2,048 tokens logs 0.08)."""
NON_TORCH_BYTES: dict[EngineEra, tuple[int, int]] = {
    "v0": (96_636_765, 2_254_857_830),
    "v1-0.10": (139_586_437, 590_558_003),
    "v1-0.11": (139_586_437, 590_558_003),
    "v1-0.19": (257_698_038, 2_254_857_830),
    "v1-cudagraph": (257_698_038, 2_254_857_830),
    "v2-runner": (257_698_038, 2_254_857_830),
    "v2-all": (257_698_038, 2_254_857_830),
}
"""(TP = 1, TP > 1 with vLLM's custom all-reduce): 0.13 / 0.55 GiB in the llm-d H100 table
(v0.11); 0.24 / 2.1 GiB in the llm-d-planner v0.19.0 H100 logs ("non-torch forward increase
memory": Qwen2.5 7B FP8-dynamic TP1, Llama 3.3 70B FP8-dynamic TP2); V0 0.09 GiB, the median
of the twelve V0 logs at TP 1 that print it (0.01-0.35 GiB on T4, RTX 2060/3090/4090, A10-class,
L40S and H100 cards; two outliers, 1.79 in PR #10511 and 5.21 in PR #10927) and 2.10 GiB split
with custom all-reduce (the SageMaker 8x A100 40GB DeepSeek-Coder-
V2-Lite log of 0.7.1: "non_torch_memory takes 2.10GiB"). Without custom all-reduce (more than
two GPUs without NVLink, GeForce cards, which lack peer-to-peer) a split keeps the TP = 1
figure: the L40S TP8 log of v0.10.2 reports 0.18 GiB."""
CUDA_GRAPH_ESTIMATE_BYTES = 1_428_076_216
"""v1-cudagraph only (0.21+ subtract vLLM's own estimate): 1.33 GiB, the median of the
"Estimated CUDA graph memory: X GiB total" lines of the collected v0.19 logs (0.71, 0.84, 1.82,
2.35 GiB). The engine's estimate depends on the capture sizes and the model; this is one figure
for all, so it is an estimate. ROCm builds leave it out (not subtracted there until vLLM PR
#48526; the MI300X logs of 0.23 and 0.28 add up without it)."""
MIN_CUDA_GRAPH_BYTES = 536_870_912
"""Releases that capture CUDA graphs after sizing the KV cache (all before 0.21) need this much
outside the budget, (1 - gpu_memory_utilization) x total: 0.50 GiB, the smallest capture logged
by those releases ("Graph capturing finished ... took 0.50 GiB", the dennislee22 A100 logs). The
16x H20-3e DeepSeek-R1 run at utilisation 1.0 (vLLM issue #13074) dies there."""
STARTUP_USAGE_BYTES: tuple[int, int] = (547_608_330, 1_642_824_991)
"""(TP = 1, TP > 1): what a worker already holds when the engine checks free memory at start-up
(CUDA context; NCCL and all-reduce buffers when split): 0.51 GiB ("non_torch_memory=0.51GiB" at
init) and 1.53 GiB (77.66 of 79.19 GiB free at TP 2) in the v0.19 H100 logs. From 0.17 the
engine refuses to start when utilisation x total exceeds what is free ("Free memory on device
... on startup is less than desired GPU memory utilization")."""
XPU_NON_TORCH_BYTES: dict[bool, int] = {False: 1_580_500_000, True: 1_271_400_000}
"""Intel XPU, (original runner, Model Runner V2): what the first forward and sampler pass leave
outside torch's allocator (vLLM's XPU worker measures it as the CUDA one does, from the device's
free memory). FITTED, one case each (no held-out XPU log): gpt-oss-20b on an Arc Pro B60, 0.28
("Actual usage is 14.37 GiB consumed (weights + non-torch)" against 12.87 of weights) and 0.29
on V2 (169,123 tokens: 3.998 GiB of KV; its author's table puts non-torch at ~1.03 GiB and the
peak at 0.27, of which the V2 forward rule sees 0.15, so the constant carries the other 0.12).
Five to six times CUDA's 0.24 GiB; the source does not say why (kernel modules, driver scratch
space and runtime pools are the likely holders)."""
XPU_COMPILE_BYTES = 240_500_000
"""Intel XPU without --enforce-eager: torch.compile still runs (XPU captures no graphs) and
costs this much more of the budget. FITTED on the one compiled gpt-oss-20b boot on an Arc Pro
B60 (0.28), whose "estimated maximum model length is 122048" pins its KV memory to 2.892 GiB
against the eager boot's 3.116: the 0.018 GiB margin of the eager start is gone and it fails."""
XPU_MIN_BLOCK_TOKENS = 64
"""vLLM's attention backends on XPU prefer blocks of at least 64 tokens
(``get_preferred_block_size``: ``max(default_block_size, 64)`` when ``is_xpu()``)."""
Mxfp4Backend = Literal["auto", "marlin", "triton", "triton-padded", "flashinfer-trtllm", "xpu"]
"""How vLLM lays out MXFP4 experts (``vllm/model_executor/layers/quantization/mxfp4.py``,
``Mxfp4MoEMethod.create_weights`` / ``process_weights_after_loading``); see
``mxfp4_expert_bytes``. auto: the backend vLLM picks for the GPU and engine era."""
HOPPER_SLUGS = ("h100", "h200", "gh200")


class EngineConfig(msgspec.Struct, frozen=True, kw_only=True):
    """vLLM's flags (None: the engine's default for this GPU and version)."""

    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = 0.9
    """None: the release's own default (``default_utilisation``), resolved with the other
    defaults in ``engine_defaults``."""
    dtype: Dtype = "auto"
    """--dtype: float32 doubles 16-bit weights and an auto KV cache (4 bytes a value)."""
    block_size: int = 16
    kv_cache_dtype: KvCacheDtype = "auto"
    quantization: Quantization = "none"
    """none: 16-bit weights; fp8: FP8 linear layers (embedding and LM head stay 16-bit);
    mxfp4: MXFP4 experts (gpt-oss), the rest 16-bit; awq, gptq: 4-bit linear layers in
    groups of 128 as Marlin holds them (``INT4_BYTES``); w4a16-experts: a compressed-tensors
    W4A16 checkpoint that quantises only the routed experts (``w4a16_expert_bytes``)."""
    int4_group_size: int = 128
    """w4a16-experts: values per 16-bit scale (the checkpoint's quantization_config)."""
    bnb_absmax: BnbAbsmax = "fp32"
    """bnb-nf4: the block scales' layout after loading (``bnb_absmax_of`` a release; Unsloth's
    fast_inference patches the 0.9.2+ dequantisation out, keeping them nested)."""
    bnb_skip_attention_layers: tuple[int, ...] = ()
    """bnb-nf4: decoder layers whose attention the checkpoint keeps 16-bit (its quantization_config
    llm_int8_skip_modules, e.g. "model.layers.0.self_attn" in Unsloth's dynamic 4-bit repacks);
    ``bnb_skipped_layers`` reads them from the list."""
    bnb_skip_mlp_layers: tuple[int, ...] = ()
    """bnb-nf4: decoder layers whose MLP the checkpoint keeps 16-bit ("model.layers.2.mlp")."""
    enable_lora: bool = False
    """--enable-lora: vLLM pre-allocates max_loras adapter slots of max_lora_rank in every
    wrapped layer (``lora_layer_bytes``, ``lora_embedding_bytes``, ``punica_metadata_bytes``)."""
    max_loras: int = 1
    max_lora_rank: int = 16
    lora_embeddings: bool = False
    """The model's vLLM class lists LoRA embedding modules (Llama, Mistral, Mixtral:
    ``embedding_modules = {"embed_tokens": ..., "lm_head": ...}``; Qwen2 and Qwen3 list none):
    LoRA also wraps the embedding and the logits, and the model is built with
    lora_extra_vocab_size more rows."""
    lora_extra_vocab_size: int = 256
    """LoRAConfig's default until vLLM removed the extra vocabulary (PRs #28382 / #28545, November
    2025; ``lora_extra_vocab_of``)."""
    lora_in_weights: bool = True
    """Whether "Model loading took" (and so the KV budget) counts the LoRA slots: from 0.8 (vLLM PR
    #14469, "Make the deviceprofiler include LoRA memory"); before it V0 created the LoRA manager
    after the measurement and the slots came out of the memory left outside the budget
    (``lora_in_weights_of``)."""
    mxfp4_backend: Mxfp4Backend = "auto"
    model_runner: ModelRunner = "auto"
    """0.23-0.28: the runner the engine picked, where known (a log's "Using V2 Model Runner",
    or VLLM_USE_V2_MODEL_RUNNER set); auto: the release's rule (``runs_on_model_runner_v2``)."""
    release: tuple[int, int, int] | None = None
    """The vLLM release (``release_of`` a version string), for rules that changed inside an
    era: which models Model Runner V2 takes (``runs_on_model_runner_v2``) and the sliding
    window's in-flight reserve (``in_flight_batches``). None: the era's last release."""
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    enforce_eager: bool = False
    device: Device = "cuda"
    cpu_offload_bytes: int = 0
    """--cpu-offload-gb x 2^30 (per GPU): decoder-layer weights kept in CPU memory, layer by
    layer from the first; ``offloaded_layer_bytes``."""
    compile_cache: CompileCache = "cold"
    """Model Runner V2 only: a warm torch.compile cache (a restart on the same cache
    directory) skips most of the first start's profile peak."""
    usage: UsageContext = "api_server"
    version: EngineEra = DEFAULT_ERA
    mla_latent_cache: bool = True
    """False for releases before 0.7.1 (``mla_latent_cache_of``), which cached DeepSeek's
    attention as full K and V of 256 values per head instead of the MLA latent."""
    mla_weights: "MlaWeights" = "current"
    """What MLA keeps beside the checkpoint's weights after loading (``mla_weights_of``)."""
    gpu_total_bytes: int | None = None
    """What torch sees on the GPU (a log's total_gpu_memory); None: nvidia-smi minus the
    driver reserve fitted for that GPU."""


_RELEASE = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+|x))?")
"""A release as logs and notes print it; an "x" patch ("0.7.x") means the minor's last one."""


def release_of(version: str) -> tuple[int, int, int] | None:
    m = _RELEASE.match(version.strip())
    if not m or re.match(r"v?0\.1\.dev", version.strip()):  # an untagged build: no release
        return None
    patch = 99 if m[3] == "x" else int(m[3] or 0)
    return int(m[1]), int(m[2]), patch


def era_of_version(
    version: str, later: EngineEra = DEFAULT_ERA, field: str = "vllm_version"
) -> EngineEra:
    """The accounting era of a vLLM release as a log prints it ("0.19.0", "0.11.0rc2.dev98",
    "v0.31.0"); ``later`` for what names no release (an untagged build such as
    "0.1.dev7548+g...", "unknown"). Releases before 0.5 are not modelled (a SizingError naming
    ``field``, where the caller got the version from)."""
    release = release_of(version)
    if release is None:
        return later
    major, minor, patch = release
    if major > 0 or minor >= 23:
        return "v2-all" if major > 0 or minor >= 29 else "v2-runner"
    if minor >= 21:
        return "v1-cudagraph"
    require(minor >= 5, field, f"vLLM {version} predates the modelled releases (0.5+)")
    if minor <= 7:
        return "v0"
    if minor == 10 and patch <= 1:
        return "v1-0.10"
    return "v1-0.19" if minor >= 17 else "v1-0.11"


def mla_latent_cache_of(version: str) -> bool:
    """Whether a release caches the MLA latent (vLLM PR #12601, released in 0.7.1); before it,
    DeepSeek attention ran as plain multi-head attention with q, k and v padded to 256 ("TODO,
    support head_size 192" in the old deepseek_v2.py). Unparseable versions: True (current)."""
    release = release_of(version)
    return release is None or release >= (0, 7, 1)


MlaWeights = Literal["plain", "absorbed-fp32", "absorbed-bf16", "current"]
"""What vLLM's MLA keeps beside the checkpoint's weights after loading (``MLACommonImpl.
process_weights_after_loading``): plain: nothing (before 0.7.1, no MLA); absorbed-fp32 and
absorbed-bf16: V0 0.7.1-0.7.2 and 0.7.3 materialise the absorbed W_Q_UK and W_UV_O (requantised
to FP8 for an FP8 checkpoint), W_QR, and for an FP8 checkpoint the dequantised kv_b_proj in
fp32 (0.7.1-0.7.2) or bf16 (0.7.3, vLLM PR #13181); current: 0.8 on (PR #14770 dropped the
absorbed copies) keeps only the bf16 dequantised kv_b_proj of an FP8 checkpoint."""


def mla_weights_of(version: str | None, era: EngineEra) -> MlaWeights:
    """The MLA weight layout of a release; without a readable one, that of ``era`` (V0: its
    last release with MLA, 0.7.3)."""
    release = release_of(version) if version else None
    if release is None:
        return "absorbed-bf16" if era == "v0" else "current"
    if release >= (0, 8, 0):
        return "current"
    if release < (0, 7, 1):
        return "plain"
    return "absorbed-bf16" if release >= (0, 7, 3) else "absorbed-fp32"


def for_release(config: EngineConfig, version: str | None) -> EngineConfig:
    """``config`` with what a release decides inside its era (``config.version``): the release
    itself (for the 0.23-0.28 rules), MLA's cache and weight layouts, how bitsandbytes scales are
    kept, LoRA's extra vocabulary and where its slots are counted. ``version`` None: each rule's
    answer for no readable release (the era's current behaviour)."""
    return msgspec.structs.replace(
        config,
        release=release_of(version) if version else None,
        mla_latent_cache=mla_latent_cache_of(version) if version else True,
        mla_weights=mla_weights_of(version, config.version),
        bnb_absmax=bnb_absmax_of(version),
        lora_extra_vocab_size=lora_extra_vocab_of(version),
        lora_in_weights=lora_in_weights_of(version),
    )


FOUR_BIT_METHODS = frozenset({"gptq_marlin_24", "gguf"})
"""vLLM quantization methods with 4-bit (or smaller) weights whose loaded layout is not
modelled (2:4 sparse Marlin, GGUF's many block formats)."""
INT4_BYTES: dict[str, tuple[int, int]] = {"gptq": (66, 128), "awq": (133, 256)}
"""Bytes per quantised weight as vLLM's Marlin kernels hold an AWQ / GPTQ 4-bit checkpoint
(``awq_marlin.py``, ``gptq_marlin.py``, ``utils/marlin_utils.py``), groups of 128: the packed
weight (0.5 B) and an fp16 scale per group (2 / 128 B); GPTQ's symmetric zero points are
dropped after repacking, AWQ keeps a 4-bit zero point per group (0.5 / 128 B): 0.515625 and
0.51953125 B. Embeddings, the LM head, norms and routers stay 16-bit. Checked: Qwen2.5-7B
GPTQ-Int4 on vLLM 0.8.5 logs 5.1811 GiB against 5.1722 (a blog run whose BF16 and FP8 loads
match to 0.0001 GiB). Not modelled: Machete on Hopper in newer releases keeps AWQ's zero points
as a 16-bit tensor (0.53125 B), and recent Qwen2.5-7B-AWQ logs print about 0.09 GiB more than
this layout (5.29 against 5.20 GiB), likely allocator rounding."""


W4A16_GROUP_SIZES = (32, 64, 128)


def w4a16_expert_bytes(model: ModelSpec, tensor_parallel: int, group_size: int) -> int:
    """One rank's routed experts from a compressed-tensors W4A16 checkpoint (symmetric int4 in
    groups, no zero points) as ``CompressedTensorsWNA16MarlinMoEMethod`` holds them: packed
    4-bit weights (0.5 B) and a 16-bit scale per ``group_size`` values, the repacking for
    Marlin keeping the size. Everything else (attention, linear attention, shared experts,
    routers, embeddings: the recipes' ignore list) stays 16-bit. Qwen3-Next-80B at TP 2, groups
    of 32: 48 x 512 x 3 x 2,048 x 256 x (0.5 + 2 / 32) B = 21,743,271,936 B."""
    require(
        group_size in W4A16_GROUP_SIZES,
        "int4_group_size",
        f"must be one of {', '.join(map(str, W4A16_GROUP_SIZES))}",
    )
    values = model.layers * model.experts * 3 * model.hidden_size
    values *= ceil_div(model.intermediate_size, tensor_parallel)
    return values // 2 + values * 2 // group_size


def bnb_absmax_of(version: str | None) -> BnbAbsmax:
    """How a release keeps bitsandbytes block scales: vLLM PR #19742 ("Modify the logic of BNB
    double quantization", merged June 2025, first released in 0.9.2) added
    ``BitsAndBytesModelLoader._dequantize_dq``, which replaces each nested uint8 absmax by its
    fp32 dequantisation while binding the quant states (``_bind_quant_states_to_params``);
    before it vLLM kept the checkpoint's double-quantised state as bitsandbytes'
    ``QuantState.from_dict`` built it. Unreadable versions: the current behaviour (fp32)."""
    release = release_of(version) if version else None
    return "nested" if release is not None and release < (0, 9, 2) else "fp32"


UNSLOTH_NESTED_ABSMAX_FROM = (2025, 8, 4)
"""The first Unsloth release known to run with the patch that keeps the nested scales: its
published wheel requires unsloth_zoo >= 2025.8.3, and every unsloth_zoo from 2025.7.5 on replaces
vLLM's ``BitsAndBytesModelLoader._dequantize_dq`` (and the module-level ``dequantize_dq``) by a
function that returns the quant states unchanged (``unsloth_zoo/vllm_utils.py``: "vLLM
dequantizes the Double quant scalars on the fly / We disable this"); 2025.7.4 and earlier lack it.
Which unsloth_zoo the Unsloth releases between those pulled in is not established, so they keep
the vLLM release's own layout."""


def unsloth_keeps_nested_absmax(unsloth_version: str | None) -> bool:
    """Whether an engine Unsloth's fast_inference built keeps bitsandbytes' double-quantised
    block scales (``bnb_absmax`` nested) whatever the vLLM release (UNSLOTH_NESTED_ABSMAX_FROM)."""
    release = release_of(unsloth_version) if unsloth_version else None
    return release is not None and release >= UNSLOTH_NESTED_ABSMAX_FROM


def lora_in_weights_of(version: str | None) -> bool:
    """Whether a release's weights line counts the LoRA slots: vLLM PR #14469 (March 2025, in
    0.8.0) moved ``create_lora_manager`` inside ``DeviceMemoryProfiler`` in ``load_model``. Up to
    0.7.3 the V0 ``ModelRunner.load_model`` logged "Loading model weights took" and only then
    built the ``LRUCacheWorkerLoRAManager`` (the 0.7.2 T4 log prints "Using PunicaWrapperGPU"
    after the weights line; the 0.10.0 one before "Model loading took"). ``memory_profiling``
    then measures the profile's peak from a baseline that already holds the slots, so before 0.8
    they are counted nowhere in the KV budget."""
    release = release_of(version) if version else None
    return release is None or release >= (0, 8, 0)


def lora_extra_vocab_of(version: str | None) -> int:
    """LoRAConfig.lora_extra_vocab_size's default: 256 until vLLM PRs #28382 / #28545 removed the
    LoRA extra vocabulary (November 2025; taken as from 0.12.0), 0 after."""
    release = release_of(version) if version else None
    return 0 if release is None or release >= (0, 12, 0) else 256


_BNB_SKIP = re.compile(r"^(?:model\.)?layers\.(\d+)\.(self_attn|mlp)$")


def bnb_skipped_layers(
    skip_modules: list[str], layers: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(attention layers, MLP layers) a checkpoint's llm_int8_skip_modules keeps 16-bit. vLLM's
    ``BitsAndBytesConfig.get_quant_method`` gives a linear layer ``UnquantizedLinearMethod`` when
    ``is_layer_skipped_bnb`` matches its prefix (a skip entry equal to one of the prefix's
    leading paths, "model.layers.0.self_attn" for "model.layers.0.self_attn.qkv_proj"). Entries
    naming one projection of a fused module ("model.layers.0.self_attn.q_proj") match no vLLM
    prefix (qkv_proj is one module) and Unsloth only writes them beside their parent
    (``vllm_dynamic_quant_supported``); "lm_head" and the vision entries are not decoder linear
    layers. Both are ignored."""
    attention: set[int] = set()
    mlp: set[int] = set()
    for entry in skip_modules:
        m = _BNB_SKIP.match(entry.strip())
        if not m:
            continue
        index = int(m[1])
        require(0 <= index < layers, "llm_int8_skip_modules", f"{entry}: no such layer")
        (attention if m[2] == "self_attn" else mlp).add(index)
    return tuple(sorted(attention)), tuple(sorted(mlp))


ALLOCATOR_BLOCK_BYTES = 512
"""PyTorch's caching allocator rounds every allocation up to 512 B (``kMinBlockSize``), and
``torch.cuda.memory_allocated`` (what vLLM's weights line measures) counts the rounded block: a
bitsandbytes quant state's 64-byte code table takes 512 B."""
BNB_BLOCK_VALUES = 64
"""bitsandbytes 4-bit: one absmax per 64 values (``quantize_4bit``'s default blocksize, which
vLLM's in-flight quantisation and Unsloth's checkpoints use)."""
BNB_NESTED_BLOCKS = 256
"""Double quantisation: the absmax values are quantised to uint8 in blocks of 256, each with an
fp32 scale (``nested_absmax``), through a 256-entry fp32 code (``nested_quant_map``)."""


def _allocated(nbytes: int) -> int:
    return _round_up(nbytes, ALLOCATOR_BLOCK_BYTES)


def bnb_matrix_bytes(values: int, absmax: BnbAbsmax) -> int:
    """One checkpoint weight matrix of ``values`` as vLLM holds it after a bitsandbytes 4-bit
    load (vllm/model_executor/layers/quantization/bitsandbytes.py
    ``BitsAndBytesLinearMethod.create_weights`` / ``create_qweight_for_4bit``; the loader
    ``BitsAndBytesModelLoader``, in model_loader/loader.py in 0.7 (``_load_weights``) and in
    model_loader/bitsandbytes_loader.py by 0.10 (``load_weights``)):

    * the packed weight: uint8 of values / quant_ratio, quant_ratio = 16-bit params_dtype bits
      / 8 = 2, i.e. two 4-bit values a byte; a fused module (qkv_proj, gate_up_proj) holds its
      matrices' bytes back to back in one parameter (``bnb_shard_offsets``);
    * its ``QuantState``, one per checkpoint matrix (``_quantized_4bit_generator`` parses it from
      the checkpoint's ``.absmax``, ``.quant_map``, ``.nested_absmax``, ``.nested_quant_map`` and
      ``.quant_state.bitsandbytes__nf4`` tensors with ``QuantState.from_dict(...,
      device="cuda")``; in-flight quantisation gets the same from ``quantize_4bit(...,
      compress_statistics=True, quant_type="nf4")``): the code (16 fp32 values) and the absmax,
      nested: a uint8 per 64 values, an fp32 per 256 of those, the nested 256-entry fp32 code
      and the fp32 offset scalar; fp32 (``_dequantize_dq``, 0.9.2 on): an fp32 per 64 values,
      the nested tensors freed.

    Small tensors are counted as the allocator's 512-byte blocks (``ALLOCATOR_BLOCK_BYTES``); the
    packed weight is a slice of its module's large parameter. Llama 3.1 8B's q_proj (16,777,216
    values), nested: 8,388,608 + 262,144 + 4,096 + 1,024 + 512 + 512 = 8,656,896 B."""
    blocks = ceil_div(values, BNB_BLOCK_VALUES)
    state = _allocated(16 * 4)  # quant_map: the 16 NF4 levels, fp32
    if absmax == "fp32":
        state += _allocated(blocks * 4)
    else:
        state += _allocated(blocks)  # uint8 absmax
        state += _allocated(ceil_div(blocks, BNB_NESTED_BLOCKS) * 4)  # nested_absmax
        state += _allocated(256 * 4) + _allocated(4)  # nested_quant_map, offset
    return ceil_div(values, 2) + state


def _linear_shapes(model: ModelSpec, tp: int) -> tuple[list[int], list[int]]:
    """One rank's checkpoint matrices of a dense decoder layer, as values: attention (q, k, v,
    o) and MLP (gate, up, down), each sliced by TP (vLLM's ``BitsAndBytesModelLoader`` shards
    before it quantises in flight; a pre-quantised checkpoint is refused at TP > 1)."""
    h, head = model.hidden_size, model.resolved_head_dim
    q = ceil_div(model.attention_heads, tp) * head
    kv = ceil_div(model.kv_heads, tp) * head
    i = ceil_div(model.intermediate_size, tp)
    return [h * q, h * kv, h * kv, q * h], [h * i, h * i, i * h]


def _require_dense(model: ModelSpec, what: str, field: str) -> None:
    require(
        not model.is_moe and not model.kv_lora_rank and model.count_layers("linear") == 0,
        field,
        f"{what} is modelled for dense attention models (no experts, MLA or linear attention)",
    )


def bnb_layer_bytes(model: ModelSpec, config: EngineConfig) -> list[int]:
    """Each decoder layer's linear weights on one rank under bitsandbytes 4-bit: its attention
    and MLP matrices as ``bnb_matrix_bytes`` holds them, or in the model's dtype where the
    checkpoint skips them (``bnb_skip_attention_layers`` / ``bnb_skip_mlp_layers``). Norms and
    biases are not included (they stay 16-bit with the embedding and LM head)."""
    _require_dense(model, "bitsandbytes 4-bit", "quantization")
    attention, mlp = _linear_shapes(model, config.tensor_parallel_size)
    sixteen = model_dtype_bytes(config)
    quantized_attention = sum(bnb_matrix_bytes(v, config.bnb_absmax) for v in attention)
    quantized_mlp = sum(bnb_matrix_bytes(v, config.bnb_absmax) for v in mlp)
    skip_attention = set(config.bnb_skip_attention_layers)
    skip_mlp = set(config.bnb_skip_mlp_layers)
    return [
        (sum(attention) * sixteen if i in skip_attention else quantized_attention)
        + (sum(mlp) * sixteen if i in skip_mlp else quantized_mlp)
        for i in range(model.layers)
    ]


def bnb_loaded_bytes(model: ModelSpec, config: EngineConfig) -> int:
    """One rank's weights under bitsandbytes 4-bit: the decoder layers' linear weights
    (``bnb_layer_bytes``) and everything else (embedding, LM head, norms, biases) in the model's
    dtype. vLLM's ``BitsAndBytesConfig.get_quant_method`` quantises ``LinearBase`` layers only:
    ``VocabParallelEmbedding`` and ``ParallelLMHead`` are not linear layers, and Unsloth's
    checkpoints list lm_head among llm_int8_skip_modules as well. ``replicated_params`` are whole
    on every rank."""
    attention, mlp = _linear_shapes(model, 1)
    linear = model.layers * (sum(attention) + sum(mlp))
    b, whole = model_dtype_bytes(config), model.replicated_params
    rest = ceil_div((model.total_params - linear - whole) * b, config.tensor_parallel_size)
    return sum(bnb_layer_bytes(model, config)) + rest + whole * b


LoraRank = Literal[8, 16, 32, 64, 128, 256, 320, 512]
LORA_RANKS: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 320, 512)
"""LoRAConfig's accepted max_lora_rank values (``possible_max_ranks``)."""
LORA_VOCAB_PADDING = 256
"""LoRAConfig.lora_vocab_padding_size: the LM head of a LoRA-enabled model is padded to it."""
VOCAB_PADDING = 64
"""DEFAULT_VOCAB_PADDING_SIZE of ``VocabParallelEmbedding``."""


def _validate_lora(model: ModelSpec, config: EngineConfig) -> None:
    _require_dense(model, "LoRA slot memory", "enable_lora")
    require(config.max_loras >= 1, "max_loras", "must be at least 1")
    require(
        config.max_lora_rank in LORA_RANKS,
        "max_lora_rank",
        f"must be one of {', '.join(map(str, LORA_RANKS))}",
    )
    require(config.lora_extra_vocab_size >= 0, "lora_extra_vocab_size", "must not be negative")


def lora_layer_bytes(model: ModelSpec, config: EngineConfig) -> int:
    """One decoder layer's LoRA slots on one rank (vllm/lora/layers.py, ``create_lora_weights``
    of the wrappers ``from_layer`` puts on qkv_proj, o_proj, gate_up_proj and down_proj): per
    slot and per packed slice, ``lora_a_stacked`` (max_loras, 1, max_lora_rank, in) and
    ``lora_b_stacked`` (max_loras, 1, out, max_lora_rank) of zeros in the LoRA dtype (the model's,
    lora_dtype auto). Column-parallel layers (qkv, gate_up) slice B's output by TP and keep A
    whole; row-parallel ones (o, down) slice A's input and keep B whole (fully_sharded_loras
    off, the default). Llama 3.1 8B at rank 32: qkv 3 x 32 x 4,096 + 32 x 6,144, o 2 x 32 x
    4,096, gate_up 2 x 32 x 4,096 + 2 x 32 x 14,336, down 32 x 14,336 + 32 x 4,096 = 2,621,440
    values, 5,242,880 B a slot."""
    h, head, r = model.hidden_size, model.resolved_head_dim, config.max_lora_rank
    tp = config.tensor_parallel_size
    q = ceil_div(model.attention_heads, tp) * head
    kv = ceil_div(model.kv_heads, tp) * head
    i = ceil_div(model.intermediate_size, tp)
    values = (
        3 * r * h
        + r * (q + 2 * kv)  # qkv_proj: A per slice over the hidden size, B per slice
        + r * q
        + h * r  # o_proj
        + 2 * r * h
        + 2 * i * r  # gate_up_proj
        + r * i
        + h * r  # down_proj
    )
    return values * config.max_loras * model_dtype_bytes(config)


def ties_embeddings(model: ModelSpec) -> bool:
    """Whether a dense model's LM head is its embedding (tie_word_embeddings): its parameters
    then hold one vocab x hidden matrix beside the decoder layers, not two."""
    attention, mlp = _linear_shapes(model, 1)
    outside = model.total_params - model.layers * (sum(attention) + sum(mlp))
    return outside < 1.5 * _embedding_params(model)


def lora_vocab_rows(model: ModelSpec, config: EngineConfig) -> tuple[int, int]:
    """(embedding rows, LM-head rows) a LoRA-enabled model with LoRA embedding modules adds to
    the plain vocabulary (Llama's ``LlamaModel``: vocab_size + lora_extra_vocab_size x max_loras,
    ``VocabParallelEmbedding`` padding each part to 64; ``LlamaForCausalLM``: an LM head of
    vocab_size + lora_extra_vocab_size rows padded to lora_vocab_padding_size, 256). Llama 3.1
    8B: 128,256 + 256 = 128,512 rows each, 256 more. A tied head is the embedding."""
    if not (config.enable_lora and config.lora_embeddings):
        return 0, 0
    v, extra = model.vocab_size, config.lora_extra_vocab_size
    embedding = _round_up(_round_up(v, VOCAB_PADDING) + extra * config.max_loras, VOCAB_PADDING)
    head = 0
    if not ties_embeddings(model):
        head = _round_up(_round_up(v, LORA_VOCAB_PADDING) + extra, LORA_VOCAB_PADDING) - v
    return embedding - v, head


def lora_embedding_bytes(model: ModelSpec, config: EngineConfig) -> tuple[int, int]:
    """(embedding wrapper, logits wrapper) LoRA slots for a model with LoRA embedding modules
    (vllm/lora/layers.py): ``VocabParallelEmbeddingWithLoRA`` holds ``embeddings_tensors``
    (max_loras, extra, hidden), ``lora_a_stacked`` (max_loras, vocab + extra, rank) and
    ``lora_b_stacked`` (max_loras, 1, hidden, rank); ``LogitsProcessorWithLoRA`` holds
    ``lora_a_stacked`` (max_loras, 1, rank, hidden), ``lora_b_stacked`` (max_loras, 1, vocab +
    extra padded to 256, rank) and ``embeddings_tensors`` (max_loras, extra, hidden), all whole on
    every rank, in the LoRA dtype."""
    if not config.lora_embeddings:
        return 0, 0
    v, h, r = model.vocab_size, model.hidden_size, config.max_lora_rank
    extra, slots, b = config.lora_extra_vocab_size, config.max_loras, model_dtype_bytes(config)
    embedding = slots * (extra * h + (v + extra) * r + h * r) * b
    logits = slots * (r * h + _round_up(v + extra, LORA_VOCAB_PADDING) * r + extra * h) * b
    return embedding, logits


def punica_metadata_bytes(config: EngineConfig, defaults: "EngineDefaults") -> int:
    """The LoRA manager's per-batch index buffers on each rank (vllm/lora/punica_wrapper/
    punica_base.py ``PunicaWrapperBase.__init__``: token_lora_indices, sampler_indices,
    sampler_indices_padded and the 2-row embeddings_indices, int64 of max_num_batched_tokens;
    seq_start_locs, seq_lengths and lora_indices_per_batch, int64 of max_num_seqs;
    punica_gpu.py ``PunicaWrapperGPU`` adds two ``LoRAKernelMeta`` (token and prompt mapping:
    two int32 vectors of the tokens, or of the sequences, and three of max_loras + 1 or 2)),
    each an allocator block. 0.10's layout; releases before the long-context LoRA removal had
    one more int64 token vector."""
    t, seqs, slots = defaults.max_num_batched_tokens, defaults.max_num_seqs, config.max_loras
    base = 3 * _allocated(8 * t) + _allocated(16 * t) + 3 * _allocated(8 * seqs)

    def meta(n: int) -> int:
        small = 2 * _allocated(4 * (slots + 1)) + _allocated(4 * (slots + 2))
        return 2 * _allocated(4 * n) + small

    return base + meta(t) + meta(seqs)


def quantization_of(method: str, field: str = "quantization") -> Quantization:
    """vLLM's quantization= method as the weights it loads: MXFP4 experts, FP8 linear layers
    (fp8, compressed-tensors, modelopt checkpoints: compressed-tensors is taken as its common
    8-bit schemes, W8A8 FP8 or INT8), AWQ / GPTQ / bitsandbytes 4-bit, or 16-bit. Other 4-bit
    methods are refused (a SizingError
    naming ``field``) rather than sized as something they are not."""
    method = method.lower()
    if method == "mxfp4":
        return "mxfp4"
    if method == "w4a16-experts":
        return "w4a16-experts"
    if method in ("awq", "awq_marlin"):
        return "awq"
    if method in ("gptq", "gptq_marlin"):
        return "gptq"
    if method in ("bitsandbytes", "bnb-nf4"):
        # 4-bit, vLLM's BitsAndBytesConfig default (load_in_4bit); 8-bit checkpoints are rare.
        return "bnb-nf4"
    require(
        method not in FOUR_BIT_METHODS,
        field,
        f"{method} loads 4-bit weights in a layout the vLLM method does not model (it models "
        "16-bit, FP8, MXFP4, AWQ, GPTQ and bitsandbytes 4-bit weights); use the seeds' method "
        "with an int4 format",
    )
    return "fp8" if method in ("fp8", "compressed-tensors", "modelopt") else "none"


def kv_cache_dtype_of(dtype: str) -> KvCacheDtype:
    """vLLM's kv_cache_dtype= (fp8, fp8_e4m3, fp8_e5m2, auto, ...) as the cache's bytes."""
    return "fp8" if dtype.startswith("fp8") else "auto"


class EngineDefaults(msgspec.Struct, frozen=True, kw_only=True):
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    gpu_memory_utilization: float
    """What the budget used: the request's, else the release's default (``default_utilisation``)."""
    rule: str


class EngineGpu(msgspec.Struct, frozen=True, kw_only=True):
    """One GPU of the busiest pipeline stage, in bytes (GiB alongside for reading logs)."""

    total_bytes: int
    usable_bytes: int
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    cuda_graph_bytes: int
    kv_cache_bytes: int
    page_bytes: int
    """One block of one KV tensor (block_size tokens of one layer)."""
    block_bytes: int
    """One block across the rank's KV tensors (page x group size, or x layers)."""
    num_blocks: int
    total_gib: float
    usable_gib: float
    weights_gib: float
    activation_gib: float
    non_torch_gib: float
    cuda_graph_gib: float
    kv_cache_gib: float


class EnginePrediction(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    gpu: str
    version: EngineEra
    starts: bool
    failure: str | None
    kv_cache_tokens: int
    """The 'GPU KV cache size: N tokens' line."""
    max_concurrency: float
    """The 'Maximum concurrency for L tokens per request: X' line (X, rounded to 2 places)."""
    max_model_len: int
    block_size: int
    """Tokens a block holds: the flag, or what a linear-attention model raises it to."""
    stage_weights_bytes: list[int]
    """Weights on a rank of each pipeline stage, first to last (per_gpu is the stage with the
    fewest blocks)."""
    needed_kv_bytes_per_request: int
    blocks_per_request: int
    """Blocks one request of max_model_len takes across the layer groups (vLLM's
    ``get_max_concurrency_for_kv_cache_config``: concurrency = blocks / this)."""
    defaults: EngineDefaults
    kv_groups: int
    per_gpu: EngineGpu
    log_lines: list[str]
    notes: list[str]


LARGEST_DEFAULTS_BYTES = 160 * GiB
"""vLLM 0.28.0 added a top tier to ``EngineArgs.get_batch_defaults`` ("for GPUs like B200/B300
with >= 160GB memory, use the largest defaults"): ``device_memory >= 160 * GiB_bytes`` gives
max_num_batched_tokens 16,384 and max_num_seqs 1,024 to both the API server and the LLM class
(read in the 0.28.0 wheel's ``vllm/engine/arg_utils.py``; 0.27.0's top tier was >= 70 GiB and
not an A100, and 0.29-0.31 keep 0.28's). The device memory is torch's total."""


def release_0_28_or_later(config: EngineConfig) -> bool:
    """Whether the engine is vLLM 0.28 or later: v2-all (0.29 on), and v2-runner (0.23-0.28) at
    0.28 or with no release named (the era's last). 0.28 added the >= 160 GiB batch tier
    (``LARGEST_DEFAULTS_BYTES``) and removed bitsandbytes (``BNB_REMOVED``)."""
    if config.version == "v2-all":
        return True
    return config.version == "v2-runner" and (config.release is None or config.release >= (0, 28))


BNB_REMOVED = (
    "vLLM 0.28 removed its bitsandbytes loader and quantization method (the 0.28.0 wheel holds "
    "neither bitsandbytes_loader.py nor layers/quantization/bitsandbytes.py): name a release "
    "before 0.28 to size a bitsandbytes checkpoint (/plan: vllm.vllm_version; /verify: a log that "
    "prints its version, or engine_version), or plan another format"
)


def engine_defaults(
    model: ModelSpec, gpu_total_bytes: int, gpu_slug: str, config: EngineConfig
) -> EngineDefaults:
    """vLLM's defaults (V1 ``EngineArgs._set_default_args``; V0 scheduler config): GPUs with at
    least 70 GiB that are not A100s get the larger batched-token budget and 1024 sequences, and
    from 0.28 GPUs with at least 160 GiB the largest (``LARGEST_DEFAULTS_BYTES``);
    the utilisation is the release's (``default_utilisation``) unless given."""
    utilisation = config.gpu_memory_utilization
    if utilisation is None:
        utilisation = default_utilisation(config.version, config.release)
    mml = config.max_model_len or model.max_context_tokens
    if config.version == "v0":
        tokens = config.max_num_batched_tokens or max(mml, 2048)
        return EngineDefaults(
            max_model_len=mml,
            max_num_batched_tokens=tokens,
            max_num_seqs=config.max_num_seqs or 256,
            gpu_memory_utilization=utilisation,
            rule="V0 without chunked prefill: max_num_batched_tokens = max(max_model_len, 2048), "
            "max_num_seqs 256",
        )
    big = gpu_total_bytes >= 70 * GiB and not gpu_slug.startswith("a100")
    if gpu_total_bytes >= LARGEST_DEFAULTS_BYTES and release_0_28_or_later(config):
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
    """What torch.cuda.mem_get_info reports as total: nvidia-smi's total less a driver reserve."""
    smi = gpu.driver_visible_bytes or gpu.memory_bytes
    return smi - DRIVER_RESERVE_BYTES.get(gpu.slug, DEFAULT_DRIVER_RESERVE_BYTES)


LATER_ERAS: tuple[EngineEra, ...] = ("v1-0.19", "v1-cudagraph", "v2-runner", "v2-all")
"""0.17 on: the free-memory check at start-up, the bundled triton_kernels' padded layout."""
V2_ERAS: tuple[EngineEra, ...] = ("v2-runner", "v2-all")
"""0.23 on: Model Runner V2."""
GRAPH_ESTIMATE_ERAS: tuple[EngineEra, ...] = ("v1-cudagraph", *V2_ERAS)
"""0.21 on: the original runner takes its CUDA-graph estimate out of the KV budget, and the
tokens line prints concurrency x max_model_len."""


V2_RUNNER_CLASSES: dict[int, frozenset[str]] = {
    23: frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"}),
    24: frozenset(
        {
            "Qwen3ForCausalLM",
            "DeepseekV2ForCausalLM",
            "Qwen2MoeForCausalLM",
            "GraniteMoeForCausalLM",
            "LlamaForCausalLM",
            "MistralForCausalLM",
        }
    ),
}
"""``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`` in vllm/config/vllm.py of the 0.23.0 and 0.24.0
wheels: the only classes those releases serve with Model Runner V2."""
V2_RUNNER_MOE_CLASSES: tuple[tuple[int, str], ...] = (
    (24, "DeepseekV2ForCausalLM"),
    (24, "Qwen2MoeForCausalLM"),
    (24, "GraniteMoeForCausalLM"),
    (26, "InklingForCausalLM"),
    (26, "InklingForConditionalGeneration"),
    (26, "LongcatFlashNgramForCausalLM"),
    (27, "KimiK3ForConditionalGeneration"),
    (28, "DeepseekV4ForCausalLM"),
)
"""From 0.25 the same list names the MoE classes V2 takes besides every non-MoE model (the
0.25.0-0.28.0 wheels), each from the release (minor) that first lists it."""


def default_utilisation(version: EngineEra, release: tuple[int, int, int] | None) -> float:
    """vLLM's --gpu-memory-utilization default: 0.92 from 0.20.0, 0.9 before (``CacheConfig``
    in vllm/config/cache.py of the 0.19.0 and 0.20.0 wheels). Without a release, the era's last
    one decides (v1-0.19 ends at 0.20)."""
    if release is not None:
        return 0.92 if release >= (0, 20, 0) else 0.9
    return 0.92 if version in LATER_ERAS else 0.9


def runs_on_model_runner_v2(model: ModelSpec, config: EngineConfig) -> bool:
    """Whether vLLM serves this model with Model Runner V2 (``VllmConfig.use_v2_model_runner``,
    read in the 0.23.0-0.28.0 wheels; flags that force the original runner, such as LoRA or
    n-gram speculation, are not modelled):

    - 0.23 and 0.24: only the classes of ``V2_RUNNER_CLASSES`` (the 0.24 H200 runs: Qwen3,
      Llama and DeepSeek-V2-Lite on V2, Qwen3-MoE and Gemma 3 on the original runner);
    - 0.25-0.28: every model that is neither MoE nor a linear-attention hybrid
      (``is_hybrid``; sliding windows do not count), and the MoE classes listed in
      ``V2_RUNNER_MOE_CLASSES``;
    - 0.29 on: every model (vLLM PR #53183; the 0.29 gpt-oss-20b XPU log prints "Using V2
      Model Runner").

    A model of unknown class (``ModelSpec.architecture`` empty) counts as listed in 0.23-0.24
    when it is a dense full-attention model, the shape those lists hold."""
    if config.version == "v2-all":
        return True
    if config.version != "v2-runner":
        return False
    if config.model_runner != "auto":
        return config.model_runner == "v2"
    minor = config.release[1] if config.release and config.release[0] == 0 else 28
    if minor <= 24:
        if model.architecture:
            return model.architecture in V2_RUNNER_CLASSES[max(minor, 23)]
        return not model.is_moe and all(t == "full" for t in model.resolved_layer_types)
    if "linear" in model.resolved_layer_types:
        return False
    listed = any(
        model.architecture == name and minor >= since for since, name in V2_RUNNER_MOE_CLASSES
    )
    return not model.is_moe or listed


def offloaded_layer_bytes(layer_bytes: list[int], budget: int) -> list[int]:
    """Bytes of each decoder layer that --cpu-offload-gb moves to the CPU (vLLM 0.7
    ``maybe_offload_to_cpu``, applied by ``make_layers`` to each layer in order): parameters go
    whole until the budget is spent, so layers before the one that crosses it go entirely and
    that one in part (to within one parameter, not modelled). Embeddings, the LM head, norms
    outside the layers and buffers (the rotary caches) stay on the GPU."""
    offloaded: list[int] = []
    left = budget
    for size in layer_bytes:
        # A layer's share can be negative (a tied embedding's second copy taken back from the
        # layers, ``layer_weight_bytes``); nothing of it can move.
        part = min(max(size, 0), max(left, 0))
        offloaded.append(part)
        left -= part
    return offloaded


def v0_activation_bytes(
    model: ModelSpec,
    gpu: GpuSpec,
    config: EngineConfig,
    defaults: EngineDefaults,
    offloaded: list[int],
    samples: bool,
    first_layer: int = 0,
) -> int:
    """V0's activation peak on one rank of a stage: the forward pass (``v0_forward_peak_bytes``)
    or, on the stage that samples, the sampler over max_num_seqs rows of the whole vocabulary
    (``V0_SAMPLER_BYTES_PER_LOGIT``, with the final hidden states still held), whichever is
    larger; plus cuBLAS's workspace where the profile allocates it. The engine keeps the
    fewest blocks of any rank, so the sampling rank (TP rank 0) is the one that counts."""
    tokens, tp = defaults.max_num_batched_tokens, config.tensor_parallel_size
    peak = v0_forward_peak_bytes(model, tokens, tp, config.quantization, offloaded, first_layer)
    if samples:
        vocab = model.vocab_size or 32_000
        sampler = V0_SAMPLER_BYTES_PER_LOGIT * defaults.max_num_seqs * vocab
        peak = max(peak, sampler + tokens * model.hidden_size * 2)
    absorbed_on_gpu = (
        model.kv_lora_rank > 0
        and config.mla_weights in ("absorbed-fp32", "absorbed-bf16")
        and not all(offloaded)
    )
    if not absorbed_on_gpu:
        peak += CUBLAS_WORKSPACE_BYTES[0 if gpu.slug.startswith(HOPPER_SLUGS) else 1]
    return peak


def v0_forward_peak_bytes(
    model: ModelSpec,
    tokens: int,
    tp: int,
    quantization: Quantization,
    offloaded: list[int],
    first_layer: int = 0,
) -> int:
    """V0's profile peak in the forward pass over ``tokens`` (no chunked prefill), the largest of
    its layer kinds, each with what its offloaded weights bring back while it runs (``offloaded``:
    one entry per layer of the stage, whose first is the model's layer ``first_layer``).
    16-bit activations, H = hidden:

    * a dense MLP: the layer's input, residual, attention output and normed input (4 T H) and
      gate/up plus the activated half (3 T I / TP) alive at down_proj (Qwen2 / DeepSeek form;
      Llama rebinds its input and frees one T H earlier: over by T H x 2 B);
    * an MoE layer in fused_experts: 3 T H (4 with DeepSeek's shared experts, whose output waits
      for the routed ones), the caches for M = min(T, 32,768) tokens x top-k experts, gate/up
      and down halves sliced by TP (3 I / TP) and the unsliced down output (H), the router's
      logits (T E x 2 B), top-k weights and ids (8 T k) and the sorted ids; an FP8 block-quantised
      layer adds its quantised input (M H + 4 M ceil(H / 128))."""
    h, b, t = model.hidden_size, 2, tokens
    dense_width = model.dense_intermediate_size if model.is_moe else model.intermediate_size
    dense_count = max(model.dense_layers - first_layer, 0) if model.is_moe else len(offloaded)
    dense_layers = range(min(dense_count, len(offloaded)))
    moe_layers = range(len(dense_layers), len(offloaded))

    def brought_back(layers: range) -> int:
        return max((offloaded[i] for i in layers), default=0)

    peak = 0
    if dense_layers:
        peak = t * (4 * h + 3 * ceil_div(dense_width, tp)) * b + brought_back(dense_layers)
    if moe_layers:
        m, k, e = min(t, FUSED_MOE_CHUNK_TOKENS), model.experts_per_token, model.experts
        shared = 1 if model.kv_lora_rank else 0
        moe = (3 + shared) * t * h * b + m * k * (3 * ceil_div(model.intermediate_size, tp) + h) * b
        moe += t * e * b + 8 * t * k + 4 * (m * k + 63 * e)
        if quantization == "fp8":
            moe += m * h + 4 * m * ceil_div(h, 128)
        peak = max(peak, moe + brought_back(moe_layers))
    return peak


def in_flight_batches(config: EngineConfig, on_v2: bool) -> int:
    """Scheduling steps whose tokens a sliding-window layer must still hold (the window's
    reserve is window - 1 + this x max_num_batched_tokens). From vLLM PR #47728 ("Free
    out-of-window blocks on the processed-token basis under async scheduling", in 0.27.1 and
    0.29) ``max_in_flight_tokens`` counts every batch in flight: two under async scheduling, the
    default (pipeline stages + 1 on Model Runner V2). ``VllmConfig.max_in_flight_tokens`` is
    first in the 0.26.0 wheel; 0.23.0-0.25.0 reserve window - 1 + max_num_batched_tokens (the
    0.24 H200 Gemma 3 text run: 531,880 tokens, 1,089 blocks for each sliding group). The 0.28
    gpt-oss-20b log on XPU needs it (131,815 tokens: 67 blocks for the 128-token window with
    2 x 2,048 in flight). Earlier releases: one step."""
    if config.version not in V2_ERAS:
        return 1
    if config.version == "v2-runner" and config.release and config.release < (0, 26, 0):
        return 1
    if on_v2:
        return config.pipeline_parallel_size + 1
    return max(2, config.pipeline_parallel_size)


def v2_forward_peak_bytes(model: ModelSpec, defaults: EngineDefaults, value_bytes: int) -> int:
    """Model Runner V2's warm profile peak (``V2_FORWARD_VALUES_PER_TOKEN``): the MLP's widest
    moment over max_num_batched_tokens, or the dummy sampler's logits if they are larger."""
    per_intermediate, per_hidden = V2_FORWARD_VALUES_PER_TOKEN
    # An MoE token goes through experts_per_token experts of intermediate_size each.
    mlp = model.intermediate_size * max(model.experts_per_token, 1)
    width = per_intermediate * mlp + per_hidden * model.hidden_size
    forward = defaults.max_num_batched_tokens * width * value_bytes
    sampler = defaults.max_num_seqs * (model.vocab_size or 32_000) * value_bytes
    return max(forward, sampler)


def subtracts_graph_estimate(model: ModelSpec, gpu: GpuSpec, config: EngineConfig) -> bool:
    """The original runner of 0.21 on takes its CUDA-graph estimate out of the KV budget; V2,
    eager mode and ROCm builds (until vLLM PR #48526) do not."""
    return (
        config.version in GRAPH_ESTIMATE_ERAS
        and config.device == "cuda"
        and not runs_on_model_runner_v2(model, config)
        and not config.enforce_eager
        and not is_rocm(gpu)
    )


def is_rocm(gpu: GpuSpec) -> bool:
    """AMD Instinct GPUs run vLLM's ROCm build."""
    return gpu.slug.startswith("mi")


def custom_all_reduce(gpu: GpuSpec, tensor_parallel: int) -> bool:
    """Whether vLLM sets up its custom all-reduce (whose buffers are the larger TP > 1 non-torch
    figure): GPUs joined by NVLink or Infinity Fabric, or two PCIe GPUs with peer-to-peer
    (``CustomAllreduce`` refuses more than two PCIe-only GPUs; GeForce cards have no P2P)."""
    if tensor_parallel == 1:
        return False
    if gpu.nvlink is not None:
        return True
    return tensor_parallel == 2 and not gpu.slug.startswith("rtx")


def rope_cache_bytes(model: ModelSpec, value_bytes: int = 2) -> int:
    """The rotary cos/sin caches every rank builds while loading ("Model loading took" counts
    them): rows x rotary dimension in the model's dtype, one per distinct rope (vLLM's
    ``RotaryEmbedding`` registers ``cos_sin_cache`` as a buffer; ``get_rope`` shares it). Llama
    3.1 8B: 131,072 x 128 x 2 B = 32 MiB (its logs: 14.9888 GiB against 14.9575 of parameters);
    Gemma 3 4B: (131,072 + 1,048,576) x 256 x 2 B = 0.5625 GiB."""
    rows = model.rope_cache_rows or (model.max_context_tokens,)
    rotary = (
        model.qk_rope_head_dim
        if model.kv_lora_rank
        else model.rotary_dim or model.resolved_head_dim
    )
    return sum(rows) * rotary * value_bytes


def model_dtype_bytes(config: EngineConfig) -> int:
    """Bytes of a value in the model's own dtype (the 16-bit checkpoint's, or --dtype float32):
    what the rope caches, routers and linear-attention states are held in."""
    return 4 if config.dtype == "float32" else 2


def _embedding_params(model: ModelSpec) -> int:
    return model.vocab_size * model.hidden_size


def _round_up(n: int, multiple: int) -> int:
    return ceil_div(n, multiple) * multiple


def mxfp4_backend_for(gpu: GpuSpec, version: EngineEra) -> Mxfp4Backend:
    """The MoE backend vLLM selects for MXFP4 experts (``get_mxfp4_backend`` in
    ``vllm/model_executor/layers/quantization/mxfp4.py``, read at vllm-project/vllm 007d5005):
    FlashInfer TRT-LLM on Blackwell (SM100, FlashInfer installed, the default there); the
    triton_kernels path on Hopper only when triton_kernels and torch >= 2.8.0 are present,
    which the 0.10.0 / 0.10.1 wheels (torch 2.7.1) are not: the H100 log of vLLM issue #23278
    (0.10.1) prints marlin_utils_fp4's "Weight-only FP4 compression will be used leveraging the
    Marlin kernel"; Marlin on everything below SM90 (A100, L40S, RTX 4090) and as the
    fallback."""
    if gpu.fp4 and version not in ("v0", "v1-0.10"):
        return "flashinfer-trtllm"
    if gpu.slug.startswith(HOPPER_SLUGS) and version not in ("v0", "v1-0.10"):
        return "triton-padded" if version in LATER_ERAS else "triton"
    return "marlin"


def mxfp4_expert_bytes(model: ModelSpec, tensor_parallel: int, backend: Mxfp4Backend) -> int:
    """Bytes of one rank's MXFP4 experts as vLLM holds them after loading.

    From ``Mxfp4MoEMethod.create_weights`` (vllm-project/vllm 007d5005, the same branches as the
    0.10.1-0.14 releases): each rank gets ``intermediate_size // tp`` of every expert, then pads
    it. Per expert: ``w13_weight`` (2 I_pad x H_pad / 2 bytes, two FP4 values a byte),
    ``w13_weight_scale`` (2 I_pad x H_pad / 32, one E8M0 byte per 32 values), ``w13_bias``
    (2 I_pad), ``w2_weight`` (H_pad x I_pad / 2), ``w2_weight_scale`` (H_pad x I_pad / 32),
    ``w2_bias`` (H_pad).

    * marlin: I_pad = round_up(I, 128), H_pad = round_up(H, 256) ("the moe marlin kernel
      requires n % 256 == 0 and k % 128 == 0"); ``prepare_moe_fp4_layer_for_marlin``
      (``utils/marlin_utils_fp4.py``) repacks the weights (same bytes), turns the scales back
      into 1-byte E8M0 and the biases into bf16, replacing each parameter.
    * triton (Hopper): I_pad = round_up(I, 64), H unpadded. ``process_weights_after_loading``
      makes the biases fp32, swizzles weights and scales with ``_swizzle_mxfp4``
      (``utils/mxfp4_utils.py``) and deletes only ``w13_weight`` / ``w2_weight``: the
      checkpoint-layout scale parameters stay on the layer beside the swizzled copies held in
      the precision configs. The swizzled scales follow triton_kernels'
      ``HopperMXScaleLayout`` (``tensor_details/layout_details/hopper_scale.py``): the
      non-block dimension padded to 2 x num_warps x 2 x 8 = 256 (vLLM passes num_warps 8), the
      block dimension to even. (With torch < 2.8.1 on Hopper ``_swizzle_mxfp4`` falls back to
      StridedLayout views and the second copy does not exist; the two H100 triton logs
      collected both show the swizzled figure.)
    * triton-padded (Hopper, 0.17 on): the triton_kernels copy vLLM bundles (0.19.0 at
      2a69949bd, ``vllm/third_party/triton_kernels``) also pads the packed weights in
      ``HopperMXValueLayout.swizzle_data`` to multiples of 64 in both dimensions ("Pre-pad both
      matrix dims to multiples of 64"): gpt-oss-20b at TP 1 gains 0.198 GiB (the llm-d-planner
      v0.19 logs: 13.64 GiB; 0.11 logged 13.47). Where between 0.14.1 (unpadded, issue
      #33155) and 0.19.0 it began is not pinned; the era boundary (0.17) is assumed.
    * flashinfer-trtllm (Blackwell): I_pad = H_pad = round_up(., 256); shuffled weights and
      scales replace the originals, biases become fp32. No log collected: unverified.
    * xpu (Intel, ``Mxfp4MoeBackend.XPU`` in ``fused_moe/oracle/mxfp4.py``): I_pad =
      round_up(I, 64), H unpadded, the checkpoint's bf16 biases, nothing converted after
      loading ("No additional transformation needed for XPU backend"). gpt-oss-20b: 13,236,480
      B an expert; the Arc Pro B60 logs print 12.87 GiB against 12.83 predicted.
    """
    tp = tensor_parallel
    width = model.intermediate_size // tp
    hidden = model.hidden_size
    if backend == "marlin":
        i_pad, h_pad, bias_bytes = _round_up(width, 128), _round_up(hidden, 256), 2
    elif backend == "xpu":
        i_pad, h_pad, bias_bytes = _round_up(width, 64), hidden, 2
    elif backend == "flashinfer-trtllm":
        i_pad, h_pad, bias_bytes = _round_up(width, 256), _round_up(hidden, 256), 4
    else:
        i_pad, h_pad, bias_bytes = _round_up(width, 64), hidden, 4
    per_expert = (
        2 * i_pad * h_pad // 2  # w13_weight
        + 2 * i_pad * h_pad // 32  # w13_weight_scale
        + h_pad * i_pad // 2  # w2_weight
        + h_pad * i_pad // 32  # w2_weight_scale
        + (2 * i_pad + h_pad) * bias_bytes  # w13_bias, w2_bias
    )
    if backend in ("triton", "triton-padded"):
        per_expert += _round_up(2 * i_pad, 256) * _round_up(h_pad // 32, 2)  # swizzled w13 scale
        per_expert += _round_up(h_pad, 256) * _round_up(i_pad // 32, 2)  # swizzled w2 scale
    if backend == "triton-padded":
        # HopperMXValueLayout.swizzle_data pads both dims of the packed (two values a byte)
        # weights to 64: w13 is swizzled as [H/2, 2 I], w2 as [I/2, H].
        per_expert += _round_up(h_pad // 2, 64) * _round_up(2 * i_pad, 64) - h_pad // 2 * 2 * i_pad
        per_expert += _round_up(i_pad // 2, 64) * _round_up(h_pad, 64) - i_pad // 2 * h_pad
    return model.layers * model.experts * per_expert


def loaded_weight_bytes(
    model: ModelSpec,
    quantization: Quantization,
    tensor_parallel: int,
    mxfp4_backend: Mxfp4Backend = "triton",
    int4_group_size: int = 128,
) -> int:
    """Weights on one rank as the engine loads them (vocab-parallel embedding and LM head, every
    matrix sliced by TP; the decoder's norms are negligible). MXFP4: the experts as
    ``mxfp4_expert_bytes`` lays them out (``mxfp4_backend`` must be resolved, not auto), the
    rest 16-bit. ``model.replicated_params`` (a vision tower's convolution, norms and
    row-parallel biases) are whole and 16-bit on every rank."""
    tp = tensor_parallel
    whole = model.replicated_params * 2
    total = model.total_params - model.replicated_params  # sliced by TP
    if quantization == "none":
        return ceil_div(total * 2, tp) + whole
    if quantization == "fp8":
        sixteen = 2 * _embedding_params(model)  # embedding + untied LM head stay 16-bit
        return ceil_div((total - sixteen) + sixteen * 2, tp) + whole
    if quantization in INT4_BYTES:
        num, den = INT4_BYTES[quantization]
        sixteen = 2 * _embedding_params(model)
        return ceil_div((total - sixteen) * num + sixteen * 2 * den, den * tp) + whole
    require(
        model.is_moe and model.intermediate_size > 0,
        "quantization",
        f"{quantization} needs an MoE model",
    )
    h, i = model.hidden_size, model.intermediate_size
    if quantization == "w4a16-experts":
        rest = ceil_div((total - model.layers * model.experts * 3 * h * i) * 2, tp)
        return w4a16_expert_bytes(model, tp, int4_group_size) + rest + whole
    require(mxfp4_backend != "auto", "mxfp4_backend", "resolve auto with mxfp4_backend_for")
    # Logical expert parameters (gate/up/down and their biases) leave the 16-bit remainder.
    logical = model.layers * model.experts * (3 * h * i + 2 * i + h)
    rest = ceil_div((total - logical) * 2, tp)
    return mxfp4_expert_bytes(model, tp, mxfp4_backend) + rest + whole


def pipeline_partition(layers: int, pipeline_parallel: int, version: EngineEra) -> list[int]:
    """Layers per pipeline stage as vLLM's ``get_pp_indices`` splits them: from 0.8 (PR #13839)
    the remainder goes one layer each to the stages before the last, from the second-to-last
    back (61 over 2: [31, 30]); before it, all of it to the last stage ([30, 31])."""
    base, remainder = divmod(layers, pipeline_parallel)
    counts = [base] * pipeline_parallel
    if version == "v0":
        counts[-1] += remainder
    else:
        for i in range(2, remainder + 2):
            counts[-i] += 1
    return counts


def _mla_attention_params(model: ModelSpec) -> int:
    """One MLA layer's projections (DeepSeek: the no-RoPE query/key head and the value head
    are both ``head_dim``)."""
    h, heads, head = model.hidden_size, model.attention_heads, model.resolved_head_dim
    q_out = heads * (head + model.qk_rope_head_dim)
    q = h * model.q_lora_rank + model.q_lora_rank * q_out if model.q_lora_rank else h * q_out
    kv_a = h * (model.kv_lora_rank + model.qk_rope_head_dim)
    kv_b = model.kv_lora_rank * heads * 2 * head
    return q + kv_a + kv_b + heads * head * h


def _attention_params(model: ModelSpec) -> int:
    if model.kv_lora_rank:
        return _mla_attention_params(model)
    h, head = model.hidden_size, model.resolved_head_dim
    return 2 * h * model.attention_heads * head + 2 * h * model.kv_heads * head


def layer_weight_bytes(model: ModelSpec, body_bytes: int, config: EngineConfig) -> list[int]:
    """Bytes each decoder layer puts on one rank, ``body_bytes`` (the rank's weights less any
    embedding and head held apart) shared out as vLLM lays it out:

    * an MoE model's leading dense layers (DeepSeek's first 3) hold their dense FFN instead of
      the experts, so layers are not alike (per-stage weights follow which layers a stage has);
    * ``ReplicatedLinear`` layers are whole on every TP rank: every MoE router (16-bit) and
      MLA's q_a_proj and kv_a_proj_with_mqa (0.93 GiB a rank for DeepSeek-V3 at TP 8);
    * MLA keeps more after loading (``mla_weights``, ``mla_extra_bytes``).

    Checked on DeepSeek-V3/R1 FP8 logs (the FP8 block scales, ~0.03%, are not counted):
    vLLM 0.6.6 TP 8 x PP 4, stage 0: 16.9538 against 16.9583 GiB (DeepSeek-V3 issue #205);
    0.7.3 TP 8: 83.76 against 83.88 (8x H200); 0.7.2 TP 8 x PP 2, stage 0: 39.60 against 39.66
    (vLLM issue #13074)."""
    tp, layers = config.tensor_parallel_size, model.layers
    if config.quantization == "bnb-nf4":
        # Layers the checkpoint keeps 16-bit are heavier; norms and biases are shared evenly.
        linear = bnb_layer_bytes(model, config)
        rest = even_shares(body_bytes - sum(linear), layers)
        return [a + b for a, b in zip(linear, rest, strict=True)]
    sixteen = model_dtype_bytes(config)
    # Bytes of a weight-matrix parameter (a fraction for 4-bit layouts).
    num, den = INT4_BYTES.get(
        config.quantization, (1 if config.quantization == "fp8" else sixteen, 1)
    )
    per_layer = even_shares(body_bytes, layers)
    if model.dense_layers:
        ffn = 3 * model.hidden_size * model.dense_intermediate_size
        dense = ceil_div((_attention_params(model) + ffn) * num, den * tp)
        moe = even_shares(body_bytes - model.dense_layers * dense, layers - model.dense_layers)
        per_layer = [dense] * model.dense_layers + moe
    # Replicated parts: whole on the rank, less the 1/TP share body_bytes already counted (at
    # the matrix bytes: the router is 16-bit even in a quantised checkpoint).
    router = model.hidden_size * model.experts if model.is_moe else 0
    router_extra = router * sixteen - ceil_div(router * num, den * tp)
    low_rank_params = (
        model.hidden_size * (model.q_lora_rank + model.kv_lora_rank + model.qk_rope_head_dim)
        if model.kv_lora_rank
        else 0
    )
    low_rank = ceil_div(low_rank_params * num, den)
    mla = mla_extra_bytes(model, config) if model.kv_lora_rank else 0
    for i in range(layers):
        has_router = i >= model.dense_layers
        per_layer[i] += low_rank - ceil_div(low_rank, tp) + (router_extra if has_router else 0)
        per_layer[i] += mla
    return per_layer


FP8_BLOCK = 128
"""DeepSeek's FP8 block: one fp32 scale per 128 x 128 weights (requantised copies too)."""


def mla_extra_bytes(model: ModelSpec, config: EngineConfig) -> int:
    """What one MLA layer keeps on one rank beyond its checkpoint weights (``MlaWeights``), with
    n = heads / TP, q_in = q_lora_rank (or hidden), r = kv_lora_rank:

    * absorbed (V0 0.7.1-0.7.3): W_Q_UK [q_in, n r] and W_UV_O [n r, hidden], FP8 with a scale
      per 128 x 128 block for an FP8 checkpoint (16-bit otherwise); W_QR [q_in, n rope] 16-bit;
      for an FP8 checkpoint the dequantised kv_b_proj [r, n 2 head] (W_UK / W_UV are views of
      it), fp32 in 0.7.1-0.7.2, bf16 in 0.7.3. DeepSeek-V3 at TP 8: 12,582,912 + 3,072 +
      58,720,256 + 14,336 + 3,145,728 + 4,194,304 (bf16) = 78,660,608 B a layer;
    * current (0.8 on): only that dequantised kv_b_proj, bf16, for an FP8 checkpoint."""
    fp8 = config.quantization == "fp8"
    n = ceil_div(model.attention_heads, config.tensor_parallel_size)
    r, head = model.kv_lora_rank, model.resolved_head_dim
    kv_b = r * n * 2 * head if fp8 else 0
    if config.mla_weights == "plain":
        return 0
    if config.mla_weights == "current":
        return kv_b * 2
    q_in = model.q_lora_rank or model.hidden_size
    absorbed = q_in * n * r + n * r * model.hidden_size
    if fp8:
        scales = ceil_div(q_in, FP8_BLOCK) * ceil_div(n * r, FP8_BLOCK)
        scales += ceil_div(n * r, FP8_BLOCK) * ceil_div(model.hidden_size, FP8_BLOCK)
        absorbed += 4 * scales
    else:
        absorbed *= 2
    w_qr = q_in * n * model.qk_rope_head_dim * 2
    return absorbed + w_qr + kv_b * (4 if config.mla_weights == "absorbed-fp32" else 2)


PRE_MLA_HEAD_SIZE = 256
"""The padded head size of DeepSeek attention before the MLA latent cache (0.5-0.7.0)."""


def _layer_bytes_per_token(
    model: ModelSpec, kind: LayerType, tp: int, kv_format: NumberFormat, config: EngineConfig
) -> int:
    """One layer's KV bytes per token on one rank (the page is block_size of these). The V0
    cache engine aligns MLA entries to 256 bytes (``align_to_256bytes``): DeepSeek's 576 values
    x 2 B = 1,152 B take 1,280 (the 8x H200 DeepSeek-R1 log: 18,418 blocks, 0.9x the unaligned
    count). Before 0.7.1 an MLA layer cached K and V of 256 values for each of its heads (the
    H100 DeepSeek-V2-Lite-Chat log of vLLM PR #10927: 35.42 GiB for 85,968 tokens, 442,396 B a
    token = 27 layers x 2 x 16 heads x 256 x 2 B)."""
    if kind == "mla" and not config.mla_latent_cache:
        values = 2 * ceil_div(model.attention_heads, tp) * PRE_MLA_HEAD_SIZE
        num, den = kv_format.bits_ratio
        return ceil_div(values * num, 8 * den)
    shape = kv_shape(model, kv_format, tp, (kind,))
    per_token = shape.growth_bytes_per_token + shape.sliding_bytes_per_token
    return _round_up(per_token, 256) if config.version == "v0" and kind == "mla" else per_token


KERNEL_BLOCK_ALIGNMENT_TOKENS = 16
"""Attention backends take block sizes in multiples of 16 tokens (vLLM's
``HybridAttentionMambaModelConfig``: "some attention backends (e.g. FA) only support setting
block size to multiple of 16")."""


def hybrid_block_size(
    model: ModelSpec, per_token: dict[LayerType, int], tp: int, config: EngineConfig
) -> tuple[int, int]:
    """(attention block size, linear state bytes) for a model with linear-attention layers
    (vLLM 0.10.2 ``HybridAttentionMambaModelConfig.verify_and_update_config``): the block grows
    to 16 x ceil(state / (16 x one token's attention page)) tokens unless the flag asks for
    more, and the state's page is padded to the attention page ("Setting attention block size
    to 544 tokens ... Padding mamba page size by 1.49%" for Qwen3-Next at TP 2: a 548,864 B
    state against 1,024 B a token). The state is in the model's dtype, never the KV cache's."""
    require(
        config.version not in ("v0", "v1-0.10"),
        "vllm_version",
        "linear-attention (Gated DeltaNet) models are served from vLLM 0.10.2 on",
    )
    state = linear_state_values(model, tp) * model_dtype_bytes(config)
    attention_token = max(v for k, v in per_token.items() if k != "linear")
    align = KERNEL_BLOCK_ALIGNMENT_TOKENS
    needed = align * ceil_div(state, align * attention_token)
    return max(config.block_size, needed), state


class _Groups(msgspec.Struct, frozen=True):
    group_size: int
    full_groups: int
    sliding_groups: int
    linear_groups: int = 0


def kv_groups(layers: tuple[LayerType, ...]) -> _Groups:
    """vLLM's hybrid grouping (``_get_kv_cache_config_uniform_page_size``): layers grouped by
    spec type (full attention and MLA; sliding window; linear attention's mamba state), in
    groups of equal size, the smallest type count (or the largest one when it is under 1.5x
    the smallest); a single type is one group of every layer."""
    full = sum(1 for t in layers if t in ("full", "mla"))
    sliding = sum(1 for t in layers if t == "sliding")
    linear = len(layers) - full - sliding
    present = [n for n in (full, sliding, linear) if n]
    if len(present) == 1:
        return _Groups(len(layers), int(full > 0), int(sliding > 0), int(linear > 0))
    small, large = min(present), max(present)
    size = large if large < 1.5 * small else small
    return _Groups(size, ceil_div(full, size), ceil_div(sliding, size), ceil_div(linear, size))


class _Stage(msgspec.Struct, frozen=True, kw_only=True):
    """One pipeline stage's budget and blocks (every TP rank of a stage is alike)."""

    weights: int
    activation: int
    kv_bytes: int
    blocks: int
    page: int
    block_bytes: int
    groups: int
    per_request: int
    need: int


def _gib(n: int) -> float:
    return round(n / GiB, 2)


def predict_vllm(
    model: ModelSpec, gpu: GpuSpec, config: EngineConfig | None = None
) -> EnginePrediction:
    """What vLLM will log at start-up for this model on ``gpu`` with ``config``."""
    config = config or EngineConfig()
    validate_model(model)
    tp, pp = config.tensor_parallel_size, config.pipeline_parallel_size
    require(1 <= tp <= 1024, "tensor_parallel_size", "must be between 1 and 1024")
    require(1 <= pp <= model.layers, "pipeline_parallel_size", "must be between 1 and the layers")
    require(config.block_size in (1, 8, 16, 32, 64, 128, 256), "block_size", "not a vLLM size")
    if config.max_model_len is not None:
        require(config.max_model_len >= 1, "max_model_len", "must be at least 1")
    require(config.cpu_offload_bytes >= 0, "cpu_offload_bytes", "must not be negative")
    problem = tensor_parallel_problem(model, tp)
    if problem:
        raise SizingError("tensor_parallel_size", problem)
    total = config.gpu_total_bytes or torch_visible_bytes(gpu)
    require(total > 0, "gpu_total_bytes", "must be positive")
    d = engine_defaults(model, total, gpu.slug, config)
    require(d.max_num_batched_tokens >= 1, "max_num_batched_tokens", "must be at least 1")
    require(d.max_num_seqs >= 1, "max_num_seqs", "must be at least 1")
    require(0 < d.gpu_memory_utilization <= 1, "gpu_memory_utilization", "must be in (0, 1]")
    notes: list[str] = [f"Defaults: {d.rule}."]

    usable = int(total * d.gpu_memory_utilization)
    backend: Mxfp4Backend = config.mxfp4_backend
    if backend == "auto":
        backend = "xpu" if config.device == "xpu" else mxfp4_backend_for(gpu, config.version)
    if config.quantization == "bnb-nf4":
        require(not release_0_28_or_later(config), "quantization", BNB_REMOVED)
        require(config.bnb_absmax in ("nested", "fp32"), "bnb_absmax", "must be nested or fp32")
        loaded = bnb_loaded_bytes(model, config)
        scales = (
            "double-quantised block scales kept"
            if config.bnb_absmax == "nested"
            else "block scales dequantised to fp32 at load"
        )
        skipped = config.bnb_skip_attention_layers or config.bnb_skip_mlp_layers
        also = " and the checkpoint's skipped layers" if skipped else ""
        notes.append(
            f"bitsandbytes 4-bit: packed weights and their quant states ({scales}); "
            f"embeddings, LM head, norms{also} in 16-bit."
        )
    else:
        loaded = loaded_weight_bytes(
            model, config.quantization, tp, backend, config.int4_group_size
        )
    if config.dtype == "float32" and config.quantization == "none":
        loaded *= 2  # 4 bytes a parameter instead of 2
    rope = rope_cache_bytes(model, model_dtype_bytes(config))
    if config.quantization == "mxfp4":
        notes.append(f"MXFP4 experts laid out as vLLM's {backend} MoE backend holds them.")
    on_v2 = runs_on_model_runner_v2(model, config)
    logits = d.max_num_seqs * (model.vocab_size or 32_000) * 4  # the sampler's fp32 logits
    if config.version == "v0":
        activation_peak = 0  # per stage, below (v0_forward_peak_bytes, the sampler)
    elif on_v2:
        activation_peak = v2_forward_peak_bytes(model, d, model_dtype_bytes(config))
        compiles = config.compile_cache == "cold" and not config.enforce_eager
        if compiles and config.device == "cuda":
            activation_peak = max(
                activation_peak, V2_ACTIVATION_BYTES_PER_HIDDEN * model.hidden_size
            )
    else:
        activation_peak = int(SAMPLER_FACTOR[config.version] * logits)
    if config.device == "xpu":
        non_torch = XPU_NON_TORCH_BYTES[on_v2] + (0 if config.enforce_eager else XPU_COMPILE_BYTES)
    else:
        non_torch = NON_TORCH_BYTES[config.version][1 if custom_all_reduce(gpu, tp) else 0]
    graphs = CUDA_GRAPH_ESTIMATE_BYTES if subtracts_graph_estimate(model, gpu, config) else 0

    kv_format = FORMATS[
        "fp8" if config.kv_cache_dtype == "fp8" else "fp32" if config.dtype == "float32" else "bf16"
    ]
    mml = d.max_model_len
    per_token = {
        kind: _layer_bytes_per_token(model, kind, tp, kv_format, config)
        for kind in set(model.resolved_layer_types)
    }
    bs, state_page = config.block_size, 0
    if config.device == "xpu":
        bs = max(bs, XPU_MIN_BLOCK_TOKENS)
    if "linear" in per_token:
        bs, state_page = hybrid_block_size(model, per_token, tp, config)
        notes.append(
            f"Linear-attention layers: attention block size {bs} tokens, so that an attention "
            f"page holds one sequence's recurrent state ({state_page:,} B, padded to the page)."
        )
    # Blocks one request of max_model_len needs per layer: every token on a full-attention (or
    # MLA) layer, the window plus one scheduling step (and a block) on a sliding one, one block
    # (its state) on a linear one.
    full_blocks = ceil_div(mml, bs)
    window = model.sliding_window_tokens
    in_flight = d.max_num_batched_tokens * in_flight_batches(config, on_v2)
    sliding_blocks = ceil_div(min(window - 1 + in_flight, mml), bs) + 1 if window else 0
    blocks_of = {"full": full_blocks, "mla": full_blocks, "sliding": sliding_blocks, "linear": 1}
    # Pipeline stages: the first holds the embedding, the last the LM head and the sampler (the
    # V1 activation peak); the layers' weights follow their count. The engine keeps the fewest
    # blocks of any rank (vLLM PR #20665's TP2 x PP2 log: 12.13 GiB on the first stage, 11.33 on
    # the last, which samples).
    edge = ceil_div(_embedding_params(model) * 2, tp)
    per_layer = layer_weight_bytes(model, loaded - 2 * edge, config)
    # LoRA: the extra vocabulary rows are part of the model (built with the LoRA config, so in
    # the weights line in every release); the adapter slots are counted where the release
    # measures them (lora_in_weights_of).
    vocab_first = vocab_last = lora_layer = lora_first = lora_last = punica = 0
    if config.enable_lora:
        _validate_lora(model, config)
        rows_embedding, rows_head = lora_vocab_rows(model, config)
        vocab_first = ceil_div(rows_embedding * model.hidden_size * 2, tp)
        vocab_last = ceil_div(rows_head * model.hidden_size * 2, tp)
        layer_slots = lora_layer_bytes(model, config)
        emb_slots, logit_slots = lora_embedding_bytes(model, config)
        indices = punica_metadata_bytes(config, d)
        slots = layer_slots * model.layers + emb_slots + logit_slots + indices
        where = (
            ", counted in the weights (vLLM 0.8 and later)"
            if config.lora_in_weights
            else " that this release allocates after measuring the weights: they are in neither "
            "the weights line nor the KV budget, and come out of the memory "
            "gpu_memory_utilization leaves free"
        )
        notes.append(
            f"LoRA: {config.max_loras} slot(s) of rank {config.max_lora_rank} take "
            f"{_gib(slots)} GiB a rank{where}."
        )
        if config.lora_in_weights:
            lora_layer, lora_first, lora_last, punica = layer_slots, emb_slots, logit_slots, indices
    # Before 0.8 vLLM's DeepSeek built its LM head on every pipeline stage (PR #13833).
    head_everywhere = config.version == "v0" and model.kv_lora_rank > 0
    types = model.resolved_layer_types
    best: _Stage | None = None
    stage_weights: list[int] = []
    start = 0
    mla_extra = mla_extra_bytes(model, config) if model.kv_lora_rank else 0
    for index, count in enumerate(pipeline_partition(model.layers, pp, config.version)):
        layers, stage_layers = types[start : start + count], per_layer[start : start + count]
        start += count
        # --cpu-offload-gb: MLA's absorbed copies are built where their weights are (on the CPU
        # for a layer offloaded whole).
        checkpoint = [size - mla_extra for size in stage_layers]
        offloaded = offloaded_layer_bytes(checkpoint, config.cpu_offload_bytes)
        stage_bytes = sum(
            kept - off + (mla_extra if off < kept else 0)
            for kept, off in zip(checkpoint, offloaded, strict=True)
        )
        first, last = index == 0, index == pp - 1
        weights = stage_bytes + edge * (first + (last or head_everywhere)) + rope
        weights += (vocab_first + lora_first) * first + (vocab_last + lora_last) * last
        weights += lora_layer * count + punica
        stage_weights.append(weights)
        # V1's peak is the sampler, on the last stage only; Model Runner V2 peaks in the forward
        # pass, on every stage; V0 in the larger of the two.
        activation = activation_peak if last or on_v2 else 0
        if config.version == "v0":
            activation = v0_activation_bytes(model, gpu, config, d, offloaded, last, start - count)
        kv_bytes = usable - weights - activation - non_torch - graphs
        groups = kv_groups(layers)
        # With linear layers every page is the model's attention page (their states are padded
        # to it), even on a stage of linear layers only.
        kinds = set(per_token) if state_page else set(layers)
        page = bs * max(per_token[k] for k in kinds)
        block_bytes = page * groups.group_size
        blocks = max(kv_bytes, 0) // block_bytes
        per_request = (
            groups.full_groups * full_blocks
            + groups.sliding_groups * sliding_blocks
            + groups.linear_groups
        )
        need = sum(
            page if kind == "linear" else bs * blocks_of[kind] * per_token[kind] for kind in layers
        )
        stage = _Stage(
            weights=weights,
            activation=activation,
            kv_bytes=kv_bytes,
            blocks=blocks,
            page=page,
            block_bytes=block_bytes,
            groups=groups.full_groups + groups.sliding_groups + groups.linear_groups,
            per_request=per_request,
            need=need,
        )
        if best is None or stage.blocks // stage.groups < best.blocks // best.groups:
            best = stage
    assert best is not None
    weights, activation, kv_bytes = best.weights, best.activation, best.kv_bytes
    blocks, page, block_bytes, n_groups, need = (
        best.blocks,
        best.page,
        best.block_bytes,
        best.groups,
        best.need,
    )
    concurrency = blocks / best.per_request if best.per_request else 0.0
    if config.version == "v0":
        tokens = blocks * bs
    elif config.version in GRAPH_ESTIMATE_ERAS:
        # Newer _report_kv_cache_config (vLLM PRs #38364 / #40694, after 0.19): concurrency x
        # max_model_len; the 0.23 Gemma 3 log on MI300X prints 1,217,591, not a block multiple.
        tokens = int(concurrency * mml)
    else:
        tokens = blocks // n_groups * bs

    failure: str | None = None
    startup = STARTUP_USAGE_BYTES[0 if tp * pp == 1 else 1]
    if config.version in LATER_ERAS and usable > total - startup:
        failure = (
            f"Free memory on device ({_gib(total - startup)}/{_gib(total)} GiB) on startup is "
            f"less than desired GPU memory utilization ({d.gpu_memory_utilization}, "
            f"{_gib(usable)} GiB)"
        )
    elif kv_bytes <= 0:
        failure = (
            "No available memory for the cache blocks (the weights, activation peak and "
            "non-torch memory leave nothing for the KV cache)"
        )
    elif config.version != "v0" and need > kv_bytes:
        failure = (
            f"To serve at least one request with the model's max seq len ({mml}), "
            f"({_gib(need)} GiB KV cache is needed, which is larger than the available KV cache "
            f"memory ({_gib(kv_bytes)} GiB)"
        )
    elif config.version == "v0" and tokens < mml:
        failure = (
            f"The model's max seq len ({mml}) is larger than the maximum number of tokens that "
            f"can be stored in KV cache ({tokens})"
        )
    elif (
        not graphs
        and not config.enforce_eager
        and config.device == "cuda"
        and total - usable < MIN_CUDA_GRAPH_BYTES
    ):
        failure = (
            f"CUDA out of memory capturing CUDA graphs: the KV cache takes the budget up to "
            f"gpu_memory_utilization {d.gpu_memory_utilization}, leaving "
            f"{_gib(total - usable)} GiB for the graphs, which this release captures afterwards"
        )
    if n_groups > 1:
        notes.append(
            f"Hybrid KV cache: {n_groups} layer groups; the tokens line counts "
            + (
                "max_model_len x concurrency."
                if config.version in GRAPH_ESTIMATE_ERAS
                else "blocks per group x block_size."
            )
        )
    if graphs:
        notes.append(
            f"CUDA-graph memory is an estimate ({_gib(graphs)} GiB, the median of vLLM's own "
            "estimates in collected logs), subtracted from the budget as 0.21 and later do."
        )

    per_gpu = EngineGpu(
        total_bytes=total,
        usable_bytes=usable,
        weights_bytes=weights,
        activation_bytes=activation,
        non_torch_bytes=non_torch,
        cuda_graph_bytes=graphs,
        kv_cache_bytes=kv_bytes,
        page_bytes=page,
        block_bytes=block_bytes,
        num_blocks=blocks,
        total_gib=_gib(total),
        usable_gib=_gib(usable),
        weights_gib=round(weights / GiB, 4),
        activation_gib=_gib(activation),
        non_torch_gib=_gib(non_torch),
        cuda_graph_gib=_gib(graphs),
        kv_cache_gib=_gib(kv_bytes),
    )
    conc = round(concurrency, 2) if failure is None else 0.0
    lines = [
        f"Model loading took {per_gpu.weights_gib:.4f} GiB",
        f"Available KV cache memory: {per_gpu.kv_cache_gib:.2f} GiB",
    ]
    if failure:
        lines.append(f"ValueError: {failure}")
    else:
        lines += [
            f"GPU KV cache size: {tokens:,} tokens",
            f"Maximum concurrency for {mml:,} tokens per request: {conc:.2f}x",
        ]
    return EnginePrediction(
        model=model.slug,
        gpu=gpu.slug,
        version=config.version,
        starts=failure is None,
        failure=failure,
        kv_cache_tokens=tokens if failure is None else 0,
        max_concurrency=conc,
        max_model_len=mml,
        block_size=bs,
        stage_weights_bytes=stage_weights,
        needed_kv_bytes_per_request=need,
        blocks_per_request=best.per_request,
        defaults=d,
        kv_groups=n_groups,
        per_gpu=per_gpu,
        log_lines=lines,
        notes=notes,
    )
