"""The vLLM method's constants, each with its source: those FITTED on the logs in
service/accuracy/cases/vllm_logs (every one named in the report of ``python -m service
accuracy``) and the sizes read from vLLM's and PyTorch's source that the budget's terms rest on.
Which release uses which is said in ``releases``."""

DEFAULT_DRIVER_RESERVE_BYTES = 494_000_000
"""nvidia-smi total minus what torch sees (mem_get_info), for a GPU whose catalogue row has no
measured ``torch_visible_bytes``: the H100's, 81,559 MiB = 79.65 GiB against 79.18-79.22 GiB in
real logs (llm-d table, vLLM PR #10511), i.e. about 0.46 GiB. The measured totals, each with
its log, are in service/catalogue/data/gpu_updates.json (migration 0017)."""
SAMPLER_FACTOR_0_11 = 9.71
SAMPLER_FACTOR_0_10 = 2.87
SAMPLER_FACTOR_0_19 = 3.9
"""V1 activation peak = factor x max_num_seqs x vocab x 4 B (the dummy sampler pass over fp32 logits
dominates the profile), by release (``releases``). 9.71 (0.8, 0.9, 0.10.2-0.16): least squares over
the llm-d H100 table (Llama 3.1 8B 4.76, Qwen3 32B 5.64, gpt-oss-20b 7.38, Llama 3.3 70B 4.84 GiB;
the table's gpt-oss-120b row is left out: its own numbers do not add up, 71.26 - 64.38 - 7.38 - 0.13
is not its 3.33 GiB of KV). 2.87 (0.10.0-0.10.1): the dennislee22 A100 Qwen2 7B log at utilisation
0.5 (0.55 GiB of activation plus non-torch). 3.9 (0.17 on): the llm-d-planner v0.19.0 H100 logs'
"torch peak memory increase" (Qwen2.5 7B FP8-dynamic 2.21 GiB, Llama 3.3 70B FP8-dynamic TP2 1.96
GiB: 3.81 and 4.01); later releases are assumed to keep it (their logs agree within the bar, see the
accuracy report)."""
V0_SAMPLER_BYTES_PER_LOGIT = 38
"""V0's profile samples max_num_seqs rows with top-k = vocab - 1 and top-p 0.99
(``sampler.py _apply_top_k_top_p``): alive per logit at the sort, the caller's 16-bit logits (2
B), their fp32 copy (4), the sorted values (4) and int64 indices (8), and the sort's temporaries
(8 B of reverse indices, 12 B of radix-sort alternates): 38 B. Read from the source, not fitted;
checked on PR #10511's Llama 3 8B (1.26 GiB at 256 x 128,256) and vLLM issue #13061's driver."""
FUSED_MOE_CHUNK_TOKENS = 32_768
"""``VLLM_FUSED_MOE_CHUNK_SIZE``'s default in 0.6-0.7: fused_experts sizes its caches for at most
this many tokens."""
CUBLAS_WORKSPACE_BYTES: tuple[int, int] = (33_554_432, 8_519_680)
"""(compute capability 9.x, other GPUs): cuBLAS's workspace, first allocated by the first GPU matmul
(PyTorch 2.5 ``CublasHandlePool``: 32 MiB on sm90, 8.125 MiB elsewhere). V0 counts it in the
activation peak unless a matmul already ran while loading (MLA's absorbed weights on the GPU)."""
V2_ACTIVATION_BYTES_PER_HIDDEN = 343_409
"""Model Runner V2's profile peak on a first start, per unit of hidden size: the two cold
torch.compile logs, Llama 3.1 8B on vLLM 0.31 (1.44 GiB) and Qwen3-8B on 0.27.1 (1.18 GiB),
both 4,096 wide: 1.31 GiB / 4,096. Its sampler pass is small (0.19 GiB for Qwen3-8B once the
compile cache is warm, the same RunPod run restarted): a warm cache leaves about 1 GiB more
for the KV cache than predicted. From 0.29 (read in the 0.29-0.31 wheels,
``Worker.determine_available_memory``) the budget also loses Model Runner V2's CUDA-graph estimate
(``gpu/cudagraph_utils.profile_cudagraph_memory``: the capture sizes captured into a throwaway
pool, unless enforce_eager), which the log folds into "peak activation" (its "CUDAGraph memory"
is the real capture, made after the KV cache): the 0.31 log's 1.44 GiB holds both, so on v2-all
this figure stands for the compile spike and the estimate together."""
V2_FORWARD_VALUES_PER_TOKEN = (3, 2)
"""Model Runner V2 with a warm compile cache: the profile peak is the forward pass over
max_num_batched_tokens, whose widest moment is the MLP: the gate/up output (2 x intermediate),
the activated half (intermediate) and two hidden-size tensors (the residual and the normed
input), all in the model's dtype: tokens x (3 x intermediate + 2 x hidden) x 2 B. Qwen2.5-0.5B
at 32,768 tokens: 32,768 x (3 x 4,864 + 2 x 896) x 2 B = 1.0 GiB (the 0.26 log: 1.06 GiB);
Qwen3-8B at 2,048 tokens: 2,048 x (3 x 12,288 + 2 x 4,096) x 2 B = 0.17 GiB (0.27.1: 0.19).
Below that the dummy sampler's logits in the model's dtype set the peak (seqs x vocab x 2 B:
0.07 GiB for 256 x 151,936; Qwen2.5-0.5B at 2,048 tokens logs 0.08)."""
NON_TORCH_BYTES_V0: tuple[int, int] = (96_636_765, 2_254_857_830)
NON_TORCH_BYTES_0_11: tuple[int, int] = (139_586_437, 590_558_003)
NON_TORCH_BYTES_0_19: tuple[int, int] = (257_698_038, 2_254_857_830)
"""(TP = 1, TP > 1 with vLLM's custom all-reduce), by release (``releases``): 0.13 / 0.55 GiB in the
llm-d H100 table (v0.11; also 0.8-0.16); 0.24 / 2.1 GiB (0.17 on) in the llm-d-planner v0.19.0 H100
logs ("non-torch forward increase memory": Qwen2.5 7B FP8-dynamic TP1, Llama 3.3 70B FP8-dynamic
TP2); V0 0.09 GiB, the median of the twelve V0 logs at TP 1 that print it (0.01-0.35 GiB on T4, RTX
2060/3090/4090, A10-class, L40S and H100 cards; two outliers, 1.79 in PR #10511 and 5.21 in PR
#10927) and 2.10 GiB split with custom all-reduce (the SageMaker 8x A100 40GB DeepSeek-Coder-
V2-Lite log of 0.7.1: "non_torch_memory takes 2.10GiB"). Without custom all-reduce (more than two
GPUs without NVLink, GeForce cards, which lack peer-to-peer) a split keeps the TP = 1 figure: the
L40S TP8 log of v0.10.2 reports 0.18 GiB."""
CUDA_GRAPH_ESTIMATE_BYTES = 1_428_076_216
"""0.21 on (``ReleaseRules.subtracts_graph_estimate``: the original runner subtracts vLLM's own
estimate): 1.33 GiB, the median of the
"Estimated CUDA graph memory: X GiB total" lines of the collected v0.19 logs (0.71, 0.84, 1.82,
2.35 GiB). The engine's estimate depends on the capture sizes and the model; this is one figure
for all, so it is an estimate. ROCm builds leave it out (not subtracted there until vLLM PR
#48526; the MI300X logs of 0.23 and 0.28 add up without it)."""
MIN_CUDA_GRAPH_BYTES = 536_870_912
"""Releases that capture CUDA graphs after sizing the KV cache (all before 0.21) need this much
outside the budget, (1 - gpu_memory_utilization) x total: 0.50 GiB, the smallest capture logged
by those releases ("Graph capturing finished ... took 0.50 GiB", the dennislee22 A100 logs). The
16x H20-3e DeepSeek-R1 run at utilisation 1.0 (vLLM issue #13074) dies there."""
STARTUP_USAGE_BYTES: tuple[int, int] = (547_608_330, 1_642_824_991)
"""(TP = 1, TP > 1): what a worker already holds when the engine checks free memory at start-up
(CUDA context; NCCL and all-reduce buffers when split): 0.51 GiB ("non_torch_memory=0.51GiB" at
init) and 1.53 GiB (77.66 of 79.19 GiB free at TP 2) in the v0.19 H100 logs. From 0.17 the
engine refuses to start when utilisation x total exceeds what is free ("Free memory on device
... on startup is less than desired GPU memory utilization")."""
XPU_NON_TORCH_BYTES: dict[bool, int] = {False: 1_580_500_000, True: 1_271_400_000}
"""Intel XPU, (original runner, Model Runner V2): what the first forward and sampler pass leave
outside torch's allocator (vLLM's XPU worker measures it as the CUDA one does, from the device's
free memory). FITTED, one case each (no held-out XPU log): gpt-oss-20b on an Arc Pro B60, 0.28
("Actual usage is 14.37 GiB consumed (weights + non-torch)" against 12.87 of weights) and 0.29
on V2 (169,123 tokens: 3.998 GiB of KV; its author's table puts non-torch at ~1.03 GiB and the
peak at 0.27, of which the V2 forward rule sees 0.15, so the constant carries the other 0.12).
Five to six times CUDA's 0.24 GiB; the source does not say why (kernel modules, driver scratch
space and runtime pools are the likely holders)."""
XPU_COMPILE_BYTES = 240_500_000
"""Intel XPU without --enforce-eager: torch.compile still runs (XPU captures no graphs) and
costs this much more of the budget. FITTED on the one compiled gpt-oss-20b boot on an Arc Pro
B60 (0.28), whose "estimated maximum model length is 122048" pins its KV memory to 2.892 GiB
against the eager boot's 3.116: the 0.018 GiB margin of the eager start is gone and it fails."""
