"""POST /plan without weight_format: the checkpoint as published (its catalogue row's
checkpoint_format), said in a warning; BF16 checkpoints are unchanged.

The workload is named in full (8 conversations of 8,192 tokens, the marketed capacity) so the
numbers do not move with the defaults of other fields.
"""

from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.conftest import new_key
from tests.plans.support import body, create

Client = AsyncTestClient[Litestar]
GB = 10**9
WORKLOAD = {"concurrency": 8, "context_tokens": 8192, "capacity_basis": "marketed"}
FROM_CHECKPOINT = "weight_format_from_checkpoint"


async def plan(client: Client, **request: Any) -> Any:
    response = await client.post("/plan", json={**WORKLOAD, **request})
    assert response.status_code == 200, response.text
    return response.json()


def codes(answer: Any) -> list[str]:
    return [w["code"] for w in answer["warnings"]]


async def test_deepseek_v3_without_a_format_is_sized_in_its_published_fp8(client: Client) -> None:
    # DeepSeek-V3's checkpoint: FP8 linear layers with 128 x 128 FP32 block scales, the rest
    # BF16: 673,150,552,416 B (tests/catalogue/test_hf_config.py works it out). The seeds' rule
    # puts an FP8 KV cache beside FP8 weights: one 576-value latent a layer, 61 x 576 x 1 B
    # = 35,136 B a token, whole on every GPU: 8 x 8,192 x 35,136 = 2,302,672,896 B. On 8 H200s
    # (141 GB x 0.9 - 4 GB = 122.9 GB each): 673,150,552,416 / 8 = 84,143,819,052 B of weights,
    # 122,900,000,000 - 84,143,819,052 - 2,302,672,896 = 36,453,508,052 B spare a GPU. In BF16
    # (the old default) 1,342,052,808,704 B of weights: no split of one server (1, 2, 4 or 8,
    # the seed's) holds them (8 x 122.9 GB = 983.2 GB).
    answer = await plan(client, model="deepseek-v3", gpu="h200")
    assert (answer["weight_format"], answer["kv_format"]) == ("fp8", "fp8")
    assert answer["weights_bytes"] == 673_150_552_416
    assert answer["kv_bytes_per_token"] == 35_136
    assert (answer["gpu_count"], answer["fits"]) == (8, True)
    assert answer["per_gpu"]["weights_bytes"] == 84_143_819_052
    assert answer["per_gpu"]["spare_bytes"] == 36_453_508_052
    assert codes(answer)[0] == FROM_CHECKPOINT
    assert "fp8" in answer["warnings"][0]["message"]
    # Named, the format is the caller's and nothing is said about it.
    bf16 = await plan(
        client, model="deepseek-v3", gpu="h200", weight_format="bf16", splits=[1, 2, 4, 8]
    )
    assert bf16["weights_bytes"] == 2 * 671_026_404_352 and bf16["status"] == "does_not_fit"
    assert FROM_CHECKPOINT not in codes(bf16)


async def test_gpt_oss_120b_without_a_format_is_its_mxfp4_checkpoint(client: Client) -> None:
    # Experts MXFP4, the rest BF16: 65,248,815,744 B, the published tensor bytes; FP8 KV:
    # 8 x (18,432 x 8,192 + 2,359,296) = 1,226,833,920 B; one H100 (68 GB): 68e9 -
    # 65,248,815,744 - 1,226,833,920 = 1,524,350,336 B spare, the same as the imported
    # config's plan in mxfp4.
    answer = await plan(client, model="gpt-oss-120b", gpu="h100")
    assert answer["weight_format"] == "mxfp4"
    assert answer["weights_bytes"] == 65_248_815_744
    assert answer["spare_bytes"] == 68 * GB - 65_248_815_744 - 1_226_833_920 == 1_524_350_336
    assert FROM_CHECKPOINT in codes(answer)
    # Ranked over every GPU the best option says it too.
    ranked = await plan(client, model="gpt-oss-120b")
    assert ranked["weight_format"] == "mxfp4" and FROM_CHECKPOINT in codes(ranked)


async def test_a_bf16_checkpoint_keeps_bf16_and_no_warning(client: Client) -> None:
    # Llama 3.1 70B ships in BF16: 70,553,706,496 x 2 = 141,107,412,992 B, as before.
    answer = await plan(client, model="llama-3.1-70b", gpu="h100")
    assert (answer["weight_format"], answer["weights_bytes"]) == ("bf16", 141_107_412_992)
    assert FROM_CHECKPOINT not in codes(answer)


async def test_the_vllm_method_says_which_format_it_loaded(client: Client) -> None:
    answer = await plan(client, model="gpt-oss-120b", gpu="h100", method="vllm", concurrency=1)
    assert [w["code"] for w in answer["warnings"]] == [FROM_CHECKPOINT]
    named = await plan(
        client, model="gpt-oss-120b", gpu="h100", method="vllm", weight_format="mxfp4"
    )
    assert named["warnings"] == []


async def test_a_saved_plan_without_a_format_keeps_the_checkpoints_row(
    client: Client, database_url: str
) -> None:
    alice = {"Authorization": f"Bearer {await new_key(database_url, 'planner', 'alice-wf')}"}
    saved = await create(client, alice, body(model="deepseek-v3", gpu="h200", **WORKLOAD))
    assert saved["request"]["weight_format"] is None
    assert saved["catalogue"]["weight_format"]["slug"] == "fp8"
    assert saved["answer"]["weights_bytes"] == 673_150_552_416
    assert FROM_CHECKPOINT in codes(saved["answer"])
