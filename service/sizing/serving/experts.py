"""Expert parallelism: an MoE layer's routed experts spread whole over the tensor-parallel group.

With expert parallelism of size ``e`` over a tensor-parallel group of ``t`` GPUs, each GPU holds
E / e of the E experts, each split t / e ways (TensorRT-LLM's ``moe_tp_size = tp_size //
moe_ep_size``, ``tensorrt_llm/mapping.py``; SGLang and vLLM run e = t, whole experts), instead
of 1 / t of every expert. Its weights are the same bytes (E / e x e / t = E / t experts' worth),
and so is the KV pool. What changes, per step:

- **Reads**: a GPU reads only its own experts that some token of the step routes to. Under
  uniform routing each of its E / e experts is touched with the probability q that any expert
  is (``decode.distinct_experts`` / E), so on average the GPU reads q x E / e experts of
  e / t of one expert's bytes: the tensor-parallel split's figure. But the step ends when the
  busiest GPU does, and the touched count differs by GPU: the step reads what the busiest one
  holds, the mean plus ``expected_max_normal(e)`` standard deviations of the binomial count
  (E / e trials of q), at most E / e. One DeepSeek-R1 token (E = 256, k = 8) over e = 8: one
  expert touched per GPU on average, 1 + 1.424 x 0.984 = 2.40 on the busiest.
- **Math**: each GPU runs its experts' share of the step's T x k routed copies, binomial (T x k
  trials of 1 / e): the busiest runs the mean plus ``expected_max_normal(e)`` deviations, a
  factor 1 + c sqrt((e - 1) / (T x k)) over the split's even share.
- **Activations**: the grouped GEMMs gather, write and sum back only the routed copies of the
  GPU's own experts (k / e of each token's, on average), where the split does all k on every
  rank.
- **Communication**: the tokens stay where attention left them. With tensor-parallel attention
  every rank holds every token, so each computes its experts' part of each token's output and
  the MoE block ends in the same all-reduce as the split: TensorRT-LLM's ``Deepseekv3MoE``
  all-reduces unless attention is data-parallel and turns on its all-to-all only then
  (``tensorrt_llm/_torch/models/modeling_deepseekv3.py``: ``should_enable_alltoall`` is False
  without ``enable_attention_dp``), and vLLM uses its all-to-all kernels only with data
  parallelism (``vllm/model_executor/layers/fused_moe/config.py``:
  ``FusedMoEParallelConfig.use_all2all_kernels`` is ``dp_size > 1 and use_ep``). The dispatch
  and combine all-to-all of each token's hidden state to its top-k experts' GPUs belongs to
  data-parallel attention, which is not modelled.

Routing is uniform and independent per token (``decode.UNIFORM_ROUTING``), as everywhere else in
the model: real routers are skewed, which loads the GPU that holds the hot experts more.
"""

import math
from functools import cache
from statistics import NormalDist

_NORMAL = NormalDist()


@cache
def expected_max_normal(n: int) -> float:
    """The expected largest of ``n`` independent standard normal draws: 0 for one, 1 / sqrt(pi)
    = 0.5642 for two, 1.0294 for four, 1.4236 for eight. The integral of x n phi(x) Phi(x)^(n-1)
    over x, by the trapezoid rule over [-10, 10] in steps of 1 / 200 (exact to 1e-9)."""
    if n <= 1:
        return 0.0
    step = 1 / 200
    total = 0.0
    for i in range(-2000, 2001):
        x = i * step
        total += x * n * _NORMAL.pdf(x) * _NORMAL.cdf(x) ** (n - 1)
    return total * step


def busiest_touched(local_experts: float, touched_share: float, expert_parallel: int) -> float:
    """Experts the busiest of ``expert_parallel`` GPUs reads, each holding ``local_experts`` of
    which each is touched with probability ``touched_share``: the binomial count's mean plus
    ``expected_max_normal`` of its standard deviations, at most all of them."""
    q = min(max(touched_share, 0.0), 1.0)
    mean = local_experts * q
    spread = math.sqrt(local_experts * q * (1 - q))
    return min(local_experts, mean + expected_max_normal(expert_parallel) * spread)


def busiest_copies_factor(routed_copies: float, expert_parallel: int) -> float:
    """The busiest GPU's routed copies over the even share ``routed_copies / expert_parallel``:
    1 + c sqrt((e - 1) / copies) (the binomial count of copies / e, c = ``expected_max_normal``);
    1 with no copies."""
    e = expert_parallel
    if e <= 1 or routed_copies <= 0:
        return 1.0
    return 1 + expected_max_normal(e) * math.sqrt((e - 1) / routed_copies)
