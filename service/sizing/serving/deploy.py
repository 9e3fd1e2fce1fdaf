"""A deployment -> the step costs and engine limits the loop needs.

The weights are the vLLM method's (``predict_vllm``): the weights a rank holds, its KV cache's
bytes per token, the release's max_num_seqs and max_num_batched_tokens; the KV pool is the
engine's own rule on those terms (``kv_pools``). The
routed experts' share of those weights is their parameter count (E x 3 x hidden x expert FFN x
MoE layers: gate, up and down projections) at the format's bytes per parameter.
"""

import msgspec

from service.sizing.errors import require
from service.sizing.hardware import GpuSpec
from service.sizing.kv import STATE_VALUE_BYTES, linear_state_values
from service.sizing.models import ModelSpec
from service.sizing.serving.efficiency import Efficiency, Engine, efficiency_for
from service.sizing.serving.engines import async_scheduling, eager_prefill, limits_for_engine
from service.sizing.serving.kv_pools import (
    EngineMemory,
    engine_failure,
    kv_bytes_per_token,
    kv_pool_tokens_for_engine,
)
from service.sizing.serving.loop import (
    EngineLimits,
    ServingPrediction,
    Workload,
    benchmark,
    closed_loop,
    open_loop,
)
from service.sizing.serving.simulate import POLICIES
from service.sizing.serving.step import StepCosts
from service.sizing.units import MiB
from service.sizing.vllm.mxfp4 import quark_mxfp4_packed
from service.sizing.vllm.predict import EnginePrediction
from service.sizing.vllm.shapes import untied_embedding_params

EXPERT_BYTES_PER_PARAM: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "mxfp4": 4.25 / 8}
"""Bytes per routed-expert parameter in each weight format: MXFP4 is 4 bits plus an 8-bit scale
per 32 values (OCP Microscaling spec v1.0)."""

SLIDING_CONTEXT_SHARE = 0.0
"""Sliding-window layers attend to at most the window (gpt-oss: 128 tokens), a negligible share
of the FLOPs of the contexts served here: counted as none."""


MIXER_KERNELS: dict[str, int] = {"full": 6, "sliding": 6, "mla": 12, "linear": 8}
"""Kernels one decoder layer's token mixer launches per step. Counted from the layer's forward
in vLLM's model code, not from a profile (an estimate): grouped-query attention (qwen3.py,
llama.py) runs its norm, the QKV GEMM, rotary, the KV-cache write, the attention kernel and
the output GEMM; MLA (deepseek_v2.py) the norm, the q and kv down- and up-projections with
their norms, rotary, the absorbed key and value products, the decode kernel and its merge, and
the output GEMM; a linear-attention layer (qwen3_next.py's gated delta net) its norm, the input
GEMMs, the short convolution, the gates, the recurrent update, the gated norm and the output
GEMM."""

MLP_KERNELS = 4
"""A dense MLP: its norm, the gate-up GEMM, the activation, the down GEMM."""

MOE_KERNELS = 8
"""An MoE block: its norm, the router GEMM, top-k, the tokens' sort by expert, the grouped
gate-up GEMM, the activation, the grouped down GEMM and the weighted sum (vLLM's fused_moe)."""


ACTIVATION_PASSES_PER_LAYER = 16
"""Hidden-sized activation vectors one decoder layer reads or writes per token, counted from
vLLM's layer forward (an estimate, not a profile): the token mixer's fused residual add and
norm (read the input and the residual, write both: 4), the QKV GEMM's input (1), the output
projection's result (1) and the all-reduce's input and output (2); the MLP or MoE block the
same 8 again."""

MOE_PASSES_PER_ROUTED_COPY = 3
"""Hidden-sized vectors per token per routed expert it goes to (vLLM's fused_moe): the grouped
gate-up GEMM gathers the token's row for each of its k experts (1), the grouped down GEMM
writes k rows (1) and the weighted sum reads them back (1)."""

INTERMEDIATE_PASSES = 6
"""Intermediate-sized values per token per FFN (an expert's for each routed copy) on this
GPU's slice: the gate-up GEMM writes 2 x I, the activation reads them and writes I, the down
GEMM reads I."""


