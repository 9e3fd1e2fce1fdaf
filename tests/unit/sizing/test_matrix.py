"""The matrix (part 7, "Which GPUs hold which models?")."""

import pytest

from service.sizing.errors import SizingError
from service.sizing.formats import FORMATS
from service.sizing.matrix import SEED_MATRIX_WORKLOAD, build_matrix, validate_size
from service.sizing.parallel import default_splits
from tests.unit.sizing.specs import (
    B200,
    DEEPSEEK_V3,
    H100,
    H200,
    LLAMA_70B,
    RTX_4090,
    seed_workload,
)

GB = 10**9


def test_default_workload_is_the_seeds() -> None:
    # "8 conversations of 8,192 tokens ..., about 4 GB of overhead per GPU, and each GPU
    # filled to 90%. Splits come in 1, 2, 4 or 8" (then pipeline stages across servers).
    w = SEED_MATRIX_WORKLOAD
    assert (w.concurrency, w.context_tokens, w.gpu_memory_utilization) == (8, 8192, 0.9)
    assert w.overhead_bytes_per_gpu == 4 * GB
    assert w.capacity_basis == "marketed"  # the seeds' "80 GB x 0.9"
    assert w.splits is None  # each GPU's default ladder
    assert default_splits(8) == (1, 2, 4, 8, 16, 32)


def test_rows_take_16_bit_kv_in_bf16_rows_and_fp8_kv_in_others() -> None:
    m = build_matrix(
        [LLAMA_70B],
        [FORMATS["bf16"], FORMATS["fp8"], FORMATS["int4"]],
        [H100],
        SEED_MATRIX_WORKLOAD,
    )
    assert [(r.weight_format, r.kv_format) for r in m.rows] == [
        ("bf16", "bf16"),
        ("fp8", "fp8"),
        ("int4", "fp8"),
    ]


def test_deepseek_v3_fp8_row_needs_two_h100_servers_or_eight_h200s_or_b200s() -> None:
    m = build_matrix([DEEPSEEK_V3], [FORMATS["fp8"]], [H100, H200, B200], SEED_MATRIX_WORKLOAD)
    cells = {c.gpu: c for c in m.rows[0].cells}
    assert cells["h100-sxm"].gpu_count == 16 and cells["h100-sxm"].pipeline_parallel == 2
    assert cells["h200"].gpu_count == 8
    assert cells["b200"].gpu_count == 8


def test_70b_bf16_on_one_b200_is_an_amber_cell() -> None:
    # 141,107,412,992 B of weights + 8 x 8,192 x 327,680 = 21,474,836,480 B of KV
    # = 162,582,249,472 B against 192 GB x 0.9 - 4 GB = 168.8 GB: 6,217,750,528 B spare,
    # 3.68% of the budget: under 5%, so amber.
    m = build_matrix(
        [LLAMA_70B], [FORMATS["bf16"]], [H100, H200, B200, RTX_4090], SEED_MATRIX_WORKLOAD
    )
    cells = {c.gpu: c for c in m.rows[0].cells}
    b200 = cells["b200"]
    assert b200.gpu_count == 1 and b200.amber and b200.status == "amber"
    assert b200.spare_bytes == 6_217_750_528
    assert b200.spare_fraction is not None
    assert round(b200.spare_fraction, 4) == 0.0368
    # H100: 2 x 68 = 136 GB < 162.6 GB, so 4 (272 GB): 109.4 GB spare, not amber.
    assert cells["h100-sxm"].gpu_count == 4 and not cells["h100-sxm"].amber
    # H200: 2 x 122.9 = 245.8 GB.
    assert cells["h200"].gpu_count == 2
    # RTX 4090: 8 x 17.6 = 140.8 GB < 162.6 GB; two servers of 8 (pipeline) do hold it.
    assert cells["rtx-4090"].gpu_count == 16


def test_a_cell_that_nothing_holds_is_empty() -> None:

    m = build_matrix(
        [DEEPSEEK_V3], [FORMATS["bf16"]], [RTX_4090], seed_workload(splits=(1, 2, 4, 8))
    )
    cell = m.rows[0].cells[0]
    assert cell.gpu_count is None and cell.status == "does_not_fit" and not cell.amber


def test_a_matrix_holds_at_most_4096_cells_and_names_the_longest_list() -> None:
    validate_size(64, 1, 64)  # 64 x 1 x 64 = 4,096: the limit itself
    validate_size(17, 13, 11)  # the shipped catalogue in every format: 2,431
    with pytest.raises(SizingError) as error:
        validate_size(64, 1, 65)  # 4,160 cells
    assert error.value.field == "gpus"
    assert error.value.message == (
        "64 models x 1 formats x 65 GPUs is 4,160 cells; a matrix holds at most 4,096 "
        "(name fewer gpus)"
    )
    with pytest.raises(SizingError) as error:
        validate_size(64, 16, 64)  # the request without its repeats dropped: 65,536
    assert error.value.field == "models"  # a tie between models and gpus names the first
