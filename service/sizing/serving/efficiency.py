"""Achieved fractions of a GPU's peak and an engine's fixed costs per step.

They belong to a GPU generation and an engine, never to a case. Two kinds:

- the fractions of peak a large dense GEMM and a streaming read reach on a generation
  (``FLOPS_FRACTION``, ``BANDWIDTH_FRACTION``): public figures, each cited where it is
  defined, with whether it was re-read ("verified") or not;
- serving constants that no datasheet gives (the per-kernel and per-sequence overheads, the
  host's launch of each kernel in a step run outside a CUDA graph, the
  routed experts' kernel efficiency and its half-point, the share of a kernel's shorter side
  it hides, the FP8 grouped and dense GEMMs' scales and the served GEMMs' scale per
  generation): fitted once, over
  the benchmark runs' calibration half only, by ``bench/serving_calibration.py`` (rerun it to
  reproduce them), never from a held-out run and never per run. docs/serving.md says what
  each stands for.
"""

from typing import Literal

import msgspec

from service.sizing.errors import require

Generation = Literal["ampere", "hopper", "ada", "blackwell", "cdna3", "cdna4"]
Engine = Literal["vllm", "sglang", "tensorrt-llm"]

ARCHITECTURE_PREFIXES: tuple[tuple[str, Generation], ...] = (
    ("ampere", "ampere"),
    ("hopper", "hopper"),
    ("ada", "ada"),
    ("blackwell", "blackwell"),
    ("cdna 3", "cdna3"),
    ("cdna 4", "cdna4"),
)
"""The catalogue's ``architecture`` field ("Hopper (sm_90)", "CDNA 3 (gfx942)") names the
generation by its first words."""


class Efficiency(msgspec.Struct, frozen=True, kw_only=True):
    flops_fraction: float
    """Achieved fraction of the dense tensor-core peak in large GEMMs."""
    bandwidth_fraction: float
    """Achieved fraction of the marketed HBM bandwidth in a streaming read."""
    step_overhead_s: float
    """Fixed time of one engine step beyond its FLOPs and bytes: scheduling, input
    preparation, sampling and the output's hand-off to the API server."""
    allreduce_latency_s: float
    """Fixed latency of one tensor-parallel all-reduce (launch and synchronisation)."""
    layer_overhead_s: float = 0.0
    """Fixed time per decoder layer per step: the layer's small kernels (norms, rotary, routing,
    activation quantisation) and their launches, which the roofline leaves out."""
    kernel_overhead_s: float = 0.0
    """Fixed time per kernel a step launches: a kernel's launch, ramp and tail, which a small
    batch's kernels do not hide (CUDA graphs remove the CPU's launch cost, not this)."""
    sequence_overhead_s: float = 0.0
    """Time per running sequence per step: the scheduler's and the sampler's per-request work."""
    expert_efficiency: float = 1.0
    """What the routed experts' grouped GEMMs reach of the dense fractions, in FLOPs and in
    bytes, once each expert gets many tokens (per-expert tiles, dequantisation in the kernel)."""
    fp8_flops_scale: float = 1.0
    """What an FP8 GEMM reaches of the BF16 fraction of its (twice as high) peak. The FP8
    checkpoints served here are block-scaled (a scale per 128 x 128 weights and per 128
    activations of a token): on Hopper the kernels promote the FP8 partial sums into FP32
    with their scales every 128 of K and quantise each activation group first, which a
    BF16 GEMM does not."""
    fp8_dense_flops_scale: float | None = None
    """What the dense FP8 GEMMs (attention projections, dense MLPs, shared experts) reach of the
    BF16 fraction of their peak (None: ``fp8_flops_scale``). They run tuned block-scaled
    kernels (DeepGEMM in SGLang on Hopper by default, its ``deep_gemm_wrapper/configurer.py``;
    CUTLASS's in vLLM), where a tensor-parallel MoE's routed experts run the Triton fused-MoE
    kernel, which applies each block's scale in its inner loop (``fp8_flops_scale``, which
    attention takes too)."""
    kernel_overlap: float = 1.0
    """The share of the shorter of a kernel's math and memory times that it hides under the
    longer: 1 is the roofline (the max of the two), 0 adds them. A GEMM between the two
    regimes (tens to a few hundred rows) neither streams its weights at full bandwidth nor
    keeps its tensor cores fed, so it sits between the two."""
    eager_kernel_overhead_s: float = 0.0
    """Host time per kernel of a step the engine runs outside a CUDA graph (``StepCosts.
    eager_prefill``): PyTorch's eager dispatch of each op, the Python module code around it and
    the custom ops' argument handling. The host issues the kernels one by one while the GPU
    runs them, so a step whose kernels are shorter than their launches takes the launches'
    time."""
    expert_half_tokens: float = 0.0
    """Tokens per touched expert at which the grouped GEMMs reach half of
    ``expert_efficiency`` (0: always all of it). Each expert's tile costs a fixed part (its
    scheduling, the first loads of its weights, M padded to the kernel's block) plus a part per
    token; with n tokens per expert the kernel reaches n / (n + this) of its peak fraction."""


