"""Achieved fractions of a GPU's peak and an engine's fixed cost per step.

They belong to a GPU generation and an engine, never to a case. The fractions of peak come from
published measurements (each constant says which); the per-step overheads are the one thing
derived from the benchmark runs' calibration half, by ``bench/serving_calibration.py`` (rerun it
to reproduce them), never from a held-out run and never per run.

Status: the fractions' sources below were cited from memory and not re-read when they were
written; check each before building on it. The model does not yet meet issue 17's held-out bar
(``python -m service accuracy --serving`` prints where it stands).
"""

from typing import Literal

import msgspec

from service.sizing.errors import require

Generation = Literal["ampere", "hopper", "ada", "blackwell", "cdna3"]
Engine = Literal["vllm", "sglang", "tensorrt-llm"]

ARCHITECTURE_PREFIXES: tuple[tuple[str, Generation], ...] = (
    ("ampere", "ampere"),
    ("hopper", "hopper"),
    ("ada", "ada"),
    ("blackwell", "blackwell"),
    ("cdna 3", "cdna3"),
)
"""The catalogue's ``architecture`` field ("Hopper (sm_90)", "CDNA 3 (gfx942)") names the
generation by its first words."""


class Efficiency(msgspec.Struct, frozen=True, kw_only=True):
    flops_fraction: float
    """Achieved fraction of the dense tensor-core peak in large GEMMs."""
    bandwidth_fraction: float
    """Achieved fraction of the marketed HBM bandwidth in a streaming read."""
    step_overhead_s: float
    """Fixed time of one engine step beyond its FLOPs and bytes: scheduling, sampling, kernel
    launches and the small kernels (norms, rotary, activation) the roofline leaves out."""
    allreduce_latency_s: float
    """Fixed latency of one tensor-parallel all-reduce (launch and synchronisation)."""
    layer_overhead_s: float = 0.0
    """Fixed time per decoder layer per step: the layer's small kernels (norms, rotary, routing,
    activation quantisation) and their launches, which the roofline leaves out."""


FLOPS_FRACTION: dict[Generation, float] = {
    # Hopper: H100 SXM BF16 GEMMs reach ~700 of 989 TFLOPS (0.71) in cuBLAS (NVIDIA's
    # "H100 Tensor Core GPU performance" and SemiAnalysis' "MI300X vs H100 vs H200 benchmark
    # part 1: training", Dec 2024: 720 TFLOPS BF16 GEMM on H100).
    "hopper": 0.7,
    # Ampere: A100 BF16 GEMMs reach ~250-270 of 312 TFLOPS (0.8-0.87; NVIDIA's "A100 GPU
    # performance" deep-learning guide, matmul background).
    "ampere": 0.8,
    # Ada: the L40S/RTX 4090 run GEMMs at ~0.7 of their dense peak at sustained clocks
    # (their boost-clock peaks are not held under load).
    "ada": 0.7,
    # Blackwell: B200 BF16/FP8 GEMMs ~0.7 of dense peak (SemiAnalysis' B200 GEMM numbers).
    "blackwell": 0.7,
    # CDNA3: MI300X BF16 GEMM ~600-650 of 1,307 TFLOPS (SemiAnalysis, Dec 2024: 0.45-0.5).
    "cdna3": 0.47,
}

BANDWIDTH_FRACTION: dict[Generation, float] = {
    # STREAM-like reads (BabelStream / nvbandwidth device-local copy): H100 SXM ~3.0 of 3.35 TB/s,
    # A100 80GB ~1.8 of 2.04 TB/s, B200 ~7 of 8 TB/s: about 0.88-0.9 of the marketed figure.
    "hopper": 0.9,
    "ampere": 0.88,
    "ada": 0.88,
    "blackwell": 0.88,
    # MI300X: ~4.0-4.3 of 5.3 TB/s in BabelStream (Chips and Cheese "Testing AMD's giant
    # MI300X", 2024): ~0.8.
    "cdna3": 0.8,
}

SERVING_FLOPS_SCALE = 1.0
SERVING_BANDWIDTH_SCALE = 0.6
"""What a served step achieves of the GEMM and STREAM fractions above (grouped MoE GEMMs over
small per-expert batches, paged attention, sampling and scheduling between kernels): fitted
over the calibration half by bench/serving_calibration.py, one value for every generation and
engine (the half has too few runs per engine for more)."""

LAYER_OVERHEAD_S = 150e-6
"""Fitted over the calibration half by bench/serving_calibration.py, with the scales."""

STEP_OVERHEAD_S: dict[Engine, float] = {
    # Fitted over the calibration half by bench/serving_calibration.py, with the two scales.
    "vllm": 0.004,
    "sglang": 0.004,
    "tensorrt-llm": 0.004,
}

ALLREDUCE_LATENCY_S = 10e-6
"""One small all-reduce over NVLink takes ~5-10 us in vLLM's custom all-reduce or NCCL's LL
protocol (NCCL's nccl-tests all_reduce_perf, 8 B on 8 x H100: ~10 us); PCIe adds ~2x (same
tests on PCIe boxes), which the link's bandwidth term already separates for large messages."""


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
    flops_scale: float | None = None,
    bandwidth_scale: float | None = None,
    step_overhead_s: float | None = None,
    layer_overhead_s: float | None = None,
) -> Efficiency:
    """The factors of a GPU generation (named by the catalogue's ``architecture``) and an
    engine; the keyword arguments replace the fitted constants (the calibration script's
    search)."""
    generation = generation_of(architecture)
    f_scale = SERVING_FLOPS_SCALE if flops_scale is None else flops_scale
    b_scale = SERVING_BANDWIDTH_SCALE if bandwidth_scale is None else bandwidth_scale
    return Efficiency(
        flops_fraction=FLOPS_FRACTION[generation] * f_scale,
        bandwidth_fraction=BANDWIDTH_FRACTION[generation] * b_scale,
        step_overhead_s=STEP_OVERHEAD_S[engine] if step_overhead_s is None else step_overhead_s,
        allreduce_latency_s=ALLREDUCE_LATENCY_S,
        layer_overhead_s=LAYER_OVERHEAD_S if layer_overhead_s is None else layer_overhead_s,
    )
