"""Which vLLM release does what: one table (``CHANGES``), read by every other module.

Each row of ``CHANGES`` is a release that changed something the method models, what it
changed and where that was read; ``RELEASES`` holds what every release from a row's up to the
next row's does (``ReleaseRules``), and ``release_rules`` answers for any release. The
releases fall into accounting eras (``EngineEra``), the unit a caller names when it has no
release, and what the API calls ``engine_version``.
"""

import functools
import re
from bisect import bisect_right
from typing import Literal

import msgspec

from service.sizing.errors import SizingError
from service.sizing.vllm.calibration import (
    NON_TORCH_BYTES_0_11,
    NON_TORCH_BYTES_0_19,
    NON_TORCH_BYTES_V0,
    SAMPLER_FACTOR_0_10,
    SAMPLER_FACTOR_0_11,
    SAMPLER_FACTOR_0_19,
)

Release = tuple[int, int, int]
"""(major, minor, patch); a patch of 99 stands for a minor's last ("0.7.x")."""

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

DEFAULT_ERA: EngineEra = "v1-0.11"
"""EngineConfig's era when none is given (the core's worked examples use it)."""
LATEST_ERA: EngineEra = "v2-all"
"""The era of the current releases: what the API assumes when no version is given."""

MlaWeights = Literal["plain", "absorbed-fp32", "absorbed-bf16", "current"]
"""What vLLM's MLA keeps beside the checkpoint's weights after loading (``MLACommonImpl.
process_weights_after_loading``): plain: nothing (before 0.7.1, no MLA); absorbed-fp32 and
absorbed-bf16: V0 0.7.1-0.7.2 and 0.7.3 materialise the absorbed W_Q_UK and W_UV_O (requantised
to FP8 for an FP8 checkpoint), W_QR, and for an FP8 checkpoint the dequantised kv_b_proj in
fp32 (0.7.1-0.7.2) or bf16 (0.7.3, vLLM PR #13181); current: 0.8 on (PR #14770 dropped the
absorbed copies) keeps only the bf16 dequantised kv_b_proj of an FP8 checkpoint."""
BnbAbsmax = Literal["nested", "fp32"]
"""How vLLM keeps a bitsandbytes 4-bit matrix's block scales after loading (``bnb_matrix_bytes``):
nested, the checkpoint's double quantisation (a uint8 per 64 values and an fp32 per 256 of
those); fp32, one fp32 per 64 values (0.9.2 on dequantizes the nested scales while loading)."""
ModelRunnerRule = Literal["original", "listed", "dense-or-listed", "all"]
"""Which models Model Runner V2 serves (``runs_on_model_runner_v2``): none (the original runner),
the listed classes, every dense model and the listed MoE classes, or every model."""


