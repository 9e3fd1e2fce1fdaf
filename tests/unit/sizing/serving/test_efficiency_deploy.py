"""The factors' generation comes from the catalogue's architecture field; the GEMMs' peak from
the checkpoint's format and the GPU's tensor cores."""

import pytest

from service.cli import local_catalogue
from service.sizing.errors import SizingError
from service.sizing.serving.deploy import peak_flops_per_s
from service.sizing.serving.efficiency import generation_of


def test_the_generation_is_the_first_words_of_the_architecture() -> None:
    assert generation_of("Hopper (sm_90)") == "hopper"
    assert generation_of("Ada Lovelace (sm_89)") == "ada"
    assert generation_of("CDNA 3 (gfx942)") == "cdna3"
    with pytest.raises(SizingError) as err:
        generation_of("Volta (sm_70)")
    assert err.value.field == "gpu.architecture"


def test_fp8_checkpoints_run_at_the_fp8_peak_where_the_gpu_has_fp8_tensor_cores() -> None:
    cat = local_catalogue()
    h100, a100, b200 = cat.gpu("h100-sxm"), cat.gpu("a100-80gb"), cat.gpu("b200")
    # Datasheets (migration 0010): H100 SXM FP8 1,979 dense, BF16 989; A100 has no FP8.
    assert peak_flops_per_s(h100, "fp8") == 1979e12
    assert peak_flops_per_s(h100, "bf16") == 989e12
    assert peak_flops_per_s(a100, "fp8") == 312e12
    # MXFP4 dequantises to BF16 on Hopper; Blackwell (FP4 tensor cores) runs it at FP8's peak.
    assert peak_flops_per_s(h100, "mxfp4") == 989e12
    assert peak_flops_per_s(b200, "mxfp4") == 4500e12
