"""The serving model against the public benchmark runs (service/accuracy/serving.py).

The bar (issue 17, point 5), on the held-out half only: median absolute error <= 15% on output
tokens/s and on mean TPOT, and >= 80% of runs within 25% on both.
"""

import pytest

from service.__main__ import main
from service.accuracy.serving import figures, load_runs, report

HELD_OUT_FIGURES = (
    "held-out half, first and only evaluation of the constants fitted on the calibration half: "
    "18 runs predicted (9 skipped: GPU or model not in the catalogue), median |error| output "
    "tok/s 51%, mean TPOT 71%; both within 25%: 11% (calibration half: 9 runs, 14%, 36%, 33%)"
)


@pytest.mark.xfail(strict=True, reason=f"bar not met: {HELD_OUT_FIGURES}")
def test_the_held_out_half_meets_the_bar() -> None:
    results = report()
    calibration = figures([r for r in results if r.split == "calibration"])
    held_out = figures([r for r in results if r.split == "held_out"])
    print(f"calibration: {calibration}")
    print(f"held out: {held_out}")
    assert held_out.runs >= 15
    assert held_out.median_output_error <= 0.15
    assert held_out.median_tpot_error <= 0.15
    assert held_out.share_within >= 0.80


def test_every_run_is_printed_once_with_its_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["accuracy", "--serving"]) == 0
    text = capsys.readouterr().out
    for run in load_runs():
        (line,) = [line for line in text.splitlines() if line.startswith(run["id"] + " ")]
        assert run["split"] in line
    assert "held_out:" in text and "bar:" in text


def test_runs_the_catalogue_cannot_describe_are_skipped_with_the_reason() -> None:
    # MI355 and GH200 are not catalogue GPUs; GLM-4.5-Air is not a catalogue model.
    by_run = {r.run: r for r in report()}
    assert by_run["vllm-recipes-llama-3.3-70b-rocm-mi355-vllm-fp8-tp1-c64"].skipped == (
        "GPU not in the catalogue"
    )
    assert by_run["gpustack-glm-4.5-air-h100-vllm-glm-4.5-air-tp4-burst1000"].skipped == (
        "model not in the catalogue"
    )