class ReleaseRules(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the releases from ``first`` up to the next row's do."""

    first: Release
    era: EngineEra
    engine: Literal["V0", "V1"]
    """V0: profiling without chunked prefill, the V0 cache engine and scheduler."""
    sampler_factor: float
    """The V1 activation peak's factor (``calibration``); 0 on V0, which has its own rule."""
    non_torch_bytes: tuple[int, int]
    """(TP = 1, TP > 1 with custom all-reduce), fitted per era (``calibration``)."""
    pipeline_remainder: Literal["last-stage", "earlier-stages"]
    """Where ``get_pp_indices`` puts the layers that do not divide evenly."""
    tokens_line: Literal["blocks", "blocks-per-group", "concurrency"]
    """How "GPU KV cache size: N tokens" counts: blocks x block_size, blocks per group x
    block_size, or concurrency x max_model_len."""
    mla_latent_cache: bool
    """Whether DeepSeek's attention caches the MLA latent (vLLM PR #12601, released in 0.7.1);
    before it, it ran as plain multi-head attention with q, k and v padded to 256 ("TODO,
    support head_size 192" in the old deepseek_v2.py)."""
    mla_weights: MlaWeights
    lora_in_weights: bool
    """Whether "Model loading took" (and so the KV budget) counts the LoRA slots: vLLM PR #14469
    (March 2025, in 0.8.0) moved ``create_lora_manager`` inside ``DeviceMemoryProfiler`` in
    ``load_model``. Up to 0.7.3 the V0 ``ModelRunner.load_model`` logged "Loading model weights
    took" and only then built the ``LRUCacheWorkerLoRAManager`` (the 0.7.2 T4 log prints "Using
    PunicaWrapperGPU" after the weights line; the 0.10.0 one before "Model loading took").
    ``memory_profiling`` then measures the profile's peak from a baseline that already holds the
    slots, so before 0.8 they are counted nowhere in the KV budget."""
    lora_extra_vocab_size: int
    """LoRAConfig.lora_extra_vocab_size's default: 256 until vLLM PRs #28382 / #28545 removed the
    LoRA extra vocabulary (November 2025; taken as from 0.12.0), 0 after."""
    bnb_absmax: BnbAbsmax
    """How bitsandbytes block scales are kept: vLLM PR #19742 ("Modify the logic of BNB double
    quantization", merged June 2025, first released in 0.9.2) added
    ``BitsAndBytesModelLoader._dequantize_dq``, which replaces each nested uint8 absmax by its
    fp32 dequantisation while binding the quant states (``_bind_quant_states_to_params``);
    before it vLLM kept the checkpoint's double-quantised state as bitsandbytes'
    ``QuantState.from_dict`` built it."""
    bitsandbytes: bool
    """Whether the release has a bitsandbytes loader at all (the 0.28.0 wheel holds neither
    bitsandbytes_loader.py nor layers/quantization/bitsandbytes.py)."""
    mxfp4_native_backends: bool
    """FlashInfer TRT-LLM on Blackwell and triton_kernels on Hopper (torch >= 2.8 wheels)."""
    triton_padded: bool
    """The bundled triton_kernels pad MXFP4 weights to 64 (``mxfp4_expert_bytes``)."""
    linear_attention: bool
    """Linear-attention (Gated DeltaNet) hybrids are served."""
    gpu_memory_utilization: float
    """--gpu-memory-utilization's default: 0.92 from 0.20.0, 0.9 before (``CacheConfig`` in
    vllm/config/cache.py of the 0.19.0 and 0.20.0 wheels)."""
    largest_batch_tier: bool
    """GPUs with >= 160 GiB get the largest batch defaults (``LARGEST_DEFAULTS_BYTES``)."""
    checks_free_memory: bool
    """The engine refuses to start when utilisation x total exceeds what is free ("Free memory
    on device ... on startup is less than desired GPU memory utilization", from 0.17)."""
    subtracts_graph_estimate: bool
    """The original runner takes its CUDA-graph estimate out of the KV budget ("default since
    v0.21.0" in its log)."""
    model_runner_v2: ModelRunnerRule
    """``VllmConfig.use_v2_model_runner`` as read in the 0.23.0-0.28.0 wheels, and vLLM PR
    #53183 (0.29) for every model (``runner``)."""
    sliding_in_flight: Literal["one-step", "every-batch"]
    """The tokens a sliding window keeps beyond itself: one scheduling step, or every batch in
    flight (``in_flight_batches``)."""


_FIRST_MODELLED = ReleaseRules(
    first=(0, 5, 0),
    era="v0",
    engine="V0",
    sampler_factor=0.0,
    non_torch_bytes=NON_TORCH_BYTES_V0,
    pipeline_remainder="last-stage",
    tokens_line="blocks",
    mla_latent_cache=False,
    mla_weights="plain",
    lora_in_weights=False,
    lora_extra_vocab_size=256,
    bnb_absmax="nested",
    bitsandbytes=True,
    mxfp4_native_backends=False,
    triton_padded=False,
    linear_attention=False,
    gpu_memory_utilization=0.9,
    largest_batch_tier=False,
    checks_free_memory=False,
    subtracts_graph_estimate=False,
    model_runner_v2="original",
    sliding_in_flight="one-step",
)
"""0.5.0, the first release modelled: the V0 engine."""

_V1 = {
    "engine": "V1",
    "sampler_factor": SAMPLER_FACTOR_0_11,
    "non_torch_bytes": NON_TORCH_BYTES_0_11,
    "tokens_line": "blocks-per-group",
    "mxfp4_native_backends": True,
    "linear_attention": True,
}

CHANGES: tuple[tuple[Release, str, dict[str, object]], ...] = (
    (
        (0, 7, 1),
        "vLLM PR #12601: DeepSeek caches the MLA latent; V0 keeps the absorbed weights in fp32",
        {"mla_latent_cache": True, "mla_weights": "absorbed-fp32"},
    ),
    (
        (0, 7, 3),
        "vLLM PR #13181: the absorbed MLA weights in bf16",
        {"mla_weights": "absorbed-bf16"},
    ),
    (
        (0, 8, 0),
        "the V1 engine (its 0.11 accounting); PR #14770 drops MLA's absorbed copies; PR #14469 "
        "counts the LoRA slots in the weights; PR #13839 spreads the pipeline remainder",
        {
            "era": "v1-0.11",
            **_V1,
            "pipeline_remainder": "earlier-stages",
            "mla_weights": "current",
            "lora_in_weights": True,
        },
    ),
    (
        (0, 9, 2),
        "vLLM PR #19742: bitsandbytes' nested block scales dequantised to fp32 at load",
        {"bnb_absmax": "fp32"},
    ),
    (
        (0, 10, 0),
        "0.10.0-0.10.1: a small sampler peak; wheels on torch 2.7.1 (Marlin for MXFP4 only)",
        {
            "era": "v1-0.10",
            "sampler_factor": SAMPLER_FACTOR_0_10,
            "mxfp4_native_backends": False,
            "linear_attention": False,
        },
    ),
    (
        (0, 10, 2),
        "back to the 0.11 accounting; Gated DeltaNet hybrids served",
        {"era": "v1-0.11", **_V1},
    ),
    (
        (0, 12, 0),
        "vLLM PRs #28382 / #28545: no LoRA extra vocabulary",
        {"lora_extra_vocab_size": 0},
    ),
    (
        (0, 17, 0),
        "a smaller sampler peak, all-reduce buffers in non-torch memory, the free-memory check at "
        "start-up, the bundled triton_kernels' padded MXFP4 layout",
        {
            "era": "v1-0.19",
            "sampler_factor": SAMPLER_FACTOR_0_19,
            "non_torch_bytes": NON_TORCH_BYTES_0_19,
            "checks_free_memory": True,
            "triton_padded": True,
        },
    ),
    ((0, 20, 0), "CacheConfig: gpu_memory_utilization 0.92", {"gpu_memory_utilization": 0.92}),
    (
        (0, 21, 0),
        "the CUDA-graph estimate subtracted from the KV budget; vLLM PRs #38364 / #40694: the "
        "tokens line prints concurrency x max_model_len",
        {"era": "v1-cudagraph", "subtracts_graph_estimate": True, "tokens_line": "concurrency"},
    ),
    (
        (0, 23, 0),
        "Model Runner V2 for DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES",
        {"era": "v2-runner", "model_runner_v2": "listed"},
    ),
    (
        (0, 25, 0),
        "Model Runner V2 for every dense model and the listed MoE classes",
        {"model_runner_v2": "dense-or-listed"},
    ),
    (
        (0, 26, 0),
        "vLLM PR #47728: a sliding window keeps every batch in flight (max_in_flight_tokens)",
        {"sliding_in_flight": "every-batch"},
    ),
    (
        (0, 28, 0),
        "EngineArgs.get_batch_defaults' >= 160 GiB tier; bitsandbytes removed",
        {"largest_batch_tier": True, "bitsandbytes": False},
    ),
    (
        (0, 29, 0),
        "vLLM PR #53183: Model Runner V2 for every model",
        {"era": "v2-all", "model_runner_v2": "all"},
    ),
)
"""The one table: (first release, what changed and where it was read, the rules it changed)."""


def _releases() -> tuple[ReleaseRules, ...]:
    rows = [_FIRST_MODELLED]
    for first, _why, changes in CHANGES:
        # Converted, not replaced: a misspelt rule or a value of the wrong type fails at import.
        row = {**msgspec.structs.asdict(rows[-1]), "first": first, **changes}
        rows.append(msgspec.convert(row, ReleaseRules))
    return tuple(rows)


RELEASES: tuple[ReleaseRules, ...] = _releases()
"""What each release from a row's ``first`` up to the next row's does, oldest first."""
CURRENT = RELEASES[-1]
"""The current releases' rules (what an unreadable version, an untagged build, is taken as)."""

_RELEASE = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+|x))?")
"""A release as logs and notes print it; an "x" patch ("0.7.x") means the minor's last one."""