FLOPS_FRACTION: dict[Generation, float] = {
    # Not verified (cited from memory; no public copy was found to re-read): H100 SXM BF16
    # GEMMs reach ~700 of 989 TFLOPS in cuBLAS at large sizes (SemiAnalysis, "MI300X vs H100
    # vs H200 Benchmark Part 1: Training", Dec 2024, its GEMM section).
    "hopper": 0.7,
    # Not verified: A100 BF16 GEMMs reach ~250-270 of 312 TFLOPS (NVIDIA's "Matrix
    # Multiplication Background User's Guide", its A100 GEMM plots).
    "ampere": 0.8,
    # Not verified: Ada boards do not hold their boost clock under sustained tensor load;
    # taken as Hopper's fraction.
    "ada": 0.7,
    # Not verified: taken as Hopper's fraction.
    "blackwell": 0.7,
    # Not verified: MI300X BF16 GEMMs reach ~600-650 of 1,307 TFLOPS (SemiAnalysis, Dec 2024,
    # as above).
    "cdna3": 0.47,
    # Not verified: taken as CDNA 3's (no published MI355X GEMM measurement was found).
    "cdna4": 0.47,
}

BANDWIDTH_FRACTION: dict[Generation, float] = {
    # Not verified: STREAM-like device copies (BabelStream, nvbandwidth) reach about 0.9 of the
    # marketed HBM figure on H100 SXM (~3.0 of 3.35 TB/s) and about 0.88 on A100 80GB
    # (~1.8 of 2.04 TB/s); Ada and Blackwell taken as A100's fraction.
    "hopper": 0.9,
    "ampere": 0.88,
    "ada": 0.88,
    "blackwell": 0.88,
    # Not verified: MI300X ~4.0-4.3 of 5.3 TB/s in BabelStream (Chips and Cheese, "Testing
    # AMD's Giant MI300X", 2024).
    "cdna3": 0.8,
    # Not verified: taken as CDNA 3's (no published MI355X streaming-read measurement was found).
    "cdna4": 0.8,
}

STEP_OVERHEAD_S = 0.0
"""Not fitted: the per-kernel and per-sequence costs cover a step's fixed work."""
KERNEL_OVERHEAD_S = 4e-6
SEQUENCE_OVERHEAD_S = 40e-6
EXPERT_EFFICIENCY = 0.5
EXPERT_HALF_TOKENS = 0.0
KERNEL_OVERLAP = 0.5
FP8_FLOPS_SCALE = 0.5
FP8_DENSE_FLOPS_SCALE = 0.65
EAGER_KERNEL_OVERHEAD_S = 40e-6
"""Fitted on the calibration half by bench/serving_calibration.py (with SERVING_FLOPS_SCALE
below and simulate.SHAREGPT_WEIBULL_SHAPE)."""

LAYER_OVERHEAD_S = 0.0
"""Not fitted: the per-kernel overhead, with each layer type's kernel count, replaces it."""

