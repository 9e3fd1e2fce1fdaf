"""The release table (service/sizing/vllm/releases.py): which release does what."""

import pytest

from service.sizing.vllm.releases import (
    CURRENT,
    RELEASES,
    last_of,
    release_of,
    release_rules,
    rules_of,
)


def test_rows_are_in_release_order_and_change_something() -> None:
    firsts = [row.first for row in RELEASES]
    assert firsts == sorted(firsts) and len(set(firsts)) == len(firsts)
    assert firsts[0] == (0, 5, 0) and CURRENT is RELEASES[-1]


@pytest.mark.parametrize(
    ("version", "era"),
    [
        # The era boundaries as the vLLM release notes put them (releases.EngineEra).
        ("0.7.3", "v0"),
        ("0.8.0", "v1-0.11"),
        ("0.10.1", "v1-0.10"),
        ("0.10.2", "v1-0.11"),
        ("0.16.9", "v1-0.11"),
        ("0.17.0", "v1-0.19"),
        ("0.22.1", "v1-cudagraph"),
        ("0.23.0", "v2-runner"),
        ("0.28.9", "v2-runner"),
        ("0.29.0", "v2-all"),
        ("1.0.0", "v2-all"),
    ],
)
def test_each_release_falls_in_its_era(version: str, era: str) -> None:
    release = release_of(version)
    assert release is not None and rules_of(release).era == era


def test_a_release_decides_inside_its_era_and_the_era_alone_means_its_last() -> None:
    # 0.19.0 keeps 0.9 as the utilisation default; 0.20.0 (the era's last row) 0.92.
    assert release_rules("v1-0.19", (0, 19, 0)).gpu_memory_utilization == 0.9
    assert release_rules("v1-0.19", None).gpu_memory_utilization == 0.92
    # The v1-0.11 era's last row is 0.12 (no LoRA extra vocabulary), not 0.10.2.
    assert last_of("v1-0.11").first == (0, 12, 0)
    assert last_of("v1-0.11").lora_extra_vocab_size == 0
    # A release of another era stands for nothing in this one: the era's last row decides.
    assert release_rules("v1-0.19", (0, 27, 1)) is last_of("v1-0.19")
    # Before 0.5 (not modelled) a release reads as the first row.
    assert rules_of((0, 4, 0)) is RELEASES[0]