def activation_bytes_per_token(
    m: ModelSpec, tensor_parallel: int, pipeline_parallel: int = 1, expert_parallel: int = 1
) -> float:
    """Bytes of activations one token streams through one GPU's stage in a step: the hidden
    states are whole on every rank; the FFN's intermediate is split by tensor parallelism.
    With expert parallelism a GPU gathers and sums back only the routed copies bound for its
    own experts (k / e of a token's on average), each at e / t of the expert's width."""
    h, t = m.hidden_size, tensor_parallel
    moe_layers = m.layers - m.dense_layers if m.is_moe else 0
    dense_width = (
        (m.dense_intermediate_size or m.intermediate_size) if m.is_moe else m.intermediate_size
    )
    per_dense = ACTIVATION_PASSES_PER_LAYER * h + INTERMEDIATE_PASSES * dense_width / t
    k = m.experts_per_token
    per_moe = ACTIVATION_PASSES_PER_LAYER * h + k * (
        MOE_PASSES_PER_ROUTED_COPY * h / expert_parallel
        + INTERMEDIATE_PASSES * m.intermediate_size / t
    )
    values = per_moe * moe_layers + per_dense * (m.layers - moe_layers)
    return ACTIVATION_VALUE_BYTES * values / pipeline_parallel


ACTIVATION_VALUE_BYTES = 2
"""BF16 activations (an FP8 checkpoint's GEMMs quantise their inputs on the fly)."""


def kernels_per_step(m: ModelSpec, pipeline_parallel: int = 1) -> float:
    """Kernels one step launches on one pipeline stage (the all-reduces are priced apart)."""
    mixers = sum(MIXER_KERNELS.get(k, MIXER_KERNELS["full"]) for k in m.resolved_layer_types)
    moe_layers = m.layers - m.dense_layers if m.is_moe else 0
    mlps = MOE_KERNELS * moe_layers + MLP_KERNELS * (m.layers - moe_layers)
    return (mixers + mlps) / pipeline_parallel


class Deployment(msgspec.Struct, frozen=True, kw_only=True):
    model: ModelSpec
    gpu: GpuSpec
    weight_format: str
    """bf16, fp8 or mxfp4: what the GEMMs and the expert bytes run in."""
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    expert_parallel: int = 1
    """Expert parallelism over the tensor-parallel group (``experts.py``): each GPU holds
    E / this many whole experts (1, every engine's default: each expert split over the
    group)."""
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    release: str | None = None
    """The engine's release (vLLM's \"0.11.0\", SGLang's \"v0.5.3rc0\"); None: the current ones
    (it decides whether vLLM schedules asynchronously by default and SGLang's default memory
    fraction)."""
    async_scheduling: bool | None = None
    """Whether the engine prepares the next step during this one, when the caller knows it
    (a serve command's --async-scheduling); None: the engine's and the release's rule."""
    memory_fraction: float | None = None
    """SGLang's --mem-fraction-static or trtllm-serve's --kv_cache_free_gpu_memory_fraction;
    None: the engine's default (``kv_pools``). vLLM's utilisation is the vLLM method's."""
    cuda_graph_max_bs: int | None = None
    """SGLang's --cuda-graph-max-bs, which its default memory fraction reserves for."""
    attention_backend: str | None = None
    """SGLang's --attention-backend (aiter takes 0.85 of the fraction at a long context)."""


def routed_expert_params(model: ModelSpec) -> int:
    if not model.is_moe:
        return 0
    moe_layers = model.layers - model.dense_layers
    return model.experts * 3 * model.hidden_size * model.intermediate_size * moe_layers


def window_kv_share(m: ModelSpec) -> float:
    """The share of a token's KV that sliding-window layers hold: their count among the
    layers that keep a KV cache (full and sliding attention share head counts and widths in
    the models served here)."""
    sliding, full = m.count_layers("sliding"), m.count_layers("full")
    if not (sliding and m.sliding_window_tokens):
        return 0.0
    return sliding / (sliding + full)


def linear_kv_share(m: ModelSpec) -> float:
    """The share of the pool's bytes per token that linear-attention layers hold: vLLM's hybrid
    pool gives every layer a page of the attention page's size (a linear layer's state padded
    to it: ``kv_cache.hybrid_block_size``), so that share is their count among the layers."""
    return m.count_layers("linear") / m.layers if m.layers else 0.0


def state_bytes_per_sequence(m: ModelSpec, tensor_parallel: int, pipeline_parallel: int) -> float:
    """What one decoding sequence's recurrent states move per step on one GPU's stage: the
    gated delta rule's recurrent update (vLLM's ``fused_recurrent_gated_delta_rule``) and the
    short convolution's update read each linear layer's state and write it back (2 x the
    state, ``kv.linear_state_values``, in the model's 16-bit dtype)."""
    linear = m.count_layers("linear")
    if not linear:
        return 0.0
    state = linear_state_values(m, tensor_parallel) * STATE_VALUE_BYTES
    return 2 * linear * state / pipeline_parallel


