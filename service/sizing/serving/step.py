"""The time of one engine step on one GPU of a replica: a roofline plus fixed costs.

A step runs ``prefill_tokens`` prompt tokens (chunked prefill shares the step, within
max_num_batched_tokens) and one token for each of ``decode_sequences`` running sequences.
- compute: 2 x active parameters FLOPs per token (issue 17: "2 x active parameters per token"),
  plus attention's 4 x heads x head_dim FLOPs per layer per context token (QK^T and AV, a
  multiply-add each), all over the GPU's dense peak for the format x the achieved fraction;
- bytes: the active weights once per step (an MoE layer reads the experts the step's tokens
  touch: E x (1 - (1 - k/E)^T) of E for T tokens) plus every decoding sequence's KV;
- the GEMMs take the longer of their FLOPs and weight bytes, attention the longer of its FLOPs
  and KV bytes (each kernel overlaps its own math and reads; the kernels run in turn), plus
  the tensor-parallel all-reduces (two per layer, Megatron's split: after attention and after
  the MLP; a ring moves 2 (t-1)/t of the message over the link) and the engine's fixed
  overheads (per step, per kernel launched, per layer and per running sequence);
- an engine that captures CUDA graphs for decode batches only runs a step with prompt tokens
  eagerly: the step takes at least the host's launch of each of its kernels;
- an MoE's routed experts run as grouped GEMMs at ``expert_fraction`` of the dense fractions,
  in FLOPs and in bytes alike: a fixed cost per expert tile amortised over the tokens each
  touched expert gets (T x k / the experts T tokens touch);
- with expert parallelism (``experts.py``) a GPU holds whole experts and the step waits for the
  busiest one: the most of its own experts touched and the most routed copies.
"""

from typing import Literal

import msgspec

from service.sizing.decode import distinct_experts
from service.sizing.serving.efficiency import Efficiency
from service.sizing.serving.experts import busiest_copies_factor, busiest_touched

StepBound = Literal["compute", "hbm-bandwidth", "interconnect", "overhead"]


class StepCosts(msgspec.Struct, frozen=True, kw_only=True):
    """What one GPU of a replica does per token and per step, independent of the batch."""

    tensor_parallel: int
    pipeline_parallel: int = 1
    layers: int
    """Layers on this GPU's pipeline stage (all of them when pipeline_parallel is 1)."""
    hidden_size: int
    dense_weight_bytes: int
    """Weights this GPU reads every step whatever the batch: attention, dense FFNs, shared
    experts, embeddings and head."""
    expert_bytes_per_expert: int = 0
    """One routed expert's slice on this GPU, over all its MoE layers (0: a dense model)."""
    experts: int = 0
    experts_per_token: int = 0
    expert_parallel: int = 1
    """Expert parallelism over the tensor-parallel group (``experts.py``): this GPU holds
    ``experts`` / this many whole experts, and ``expert_bytes_per_expert`` is one of them on
    it (1: every expert split like the other matrices)."""
    flops_per_token: float
    """2 x active parameters / tensor_parallel (this GPU's share)."""
    expert_flops_per_token: float = 0.0
    """The routed experts' part of ``flops_per_token``: 2 x k x one expert's parameters on this
    GPU (0: a dense model)."""
    attention_flops_per_context_token: float
    """4 x heads x head_dim x attention layers / tensor_parallel: FLOPs one new token spends
    per token of its context."""
    kv_bytes_per_token: float
    """KV bytes per token of context on this GPU (the pool's bytes / the pool's tokens)."""
    window_kv_share: float = 0.0
    """The share of ``kv_bytes_per_token`` that sliding-window layers hold (gpt-oss: half)."""
    window_tokens: int = 0
    """Their window: a decode reads at most this much of each sequence's context there."""
    linear_kv_share: float = 0.0
    """The share of ``kv_bytes_per_token`` that linear-attention layers' pages hold (vLLM pads
    each one's state to the attention page, so the pool's bytes per token count them): a decode
    reads none of it per token of context, but ``state_bytes_per_sequence`` instead."""
    state_bytes_per_sequence: float = 0.0
    """Bytes a decoding sequence's recurrent states move per step on this GPU: each
    linear-attention layer's recurrent update reads its state and writes it back."""
    peak_flops_per_s: float
    """Dense tensor-core peak in the format the GEMMs run in."""
    hbm_bytes_per_s: float
    link_bytes_per_s: float = 0.0
    """GPU-to-GPU bandwidth per direction (NVLink, else the host's PCIe); 0 with no split."""
    kernels: float = 0.0
    """Kernels one step launches on this GPU's stage (``deploy.kernels_per_step``)."""
    activation_bytes: int = 2
    """Bytes per activation value the all-reduce moves (BF16)."""
    fp8_gemms: bool = False
    """The GEMMs run in FP8 (``peak_flops_per_s`` is the FP8 peak): they reach
    ``Efficiency.fp8_flops_scale`` of the fraction a BF16 GEMM reaches."""
    bf16_dense_flops_per_s: float = 0.0
    """The BF16 peak of the dense GEMMs and attention where only the routed experts run at
    ``peak_flops_per_s`` (an MXFP4 checkpoint, whose experts alone are 4-bit, on an FP4-capable
    GPU: ``deploy.gemm_peaks``); 0: every GEMM runs at ``peak_flops_per_s``."""
    fp4_dense_flops_per_s: float = 0.0
    """The FP4 peak the dense GEMMs run at where every linear layer multiplies 4-bit weights by
    4-bit activations (a packed Quark MXFP4 checkpoint: ``deploy.gemm_peaks``); attention
    and any experts keep ``peak_flops_per_s``. 0: none."""
    async_scheduling: bool = False
    """The engine prepares the next step while the GPU runs this one (the host's per-step and
    per-sequence work overlaps the GPU's instead of adding to it)."""
    eager_prefill: bool = False
    """The engine runs a step that holds prompt tokens outside a CUDA graph (its graphs are
    captured for decode batches only: ``engines.eager_prefill``), so the host launches each of
    its kernels and all-reduces (``Efficiency.eager_kernel_overhead_s`` apiece)."""
    activation_bytes_per_token: float = 0.0
    """Activation bytes the step's small kernels read and write per token on this GPU, over
    all its layers (``deploy.activation_bytes_per_token``): tensor parallelism splits the
    weights, not the hidden states, so every rank streams every token's activations."""


