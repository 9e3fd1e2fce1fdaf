"""The factors' generation comes from the catalogue's architecture field; the GEMMs' peak from
the checkpoint's format and the GPU's tensor cores."""

import msgspec
import pytest

from service.offline import local_catalogue
from service.sizing.errors import SizingError
from service.sizing.hardware import GpuSpec
from service.sizing.serving.deploy import (
    Deployment,
    mxfp4_failure,
    mxfp4_fp8_experts,
    peak_flops_per_s,
    predict_serving,
    replica_inputs,
)
from service.sizing.serving.efficiency import Engine, generation_of
from service.sizing.serving.loop import ServingPrediction, Workload
from service.sizing.vllm.config import EngineConfig
from service.sizing.vllm.predict import predict_vllm


def test_the_generation_is_the_first_words_of_the_architecture() -> None:
    assert generation_of("Hopper (sm_90)") == "hopper"
    assert generation_of("Ada Lovelace (sm_89)") == "ada"
    assert generation_of("CDNA 3 (gfx942)") == "cdna3"
    assert generation_of("CDNA 4 (gfx950)") == "cdna4"  # MI355X, migration 0014
    with pytest.raises(SizingError) as err:
        generation_of("Volta (sm_70)")
    assert err.value.field == "gpu.architecture"


def test_fp8_checkpoints_run_at_the_fp8_peak_where_the_gpu_has_fp8_tensor_cores() -> None:
    cat = local_catalogue()
    h100, a100, b200 = cat.gpu("h100-sxm"), cat.gpu("a100-80gb"), cat.gpu("b200")
    # Datasheets (migration 0011): H100 SXM FP8 1,979 dense, BF16 989; A100 has no FP8.
    assert peak_flops_per_s(h100, "fp8") == 1979e12
    assert peak_flops_per_s(h100, "bf16") == 989e12
    assert peak_flops_per_s(a100, "fp8") == 312e12
    # MXFP4 dequantises to BF16 on Hopper; Blackwell (FP4 tensor cores) runs it at FP8's peak.
    assert peak_flops_per_s(h100, "mxfp4") == 989e12
    assert peak_flops_per_s(b200, "mxfp4") == 4500e12


def test_the_mi355x_runs_fp8_and_mxfp4_at_its_fp8_peak() -> None:
    # AMD's MI350 table: 2.5 / 5.0 PF dense BF16 / OCP-FP8, exactly 2,516.6 / 5,033.2 TFLOPS;
    # MXFP4 in the matrix cores (fp4), so MXFP4 checkpoints take the FP8 peak as on Blackwell.
    mi355x = local_catalogue().gpu("mi355x")
    assert peak_flops_per_s(mi355x, "bf16") == 2516.6e12
    assert peak_flops_per_s(mi355x, "fp8") == 5033.2e12
    assert peak_flops_per_s(mi355x, "mxfp4") == 5033.2e12


def _tp2(gpu: GpuSpec) -> ServingPrediction:
    model = local_catalogue().model("qwen3-32b")
    config = EngineConfig(tensor_parallel_size=2, max_model_len=8192)
    d = Deployment(model=model, gpu=gpu, weight_format="bf16", tensor_parallel=2)
    w = Workload(input_tokens=4096, output_tokens=256, concurrency=64)
    return predict_serving(d, predict_vllm(model, gpu, config), "vllm", w)


def test_a_split_over_pcie_serves_slower_than_the_same_split_over_nvlink() -> None:
    # The same H100 SXM pair with its NVLink removed: its all-reduces fall back to the host's
    # PCIe 5.0 x16 (64e9 B/s per direction against NVLink 4's 450e9), so each step is longer.
    h100 = local_catalogue().gpu("h100-sxm")
    nvlink, pcie = _tp2(h100), _tp2(msgspec.structs.replace(h100, nvlink=None))
    assert pcie.tpot_s > nvlink.tpot_s
    assert pcie.output_tokens_per_s < nvlink.output_tokens_per_s


def test_per_gpu_figures_are_the_replicas_over_its_gpus() -> None:
    p = _tp2(local_catalogue().gpu("h100-sxm"))
    assert p.gpus == 2
    assert p.output_tokens_per_s_per_gpu == pytest.approx(p.output_tokens_per_s / 2)
    assert p.total_tokens_per_s_per_gpu == pytest.approx(p.total_tokens_per_s / 2)


def test_mxfp4_experts_run_at_the_fp8_rate_only_where_the_engine_feeds_them_mxfp8() -> None:
    # Catalogue (migration 0011): B200 2,250 / 4,500 TFLOPS dense BF16 / FP8 and FP4 tensor
    # cores; H100 SXM BF16 989, no FP4. SGLang's flashinfer_mxfp4 quantises activations to
    # MXFP8 (FP8 rate); vLLM's default Blackwell backend is BF16 x MXFP4 (BF16 rate); on
    # Hopper every engine multiplies MXFP4 weights at the BF16 rate. The dense layers (BF16
    # in the checkpoint) run at the BF16 peak wherever the experts run at FP8's.
    cat = local_catalogue()
    b200, h100 = cat.gpu("b200"), cat.gpu("h100-sxm")
    assert mxfp4_fp8_experts(b200, "sglang")
    assert not mxfp4_fp8_experts(b200, "vllm")
    assert not mxfp4_fp8_experts(h100, "sglang")
    model = cat.model("gpt-oss-120b")

    def costs(gpu: GpuSpec, engine: Engine) -> tuple[bool, float, float]:
        config = EngineConfig(tensor_parallel_size=8, max_model_len=8192, quantization="mxfp4")
        d = Deployment(model=model, gpu=gpu, weight_format="mxfp4", tensor_parallel=8)
        c, _, _ = replica_inputs(d, predict_vllm(model, gpu, config), engine)
        return c.fp8_gemms, c.peak_flops_per_s, c.bf16_dense_flops_per_s

    assert costs(b200, "sglang") == (True, 4500e12, 2250e12)
    assert costs(b200, "vllm") == (False, 2250e12, 0.0)
    assert costs(h100, "sglang") == (False, 989e12, 0.0)