def runs_fp8(gpu: GpuSpec, weight_format: str) -> bool:
    """Whether the GEMMs run on FP8 tensor cores: FP8 checkpoints where the GPU has them;
    MXFP4 experts on FP4-capable GPUs (Blackwell: FP4 x MXFP8, ``mxfp4_fp8_experts``)."""
    fp8 = gpu.fp8_dense_flops_per_s if gpu.fp8 else 0.0
    return (weight_format == "fp8" or (weight_format == "mxfp4" and gpu.fp4)) and fp8 > 0


def mxfp4_fp8_experts(gpu: GpuSpec, engine: Engine) -> bool:
    """Whether ``engine`` runs an MXFP4 checkpoint's routed experts at the FP8 rate on ``gpu``.

    Only the experts are 4-bit (gpt-oss's ``modules_to_not_convert``; SGLang's and vLLM's
    ``Mxfp4Config.get_quant_method`` give linear layers no MXFP4 method): attention, router
    and head run BF16 GEMMs on every GPU. The experts' kernel, by the catalogue's ``fp4``:
    - without FP4 tensor cores (A100, H100) every engine reads the weights as 4 bits and
      multiplies at the BF16 rate (vLLM's Marlin W4A16 on sm80 and OpenAI's Triton
      ``matmul_ogs`` on sm90, ``mxfp4.py``'s ``get_mxfp4_backend``; SGLang's ``triton_kernel``
      backend, ``server_args.py``; TensorRT-LLM's CUTLASS ``WFP4A16FusedMoEMethod``, sm90
      only, ``_torch/modules/fused_moe/quantization.py``): the BF16 peak;
    - with them, SGLang's ``flashinfer_mxfp4`` backend (its default on Blackwell) quantises the
      activations to MXFP8 first (``mxfp8_quantize`` before ``trtllm_fp4_block_scale_moe``,
      ``mxfp4_moe_precision`` "default"): FP4 x FP8 runs at the FP8 rate. vLLM's default
      Blackwell backend is FlashInfer's BF16 x MXFP4 (``SM100_FI_MXFP4_BF16``; MXFP8 only
      with ``VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8``): the BF16 rate. TensorRT-LLM and the
      FP4-capable AMD GPUs are taken at the FP8 rate (not re-read)."""
    if not gpu.fp4:
        return False
    cuda = gpu.compute_capability is not None
    return not (engine == "vllm" and cuda)


def peak_flops_per_s(gpu: GpuSpec, weight_format: str) -> float:
    """FP8 checkpoints run FP8 GEMMs where the GPU has FP8 tensor cores; MXFP4 experts run at
    FP8's peak on FP4-capable GPUs (Blackwell; the dense layers at BF16's, and at BF16's too
    where the engine feeds the experts BF16: ``mxfp4_fp8_experts``) and BF16's elsewhere (the
    kernels convert the 4-bit weights to BF16 in their main loop); everything else is BF16."""
    if runs_fp8(gpu, weight_format):
        return gpu.fp8_dense_flops_per_s
    require(gpu.bf16_dense_flops_per_s > 0, "gpu.bf16_dense_flops_per_s", "unknown for this GPU")
    return gpu.bf16_dense_flops_per_s


def gemm_peaks(
    gpu: GpuSpec, weight_format: str, engine: Engine, moe: bool = True
) -> tuple[float, bool, float, float]:
    """(the peak the GEMMs run at, whether it is FP8's, the BF16 peak of the dense layers where
    only an MXFP4 checkpoint's experts run at FP8's, else 0, the FP4 peak of the linear layers
    where every one is 4-bit, else 0): where ``engine`` feeds the MXFP4 experts BF16
    activations (``mxfp4_fp8_experts``), every GEMM runs at the BF16 rate. A dense (``moe``
    false) MXFP4 checkpoint is AMD Quark's, every linear layer 4-bit: FP4 GEMMs where the
    weights stay packed (``quark_mxfp4_packed``: vLLM's ``QuarkW4A4MXFP4`` quantises each
    activation to MXFP4, AITER's ``dynamic_mxfp4_quant``, and multiplies it by the packed
    weights on the FP4 matrix cores, ``gemm_afp4wfp4``; attention at the FP8 peak, and the
    linear layers too where the catalogue has no FP4 figure), BF16 ones where vLLM
    dequantised them at load."""
    if weight_format == "mxfp4":
        fp4_kernel = mxfp4_fp8_experts(gpu, engine) if moe else quark_mxfp4_packed(gpu)
        if fp4_kernel and runs_fp8(gpu, weight_format):
            if moe:
                return gpu.fp8_dense_flops_per_s, True, gpu.bf16_dense_flops_per_s, 0.0
            return gpu.fp8_dense_flops_per_s, True, 0.0, gpu.fp4_dense_flops_per_s
        return peak_flops_per_s(gpu, "bf16"), False, 0.0, 0.0
    return peak_flops_per_s(gpu, weight_format), runs_fp8(gpu, weight_format), 0.0, 0.0


