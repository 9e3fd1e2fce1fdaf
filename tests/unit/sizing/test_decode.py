"""What a decode step reads (service/sizing/decode.py): one rule for /plan and /offload."""

import msgspec
import pytest

from service.sizing.decode import decode_step, distinct_experts, read_params, routed_expert_params
from service.sizing.formats import FORMATS
from service.sizing.offload import offload
from service.sizing.plan import Workload, plan_split
from tests.unit.sizing.specs import L40S, LLAMA_70B_SEED, MIXTRAL_8X7B, PCIE_4

BF16 = FORMATS["bf16"]

# Mixtral 8x7B from the catalogue row's fields: routed experts are 32 layers x 8 experts x
# 3 x 4,096 x 14,336 = 45,097,156,608 parameters (= 10.5 x 2^32); top-2 of 8 runs a quarter of
# them, 11,274,289,152, so the weights every token reads are 12,748,853,248 - 11,274,289,152
# = 1,474,564,096 (attention, router, norms, LM head).
ROUTED = 45_097_156_608
ALWAYS = 12_748_853_248 - ROUTED * 2 // 8
# A batch of 16: 8 x (1 - (3/4)^16) distinct experts a layer; (3/4)^16 = 43,046,721 / 2^32, so
# the experts read are 10.5 x (2^32 - 43,046,721) = 44,645,166,037.5, rounded up 44,645,166,038.
READ_16 = ALWAYS + 44_645_166_038  # 46,119,730,134 of 46,702,792,704 parameters
# One sequence of 8,192 tokens: 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B a token,
# 1,073,741,824 B; a quarter, 268,435,456 B, on each of 4 GPUs (2 KV heads each).
KV_SEQ_PER_GPU = 268_435_456


@pytest.mark.parametrize(("experts", "top_k"), [(8, 2), (256, 8), (128, 4), (512, 10), (2, 1)])
def test_one_token_touches_exactly_its_top_k_experts(experts: int, top_k: int) -> None:
    assert distinct_experts(experts, top_k, 1) == pytest.approx(top_k)


def test_a_large_batch_touches_every_expert() -> None:
    # 8 x (1 - 0.75^B): 3.5 at B = 2, 7.9198 at 16, within 1e-9 of 8 at B = 100.
    assert distinct_experts(8, 2, 2) == pytest.approx(8 * (1 - 0.75**2)) == 3.5
    assert distinct_experts(8, 2, 16) == pytest.approx(8 * (1 - 43_046_721 / 2**32))
    assert distinct_experts(8, 2, 100) == pytest.approx(8, abs=1e-9)
    assert distinct_experts(256, 8, 100_000) == pytest.approx(256)
    counts = [distinct_experts(256, 8, b) for b in (1, 2, 4, 16, 64, 256)]
    assert counts == sorted(counts) and counts[-1] < 256


def test_mixtral_reads_its_active_parameters_at_batch_1_and_nearly_all_at_16() -> None:
    assert routed_expert_params(MIXTRAL_8X7B) == ROUTED
    assert read_params(MIXTRAL_8X7B, 1) == 12_748_853_248
    assert read_params(MIXTRAL_8X7B, 16) == READ_16 == 46_119_730_134


def test_without_an_expert_width_the_unused_experts_are_the_gap_total_minus_active() -> None:
    # (46,702,792,704 - 12,748,853,248) x 8 / 6 = 45,271,919,274 (rounded down): the input
    # embedding the catalogue's active count leaves out is taken for expert weights.
    unknown = msgspec.structs.replace(MIXTRAL_8X7B, intermediate_size=0)
    assert routed_expert_params(unknown) == 45_271_919_274
    # An active count too small for top-2 of 8 caps the experts at active x 8 / 2: 4,000.
    tiny = msgspec.structs.replace(unknown, active_params=1_000)
    assert routed_expert_params(tiny) == 4_000
    assert read_params(tiny, 2) >= read_params(tiny, 1) == 1_000


def test_a_dense_model_reads_every_weight_at_any_batch() -> None:
    assert routed_expert_params(LLAMA_70B_SEED) == 0
    assert read_params(LLAMA_70B_SEED, 1) == read_params(LLAMA_70B_SEED, 64) == 70_600_000_000


def test_a_step_reads_the_slice_share_and_every_sequences_kv() -> None:
    # 4 GPUs hold 93,405,585,408 / 4 = 23,351,396,352 B of BF16 weights each; batch 1 reads the
    # active share, 2 x 12,748,853,248 / 4 = 6,374,426,624 B, and one KV slice.
    one = decode_step(MIXTRAL_8X7B, 23_351_396_352, KV_SEQ_PER_GPU, 1)
    assert one.weight_bytes_per_gpu == 6_374_426_624
    assert one.bytes_per_gpu == 6_374_426_624 + 268_435_456 == 6_642_862_080
    assert one.experts_read_per_layer == 2
    # 16 sequences: 2 x 46,119,730,134 / 4 = 23,059,865,067 B of weights and 16 KV slices.
    sixteen = decode_step(MIXTRAL_8X7B, 23_351_396_352, KV_SEQ_PER_GPU, 16)
    assert sixteen.weight_bytes_per_gpu == 23_059_865_067
    assert sixteen.kv_bytes_per_gpu == 16 * 268_435_456 == 4_294_967_296
    assert sixteen.bytes_per_gpu == 27_354_832_363


@pytest.mark.parametrize("batch", [1, 16])
def test_plan_and_offload_read_the_same_bytes_for_mixtral_on_4_l40s(batch: int) -> None:
    # 93.4 GB of BF16 weights fit 4 x 39.2 GB whole, so /offload keeps everything resident and
    # its step is /plan's: 6,642,862,080 B a GPU at batch 1 (at 864 GB/s, 7.689 ms: 130.1
    # tokens/s, not the 37.0 of reading all 23.35 GB), 27,354,832,363 B at 16.
    expected = {1: 6_642_862_080, 16: 27_354_832_363}[batch]
    workload = Workload(concurrency=batch, context_tokens=8192, capacity_basis="marketed")
    p = plan_split(MIXTRAL_8X7B, L40S, BF16, BF16, workload, 4)
    assert p.decode.bytes_per_step_per_gpu == expected
    assert p.decode.bytes_per_token_per_gpu == 6_642_862_080
    assert p.decode.s_per_step == pytest.approx(expected / 864e9)
    o = offload(MIXTRAL_8X7B, L40S, BF16, BF16, PCIE_4, workload, 4, batch_size=batch)
    assert o.offloaded_bytes == 0 and o.link_bytes_per_step == 0
    assert o.step.bytes_per_gpu == expected
    assert o.s_per_step == pytest.approx(expected / 864e9)
    assert round(1 / o.s_per_step, 1) == round(1 / p.decode.s_per_step, 1)
    if batch == 1:
        assert round(o.tokens_per_s, 1) == 130.1
