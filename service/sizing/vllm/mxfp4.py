"""Weights as vLLM holds MXFP4 checkpoints: gpt-oss's experts (the MoE backend it picks for the
GPU and release, and the padded per-rank layout each backend keeps) and AMD Quark's dense ones
(every linear layer 4-bit, where the GPU multiplies MX formats)."""

from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.vllm.config import Mxfp4Backend
from service.sizing.vllm.releases import ReleaseRules
from service.sizing.vllm.shapes import round_up


def mxfp4_backend_for(gpu: GpuSpec, rules: ReleaseRules) -> Mxfp4Backend:
    """The MoE backend vLLM selects for MXFP4 experts (``get_mxfp4_backend`` in
    ``vllm/model_executor/layers/quantization/mxfp4.py``, read at vllm-project/vllm 007d5005):
    FlashInfer TRT-LLM on Blackwell (SM100, FlashInfer installed, the default there); the
    triton_kernels path on Hopper only when triton_kernels and torch >= 2.8.0 are present,
    which the 0.10.0 / 0.10.1 wheels (torch 2.7.1) are not: the H100 log of vLLM issue #23278
    (0.10.1) prints marlin_utils_fp4's "Weight-only FP4 compression will be used leveraging the
    Marlin kernel"; Marlin on everything below SM90 (A100, L40S, RTX 4090) and as the
    fallback. Hopper is compute capability 9.x (the catalogue's architecture). The FlashInfer
    path is CUDA's: an FP4-capable AMD GPU (MI355X, the catalogue's vendor) does not take it
    and is sized as MI300X is; ROCm's own triton / CK backends are not modelled (no ROCm MXFP4
    log collected)."""
    if gpu.fp4 and gpu.vendor != "AMD" and rules.mxfp4_native_backends:
        return "flashinfer-trtllm"
    if gpu.is_hopper and rules.mxfp4_native_backends:
        return "triton-padded" if rules.triton_padded else "triton"
    return "marlin"


MXFP4_LINEAR_BYTES = (17, 32)
"""Bytes per weight of a Quark MXFP4 linear layer, as a fraction (17 / 32): ``QuarkW4A4MXFP4.
create_weights`` (vLLM's ``quark/schemes/quark_w4a4_mxfp4.py``) keeps the packed values as uint8
(in / 2 bytes a row) and one E8M0 scale byte per 32 (``OCP_MX_BLOCK_SIZE``)."""


def quark_mxfp4_packed(gpu: GpuSpec) -> bool:
    """Whether vLLM keeps a dense (Quark W4A4) MXFP4 checkpoint packed on ``gpu``. It does where
    the platform multiplies MX formats (``current_platform.supports_mx()``: ROCm's gfx95x, an
    FP4-capable AMD GPU in the catalogue), with AITER's FP4 GEMMs, the activations quantised on
    the fly. Elsewhere the scheme emulates: ``process_weights_after_loading`` dequantises every
    weight to the model's 16-bit dtype at load and frees the scales, so the rank holds a 16-bit
    model."""
    return gpu.fp4 and gpu.vendor == "AMD"


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
      #33155) and 0.19.0 it began is not pinned; the 0.17 boundary
      (``ReleaseRules.triton_padded``) is assumed.
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
        i_pad, h_pad, bias_bytes = round_up(width, 128), round_up(hidden, 256), 2
    elif backend == "xpu":
        i_pad, h_pad, bias_bytes = round_up(width, 64), hidden, 2
    elif backend == "flashinfer-trtllm":
        i_pad, h_pad, bias_bytes = round_up(width, 256), round_up(hidden, 256), 4
    else:
        i_pad, h_pad, bias_bytes = round_up(width, 64), hidden, 4
    per_expert = (
        2 * i_pad * h_pad // 2  # w13_weight
        + 2 * i_pad * h_pad // 32  # w13_weight_scale
        + h_pad * i_pad // 2  # w2_weight
        + h_pad * i_pad // 32  # w2_weight_scale
        + (2 * i_pad + h_pad) * bias_bytes  # w13_bias, w2_bias
    )
    if backend in ("triton", "triton-padded"):
        per_expert += round_up(2 * i_pad, 256) * round_up(h_pad // 32, 2)  # swizzled w13 scale
        per_expert += round_up(h_pad, 256) * round_up(i_pad // 32, 2)  # swizzled w2 scale
    if backend == "triton-padded":
        # HopperMXValueLayout.swizzle_data pads both dims of the packed (two values a byte)
        # weights to 64: w13 is swizzled as [H/2, 2 I], w2 as [I/2, H].
        per_expert += round_up(h_pad // 2, 64) * round_up(2 * i_pad, 64) - h_pad // 2 * 2 * i_pad
        per_expert += round_up(i_pad // 2, 64) * round_up(h_pad, 64) - i_pad // 2 * h_pad
    return model.layers * model.experts * per_expert