def step_costs(d: Deployment, p: EnginePrediction, engine: Engine = "vllm") -> StepCosts:
    m, t = d.model, d.tensor_parallel
    peak, fp8_gemms, bf16_dense, fp4_dense = gemm_peaks(d.gpu, d.weight_format, engine, m.is_moe)
    ep = d.expert_parallel if m.is_moe else 1
    require(
        ep >= 1 and t % ep == 0 and (m.experts % ep == 0),
        "expert_parallel",
        f"{ep} does not divide the tensor-parallel size {t} and the {m.experts} experts",
    )
    per_param = EXPERT_BYTES_PER_PARAM.get(d.weight_format, 2.0)
    stage_share = 1 / d.pipeline_parallel
    # The input embedding (16-bit in every format the vLLM method loads, vocab-parallel over
    # TP) is gathered row by row, not streamed: a step reads none of it but its tokens' rows.
    lookup = untied_embedding_params(m)
    weights = p.per_gpu.weights_bytes - 2 * lookup / t * stage_share
    experts_bytes = min(routed_expert_params(m) * per_param / t * stage_share, 0.98 * weights)
    # An MoE's active parameters leave the input embedding out already (the catalogue's rule).
    active = m.resolved_active_params - (0 if m.is_moe else lookup)
    layer_types = m.resolved_layer_types
    attention_layers: float = sum(1 for k in layer_types if k in ("full", "mla"))
    attention_layers += SLIDING_CONTEXT_SHARE * sum(1 for k in layer_types if k == "sliding")
    head_dim = m.resolved_head_dim
    attention = 4 * m.attention_heads * head_dim * attention_layers * stage_share / t
    link = d.gpu.nvlink or d.gpu.host_link
    return StepCosts(
        tensor_parallel=t,
        pipeline_parallel=d.pipeline_parallel,
        layers=max(1, round(m.layers * stage_share)),
        hidden_size=m.hidden_size,
        dense_weight_bytes=round(weights - experts_bytes),
        # One of this GPU's experts: E / ep of them share its expert bytes.
        expert_bytes_per_expert=round(experts_bytes * ep / m.experts) if m.is_moe else 0,
        experts=m.experts if m.is_moe else 0,
        experts_per_token=m.experts_per_token if m.is_moe else 0,
        expert_parallel=ep,
        flops_per_token=2 * active / t * stage_share,
        expert_flops_per_token=min(
            2 * m.experts_per_token * routed_expert_params(m) / m.experts if m.is_moe else 0.0,
            2 * active,
        )
        / t
        * stage_share,
        attention_flops_per_context_token=attention,
        kv_bytes_per_token=kv_bytes_per_token(p),
        window_kv_share=window_kv_share(m),
        window_tokens=m.sliding_window_tokens,
        linear_kv_share=linear_kv_share(m),
        state_bytes_per_sequence=state_bytes_per_sequence(m, t, d.pipeline_parallel),
        peak_flops_per_s=peak,
        fp8_gemms=fp8_gemms,
        bf16_dense_flops_per_s=bf16_dense,
        fp4_dense_flops_per_s=fp4_dense,
        hbm_bytes_per_s=float(d.gpu.hbm_bytes_per_s),
        link_bytes_per_s=float(link.bytes_per_s_per_direction) if (link and t > 1) else 0.0,
        kernels=kernels_per_step(m, d.pipeline_parallel),
        activation_bytes_per_token=activation_bytes_per_token(m, t, d.pipeline_parallel, ep),
    )