def test_a_dense_mxfp4_checkpoint_multiplies_in_fp4_only_where_vllm_keeps_it_packed() -> None:
    # A dense MXFP4 checkpoint is AMD Quark's W4A4: vLLM keeps it packed where the platform
    # multiplies MX formats (ROCm gfx95x: the MI355X, AMD with fp4): its linear layers run at
    # the FP4 peak (10,066.4 TFLOPS, twice the 5,033.2 of FP8, which attention keeps; no dense
    # BF16 share: every linear layer is 4-bit); elsewhere it dequantises the weights to BF16 at
    # load, so the GEMMs run at BF16's (B200 2,250, H100 989, MI300X 1,307.4 TFLOPS) and the
    # B200's own FP4 peak goes unused, whatever the engine's MXFP4 MoE kernels do.
    cat = local_catalogue()
    model = cat.model("llama-3.1-70b")

    def costs(slug: str, engine: Engine) -> tuple[bool, float, float, float]:
        gpu = cat.gpu(slug)
        config = EngineConfig(max_model_len=8192, quantization="mxfp4")
        d = Deployment(model=model, gpu=gpu, weight_format="mxfp4")
        c, _, _ = replica_inputs(d, predict_vllm(model, gpu, config), engine)
        return c.fp8_gemms, c.peak_flops_per_s, c.bf16_dense_flops_per_s, c.fp4_dense_flops_per_s

    assert costs("mi355x", "vllm") == (True, 5033.2e12, 0.0, 10066.4e12)
    assert costs("b200", "vllm") == (False, 2250e12, 0.0, 0.0)
    assert costs("b200", "sglang") == (False, 2250e12, 0.0, 0.0)
    assert costs("h100-sxm", "vllm") == (False, 989e12, 0.0, 0.0)
    assert costs("mi300x", "vllm") == (False, 1307.4e12, 0.0, 0.0)


def test_tensorrt_llm_serves_mxfp4_experts_on_hopper_and_blackwell_only() -> None:
    # TensorRT-LLM's WFP4A16FusedMoEMethod raises on any SM but 90 ("WFP4A16 MoE is
    # unsupported on SM80", as GPUStack's A100 gpt-oss page shows); Blackwell has TRTLLM-gen's
    # methods. vLLM (Marlin) and SGLang (triton_kernels) serve MXFP4 on an A100.
    cat = local_catalogue()
    model = cat.model("gpt-oss-120b")

    def failure(slug: str, engine: Engine) -> str | None:
        d = Deployment(model=model, gpu=cat.gpu(slug), weight_format="mxfp4")
        return mxfp4_failure(d, engine)

    a100 = failure("a100-80gb", "tensorrt-llm")
    assert a100 is not None and "SM80" in a100
    assert failure("h100-sxm", "tensorrt-llm") is None
    assert failure("b200", "tensorrt-llm") is None
    assert failure("a100-80gb", "vllm") is None
    assert failure("a100-80gb", "sglang") is None


def test_a_step_reads_an_untied_input_embedding_by_its_rows_and_a_tied_one_whole() -> None:
    # Llama 3.1 8B keeps its 128,256 x 4,096 input embedding apart from the LM head: a step
    # gathers its tokens' rows, so it reads the weights held less 525,336,576 x 2 B =
    # 1,050,673,152 B (half of it on each GPU of a TP2 split, the table being vocab-parallel),
    # and a token's GEMMs run 2 x (8,030,261,248 - 525,336,576) = 15,009,849,344 FLOPs.
    # Gemma 2 27B ties the table to the head: multiplied whole every step, nothing comes off.
    cat = local_catalogue()
    h100 = cat.gpu("h100-sxm")
    for slug, tp, lookup_bytes, flops in (
        ("llama-3.1-8b", 1, 1_050_673_152, 15_009_849_344),
        ("llama-3.1-8b", 2, 525_336_576, 15_009_849_344 / 2),
        ("gemma-2-27b", 1, 0, 2 * 27_227_128_320),
    ):
        model = cat.model(slug)
        prediction = predict_vllm(
            model, h100, EngineConfig(tensor_parallel_size=tp, max_model_len=4096)
        )
        deployment = Deployment(model=model, gpu=h100, weight_format="bf16", tensor_parallel=tp)
        costs, _, _ = replica_inputs(deployment, prediction, "vllm")
        assert costs.dense_weight_bytes == prediction.per_gpu.weights_bytes - lookup_bytes, slug
        assert costs.flops_per_token == flops, slug
