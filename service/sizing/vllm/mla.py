"""What vLLM's MLA (DeepSeek's multi-head latent attention) keeps beside the checkpoint's
weights after loading, release by release (``MlaWeights``)."""

from service.sizing.models import ModelSpec
from service.sizing.units import ceil_div
from service.sizing.vllm.config import EngineConfig

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