def engine_limits(d: Deployment, p: EnginePrediction) -> EngineLimits:
    """The request's flags, else the release's defaults (``EngineDefaults``)."""
    return EngineLimits(
        max_num_seqs=d.max_num_seqs or p.defaults.max_num_seqs,
        max_num_batched_tokens=d.max_num_batched_tokens or p.defaults.max_num_batched_tokens,
        kv_pool_tokens=p.kv_cache_tokens,
    )


def engine_memory(d: Deployment) -> EngineMemory:
    """What the engines' memory rules read of ``d``: nvidia-smi's total (the catalogue's
    driver-visible figure, else its memory), the split, the release and the engine flags."""
    return EngineMemory(
        gpu_mib=(d.gpu.driver_visible_bytes or d.gpu.memory_bytes) / MiB,
        tensor_parallel=d.tensor_parallel,
        pipeline_parallel=d.pipeline_parallel,
        release=d.release,
        fraction=d.memory_fraction,
        chunked_prefill_size=d.max_num_batched_tokens,
        cuda_graph_max_bs=d.cuda_graph_max_bs,
        attention_backend=d.attention_backend,
        context_tokens=d.model.max_context_tokens,
    )


def mxfp4_failure(d: Deployment, engine: Engine) -> str | None:
    """Why ``engine`` has no kernel for ``d``'s MXFP4 experts, or None. TensorRT-LLM's MXFP4
    MoE methods are its CUTLASS ``WFP4A16FusedMoEMethod``, which raises on any SM but 90
    (``_torch/modules/fused_moe/quantization.py``: "WFP4A16 MoE is unsupported on SM80", the
    error GPUStack's A100 gpt-oss page prints), and TRTLLM-gen's, Blackwell's: it serves them
    on Hopper and on FP4-capable GPUs only."""
    if engine != "tensorrt-llm" or d.weight_format != "mxfp4" or not d.model.is_moe:
        return None
    if d.gpu.is_hopper or d.gpu.fp4:
        return None
    cc = d.gpu.compute_capability
    where = f"SM{cc[0]}{cc[1]}" if cc else d.gpu.architecture or "this GPU"
    return (
        f"TensorRT-LLM has no MXFP4 MoE kernel on {where}: its W4A16 MXFP4 method runs on "
        "SM90 only, its TRTLLM-gen ones on Blackwell"
    )


def replica_failure(d: Deployment, p: EnginePrediction, engine: Engine) -> str | None:
    """Why the replica does not start under ``engine``: no kernel for its MXFP4 experts
    (``mxfp4_failure``) or no KV pool (``kv_pools.engine_failure``); None if it starts."""
    return mxfp4_failure(d, engine) or engine_failure(engine, p, engine_memory(d))


def replica_inputs(
    d: Deployment, p: EnginePrediction, engine: Engine
) -> tuple[StepCosts, EngineLimits, Efficiency]:
    """What the serving model reads of one replica under ``engine``: its step costs (with the
    engine's host overlap, no release named: the current ones, which schedule asynchronously,
    and whether it runs its prefill steps outside a CUDA graph),
    its batch limits and KV pool under the engine's own rules, and the efficiency factors."""
    overlap = d.async_scheduling
    if overlap is None:
        overlap = d.release is None or async_scheduling(engine, d.release)
    costs = msgspec.structs.replace(
        step_costs(d, p, engine), async_scheduling=overlap, eager_prefill=eager_prefill(engine)
    )
    limits = limits_for_engine(
        engine_limits(d, p),
        engine,
        d.max_num_seqs,
        d.max_num_batched_tokens,
        kv_pool_tokens_for_engine(engine, p, engine_memory(d)),
    )
    return costs, limits, efficiency_for(d.gpu.architecture, engine)


def predict_serving(
    d: Deployment, p: EnginePrediction, engine: Engine, w: Workload
) -> ServingPrediction:
    """The serving figures of deployment ``d`` (``p``: the vLLM method's prediction for it) under
    workload ``w``: an open loop when it gives a request rate, a finite benchmark when it gives
    a number of prompts, else the closed loop's steady state."""
    failure = replica_failure(d, p, engine)
    require(failure is None, "deployment", failure or "")
    costs, limits, eff = replica_inputs(d, p, engine)
    if w.request_rate_per_s is not None:
        return open_loop(costs, eff, limits, w)
    if w.num_prompts is not None:
        return benchmark(costs, eff, limits, w, POLICIES[engine])
    return closed_loop(costs, eff, limits, w)