class StepTime(msgspec.Struct, frozen=True, kw_only=True):
    compute_s: float
    memory_s: float
    interconnect_s: float
    overhead_s: float
    total_s: float
    bound: StepBound
    bytes_read: float
    flops: float


def expert_fraction(eff: Efficiency, tokens_per_expert: float) -> float:
    """What the grouped GEMMs reach of the dense fractions with ``tokens_per_expert`` tokens on
    each touched expert: ``expert_efficiency`` x n / (n + ``expert_half_tokens``)."""
    half = eff.expert_half_tokens
    if half <= 0:
        return eff.expert_efficiency
    return eff.expert_efficiency * tokens_per_expert / (tokens_per_expert + half)


def step_time(
    costs: StepCosts,
    eff: Efficiency,
    *,
    prefill_tokens: float,
    prefill_context: float,
    decode_sequences: float,
    decode_context: float,
) -> StepTime:
    """``prefill_context``: the mean context a prompt token attends to (about half the prompt);
    ``decode_context``: the mean context of a decoding sequence."""
    tokens = prefill_tokens + decode_sequences
    attention = costs.attention_flops_per_context_token
    peak = costs.peak_flops_per_s * eff.flops_fraction
    dense_peak = peak
    if costs.fp8_gemms:
        # The dense FP8 GEMMs and the routed experts' grouped ones run different kernels.
        dense_scale = eff.fp8_dense_flops_scale
        dense_scale = eff.fp8_flops_scale if dense_scale is None else dense_scale
        dense_peak = peak * dense_scale
        if costs.fp4_dense_flops_per_s > 0:
            # Block-scaled too (a scale per 32 values, the activations quantised first): taken
            # at the dense FP8 GEMMs' share of their own peak, no FP4 measurement being known.
            dense_peak = costs.fp4_dense_flops_per_s * eff.flops_fraction * dense_scale
        peak *= eff.fp8_flops_scale
    attention_peak = peak
    if costs.bf16_dense_flops_per_s > 0:
        # Only the experts are quantised: the rest runs BF16 GEMMs at the BF16 fraction.
        dense_peak = attention_peak = costs.bf16_dense_flops_per_s * eff.flops_fraction
    hbm = costs.hbm_bytes_per_s * eff.bandwidth_fraction
    linear_flops = tokens * costs.flops_per_token
    attention_flops = (
        prefill_tokens * prefill_context * attention + decode_sequences * decode_context * attention
    )
    flops = linear_flops + attention_flops
    activations = tokens * costs.activation_bytes_per_token
    touched = distinct_experts(costs.experts, costs.experts_per_token, tokens)
    expert_bytes = touched * costs.expert_bytes_per_expert
    expert_flops = tokens * costs.expert_flops_per_token
    grouped_flops = expert_flops
    ep = costs.expert_parallel
    if ep > 1 and costs.experts:
        # Expert parallelism: the step waits for the GPU that reads the most of its own
        # experts and runs the most routed copies (experts.py).
        local = costs.experts / ep
        expert_bytes = (
            busiest_touched(local, touched / costs.experts, ep) * costs.expert_bytes_per_expert
        )
        grouped_flops *= busiest_copies_factor(tokens * costs.experts_per_token, ep)
    weights = costs.dense_weight_bytes + expert_bytes
    # Sliding-window layers read at most their window of each sequence's context.
    window = min(decode_context, costs.window_tokens) if costs.window_tokens else decode_context
    share = costs.window_kv_share
    kv_context = (1 - share - costs.linear_kv_share) * decode_context + share * window
    kv = decode_sequences * (kv_context * costs.kv_bytes_per_token + costs.state_bytes_per_sequence)
    bytes_read = weights + kv + activations
    # Three kernel families run one after the other: the dense GEMMs (their weights and
    # FLOPs), the routed experts' grouped GEMMs (at the expert kernels' own efficiency) and
    # attention (KV, attention FLOPs); each is bound by the larger of its two times.
    x = expert_fraction(eff, tokens * costs.experts_per_token / touched if touched else 0.0)
    hide = eff.kernel_overlap

    def kernel(math_s: float, memory_s: float) -> float:
        # A kernel hides ``kernel_overlap`` of the shorter of its math and its reads under
        # the longer (1: a pure roofline, the max of the two).
        return max(math_s, memory_s) + (1 - hide) * min(math_s, memory_s)

    dense = kernel((linear_flops - expert_flops) / dense_peak, costs.dense_weight_bytes / hbm)
    grouped = kernel(grouped_flops / (peak * x), expert_bytes / (hbm * x)) if expert_bytes else 0.0
    linear = dense + grouped + activations / hbm
    attend = kernel(attention_flops / attention_peak, kv / hbm)
    compute = (
        (linear_flops - expert_flops) / dense_peak
        + grouped_flops / peak
        + attention_flops / attention_peak
    )
    memory = weights / hbm + kv / hbm + activations / hbm
    interconnect = 0.0
    t = costs.tensor_parallel
    if t > 1 and tokens > 0:
        message = tokens * costs.hidden_size * costs.activation_bytes
        per_allreduce = eff.allreduce_latency_s
        if costs.link_bytes_per_s > 0:
            per_allreduce += 2 * (t - 1) / t * message / costs.link_bytes_per_s
        interconnect = 2 * costs.layers * per_allreduce
    launches = eff.layer_overhead_s * costs.layers + eff.kernel_overhead_s * costs.kernels
    # The host's share: scheduling the step, preparing its inputs and handling each running
    # request's new token. Serial with the GPU's work unless the engine schedules the next
    # step while this one runs (vLLM's async scheduling, SGLang's overlap scheduler,
    # TensorRT-LLM's overlap scheduler): then the step takes the longer of the two.
    host = eff.step_overhead_s + eff.sequence_overhead_s * decode_sequences
    overhead = launches + host
    device = linear + attend + interconnect + launches
    if costs.eager_prefill and prefill_tokens > 0:
        # Outside a graph the host launches every kernel and all-reduce in turn while the GPU
        # runs the ones before: the GPU's work hides under the launches or they under it.
        allreduces = 2 * costs.layers if t > 1 else 0
        device = max(device, eff.eager_kernel_overhead_s * (costs.kernels + allreduces))
    stage = max(device, host) if costs.async_scheduling else device + host
    total = stage * costs.pipeline_parallel  # a token passes every stage in turn
    parts: dict[StepBound, float] = {
        "compute": compute,
        "hbm-bandwidth": memory,
        "interconnect": interconnect,
        "overhead": overhead,
    }
    bound = max(parts, key=lambda k: parts[k])
    return StepTime(
        compute_s=compute,
        memory_s=memory,
        interconnect_s=interconnect,
        overhead_s=overhead,
        total_s=total,
        bound=bound,
        bytes_read=bytes_read,
        flops=flops,
    )
