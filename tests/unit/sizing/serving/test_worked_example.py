"""The worked example of docs/serving.md, computed by hand: Qwen3-8B in BF16 on one H100 SXM,
4 concurrent clients, 1,000-token prompts and 200-token answers (vLLM, the closed loop's steady
state).

Inputs (catalogue and the vLLM method):
- H100 SXM: BF16 dense peak 989e12 FLOP/s, HBM 3.35e12 B/s; Hopper's fractions 0.7 and 0.9
  give 692.3e12 FLOP/s and 3.015e12 B/s achieved.
- Qwen3-8B: 8,190,735,360 parameters, 36 layers, 32 query heads of 128, 8 KV heads; the vLLM
  method's weights on the GPU: 16,391,956,480 B.
- Fitted overheads (efficiency.py): 0 a step, 4 us a kernel, 160 us a running sequence; a GQA
  layer launches 6 + 4 = 10 kernels, 360 a step: 360 x 4 us + 4 x 160 us = 1.44 + 0.64 =
  2.08 ms. (Dense: the experts' constants do not enter.)

Steady step: the 4 running sequences decode one token each, and the prompts of the requests
that replace finished ones are chunked into the same steps: 4 x 1,000 / 200 = 20 prompt tokens
a step on average.
- GEMMs: FLOPs 24 tokens x 2 x 8,190,735,360 = 393,155,297,280 -> 0.5679 ms; bytes
  16,391,956,480 / 3.015e12 = 5.43680 ms. Memory-bound: 5.43680 ms.
- Attention: 4 x 32 x 128 x 36 = 589,824 FLOPs per context token; prompt tokens see 500 on
  average, decodes 1,000 + 200 / 2 = 1,100: (20 x 500 + 4 x 1,100) x 589,824 = 8,493,465,600
  FLOPs -> 0.0123 ms; KV 4 x 1,100 x 147,456 B (36 x 8 x 128 x 2 x 2) = 648,806,400 B ->
  0.21519 ms. Memory-bound: 0.21519 ms.
- Step = 5.43680 + 0.21519 + 2.08 = 7.73199 ms = TPOT; 4 / 7.73199 ms = 517.33 output
  tokens/s.
  (The 100%-bandwidth ceiling is 16.39e9 / 3.35e12 = 4.89 ms; the public vLLM 0.11.0 run at
  concurrency 4 on ShareGPT measured 7.38 ms and 497 tok/s.)
- TTFT: the prompt fits one chunk (8,192 - 4 tokens): a step of 1,000 prompt tokens and 4
  decodes. GEMMs 1,004 x 2 x 8,190,735,360 = 16,446,996,602,880 FLOPs -> 23.7570 ms (compute-
  bound); attention (1,000 x 500 + 4 x 1,100) x 589,824 = 297,507,225,600 FLOPs -> 0.42974 ms;
  + 2.08 ms = 26.267 ms.
"""

import pytest

from service.offline import local_catalogue
from service.sizing.serving.deploy import Deployment, predict_serving, step_costs
from service.sizing.serving.loop import Workload
from service.sizing.vllm.config import EngineConfig
from service.sizing.vllm.predict import predict_vllm


def test_qwen3_8b_on_one_h100_at_four_clients_matches_the_hand_arithmetic() -> None:
    cat = local_catalogue()
    model, gpu = cat.model("qwen3-8b"), cat.gpu("h100-sxm")
    prediction = predict_vllm(model, gpu, EngineConfig(max_model_len=8192))
    assert prediction.per_gpu.weights_bytes == 16_391_956_480
    deployment = Deployment(model=model, gpu=gpu, weight_format="bf16")
    assert step_costs(deployment, prediction).kernels == 360
    w = Workload(input_tokens=1000, output_tokens=200, concurrency=4)
    p = predict_serving(deployment, prediction, "vllm", w)
    assert p.running_batch == 4
    assert p.tpot_s == pytest.approx(7.7320e-3, rel=1e-4)
    assert p.output_tokens_per_s == pytest.approx(517.33, rel=1e-4)
    assert p.ttft_s == pytest.approx(26.267e-3, rel=1e-4)
    assert p.bottleneck == "hbm-bandwidth"