def release_of(version: str) -> Release | None:
    m = _RELEASE.match(version.strip())
    if not m or re.match(r"v?0\.1\.dev", version.strip()):  # an untagged build: no release
        return None
    patch = 99 if m[3] == "x" else int(m[3] or 0)
    return int(m[1]), int(m[2]), patch


_FIRSTS = tuple(row.first for row in RELEASES)
assert list(_FIRSTS) == sorted(_FIRSTS), "RELEASES runs oldest first"


def rules_of(release: Release) -> ReleaseRules:
    """The rules of a release (the last row it has reached: RELEASES runs oldest first); one
    before 0.5 (not modelled) gets the first row's."""
    return RELEASES[max(bisect_right(_FIRSTS, release) - 1, 0)]


def last_of(era: EngineEra) -> ReleaseRules:
    """The rules of an era's last release (what a caller that names only the era gets)."""
    return [row for row in RELEASES if row.era == era][-1]


def resolved_release(era: EngineEra, release: Release | None) -> Release:
    """``release`` when it lies inside ``era``; else (None, or a release of another era) the
    first release of the era's last row, which stands for the era."""
    if release is not None and rules_of(release).era == era:
        return release
    return last_of(era).first


@functools.lru_cache(maxsize=256)
def release_rules(era: EngineEra, release: Release | None) -> ReleaseRules:
    """The rules of ``release`` inside ``era`` (``resolved_release``): what every rule of the
    budget reads."""
    return rules_of(resolved_release(era, release))


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
    if release < RELEASES[0].first:  # the message only when raised
        raise SizingError(field, f"vLLM {version} predates the modelled releases (0.5+)")
    return rules_of(release).era