SERVING_FLOPS_SCALE: dict[Generation, float] = {
    "hopper": 0.5,
    "ampere": 1.0,
    # Taken as Hopper's (the calibration script fits one value for them and Hopper).
    "ada": 0.5,
    "blackwell": 0.5,
    "cdna3": 0.5,
}
"""What a served step's GEMMs reach of the large-GEMM fractions above, per generation: fitted
on the calibration half by bench/serving_calibration.py. Serving shapes are smaller and ragged
(N split by tensor parallelism, M a few hundred to 8,192 rows of many requests), and a GPU
under sustained load runs below its boost clock (an H100 SXM at 700 W most of all)."""

SERVING_BANDWIDTH_SCALE = 1.0
"""The published bandwidth fractions as they are (a knob for the calibration script)."""

ALLREDUCE_LATENCY_S = 10e-6
"""Not verified: one small all-reduce over NVLink takes ~5-10 us in vLLM's custom all-reduce
or NCCL's LL protocol (nccl-tests all_reduce_perf, 8 B on 8 x H100: ~10 us)."""


def generation_of(architecture: str, field: str = "gpu.architecture") -> Generation:
    name = architecture.strip().lower()
    for prefix, generation in ARCHITECTURE_PREFIXES:
        if name.startswith(prefix):
            return generation
    require(False, field, f"no serving efficiency is known for the architecture {architecture!r}")
    raise AssertionError  # unreachable: require raised


def efficiency_for(
    architecture: str,
    engine: Engine,
    *,
    flops_scale: float | dict[Generation, float] | None = None,
    bandwidth_scale: float | None = None,
    step_overhead_s: float | None = None,
    layer_overhead_s: float | None = None,
    kernel_overhead_s: float | None = None,
    sequence_overhead_s: float | None = None,
    expert_efficiency: float | None = None,
    expert_half_tokens: float | None = None,
    eager_kernel_overhead_s: float | None = None,
    kernel_overlap: float | None = None,
    fp8_flops_scale: float | None = None,
    fp8_dense_flops_scale: float | None = None,
) -> Efficiency:
    """The factors of a GPU generation (named by the catalogue's ``architecture``) and an
    engine; the keyword arguments replace the fitted constants (the calibration script's
    search). The engines share the constants: the calibration half has too few runs of each
    to tell them apart."""
    del engine  # one set for every engine until the data can tell them apart
    generation = generation_of(architecture)
    scales = SERVING_FLOPS_SCALE if flops_scale is None else flops_scale
    f_scale = scales if isinstance(scales, float) else scales.get(generation, 1.0)
    b_scale = SERVING_BANDWIDTH_SCALE if bandwidth_scale is None else bandwidth_scale

    def pick(value: float | None, fitted: float) -> float:
        return fitted if value is None else value

    return Efficiency(
        flops_fraction=FLOPS_FRACTION[generation] * f_scale,
        bandwidth_fraction=BANDWIDTH_FRACTION[generation] * b_scale,
        step_overhead_s=pick(step_overhead_s, STEP_OVERHEAD_S),
        allreduce_latency_s=ALLREDUCE_LATENCY_S,
        layer_overhead_s=pick(layer_overhead_s, LAYER_OVERHEAD_S),
        kernel_overhead_s=pick(kernel_overhead_s, KERNEL_OVERHEAD_S),
        sequence_overhead_s=pick(sequence_overhead_s, SEQUENCE_OVERHEAD_S),
        expert_efficiency=pick(expert_efficiency, EXPERT_EFFICIENCY),
        expert_half_tokens=pick(expert_half_tokens, EXPERT_HALF_TOKENS),
        eager_kernel_overhead_s=pick(eager_kernel_overhead_s, EAGER_KERNEL_OVERHEAD_S),
        kernel_overlap=pick(kernel_overlap, KERNEL_OVERLAP),
        fp8_flops_scale=pick(fp8_flops_scale, FP8_FLOPS_SCALE),
        fp8_dense_flops_scale=pick(fp8_dense_flops_scale, FP8_DENSE_FLOPS_SCALE),
    )
