"""The worked example of docs/serving.md, computed by hand: Qwen3-8B in BF16 on one H100 SXM,
4 concurrent clients, 1,000-token prompts and 200-token answers (vLLM, the closed loop's steady
state).

Inputs (catalogue and the vLLM method):
- H100 SXM: BF16 dense peak 989e12 FLOP/s, HBM 3.35e12 B/s; Hopper's fractions 0.7 and 0.9,
  and a served GEMM's 0.5 of the former on Hopper (SERVING_FLOPS_SCALE), give
  989e12 x 0.7 x 0.5 = 346.15e12 FLOP/s and 3.015e12 B/s achieved.
- Qwen3-8B: 8,190,735,360 parameters, 36 layers, hidden 4,096, FFN 12,288, 32 query heads of
  128, 8 KV heads, vocabulary 151,936; the vLLM method's weights on the GPU: 16,391,956,480 B.
- Its input embedding is a table of its own (the parameters outside the layers, 8,190,735,360
  - 36 x 192,937,984 = 1,244,967,936, are two 151,936 x 4,096 = 622,329,856 matrices, not
  one): a step gathers its tokens' rows of it, so it reads 16,391,956,480 - 2 x 622,329,856
  = 15,147,296,768 B of weights, and a token's GEMMs run 2 x (8,190,735,360 - 622,329,856) =
  2 x 7,568,405,504 FLOPs.
- Activations every token streams per step: 36 layers x (16 x 4,096 + 6 x 12,288) values x
  2 B = 36 x 139,264 x 2 = 10,027,008 B.
- KERNEL_OVERLAP 0.5: a kernel takes the longer of its math and memory times plus half the
  shorter.
- Fixed costs (efficiency.py): 4 us a kernel on the GPU, a GQA layer launching 6 + 4 = 10,
  360 a step: 1.44 ms; 40 us a running sequence on the host, 4 x 40 us = 0.16 ms, which the
  current vLLM releases' async scheduling overlaps with the GPU's 7.30 ms (the step takes the
  longer). (Dense: the experts' constants do not enter.)

Steady step: the 4 running sequences decode one token each, and the prompts of the requests
that replace finished ones are chunked into the same steps: 4 x 1,000 / 200 = 20 prompt tokens
a step on average.
- GEMMs: FLOPs 24 tokens x 2 x 7,568,405,504 = 363,283,464,192 -> 1.049497 ms; bytes
  15,147,296,768 / 3.015e12 = 5.023979 ms; 5.023979 + 1.049497 / 2 = 5.548728 ms.
- Activations: 24 x 10,027,008 = 240,648,192 B -> 0.079817 ms.
- Attention: 4 x 32 x 128 x 36 = 589,824 FLOPs per context token; prompt tokens see 500 on
  average, decodes 1,000 + 200 / 2 = 1,100: (20 x 500 + 4 x 1,100) x 589,824 = 8,493,465,600
  FLOPs -> 0.024537 ms; KV 4 x 1,100 x 147,456 B (36 x 8 x 128 x 2 x 2) = 648,806,400 B ->
  0.215193 ms; 0.215193 + 0.024537 / 2 = 0.227461 ms.
- Step = 5.548728 + 0.079817 + 0.227461 + 1.44 = 7.296006 ms = TPOT (above the host's
  0.16 ms); 4 / 7.296006 ms = 548.245 output tokens/s. Memory (5.024 + 0.080 + 0.215 ms) is
  the largest part: hbm-bandwidth.
  (The 100%-bandwidth ceiling is 16.39e9 / 3.35e12 = 4.89 ms; the public vLLM 0.11.0 run at
  concurrency 4 on ShareGPT, with shorter prompts, measured 7.38 ms and 497 tok/s.)
- TTFT: the prompt fits one chunk (8,192 - 4 tokens): a step of 1,000 prompt tokens and 4
  decodes. GEMMs 1,004 x 2 x 7,568,405,504 = 15,197,358,252,032 FLOPs -> 43.903967 ms, plus
  half the weights' 5.023979 ms: 46.415957 ms; activations 1,004 x 10,027,008 B -> 3.339010
  ms; attention (1,000 x 500 + 4 x 1,100) x 589,824 = 297,507,225,600 FLOPs -> 0.859475 ms,
  plus half the KV's 0.215193 ms: 0.967071 ms; + 1.44 ms = 52.162038 ms.
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
    costs = step_costs(deployment, prediction)
    assert costs.dense_weight_bytes == 15_147_296_768
    assert costs.flops_per_token == 2 * 7_568_405_504
    assert costs.kernels == 360
    assert costs.activation_bytes_per_token == 10_027_008
    w = Workload(input_tokens=1000, output_tokens=200, concurrency=4)
    p = predict_serving(deployment, prediction, "vllm", w)
    assert p.running_batch == 4
    assert p.tpot_s == pytest.approx(7.296006e-3, rel=1e-4)
    assert p.output_tokens_per_s == pytest.approx(548.245, rel=1e-4)
    assert p.ttft_s == pytest.approx(52.162038e-3, rel=1e-4)
    assert p.bottleneck == "hbm-bandwidth"
