"""POST /chatops/slack: Slack's v0 signature (valid, stale, forged, tampered, missing), the
disabled endpoint, and every command's answer against the migrated catalogue.

Numbers are the seeds' method on the catalogue's exact Llama 3.1 70B (70,553,706,496 params):
weights 2 B each = 141,107,412,992 B; KV 327,680 B per token (80 layers x 8 KV heads x 128 x 2
(K and V) x 2 B); an H100 holds 80 GB x 0.9 - 4 GB = 68 GB for weights and KV.
"""

import time
import urllib.parse

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import event

from service.app import create_app
from service.chatops.signature import sign
from service.settings import Settings

Client = AsyncTestClient[Litestar]
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture
def app(database_url: str) -> Litestar:
    return create_app(Settings(database_url=database_url, slack_signing_secret=SECRET))


def slash(text: str) -> bytes:
    return urllib.parse.urlencode(
        {"command": "/gpu", "text": text, "user_name": "ana", "team_id": "T1"}
    ).encode()


def signed(body: bytes, *, secret: str = SECRET, age_s: int = 0) -> dict[str, str]:
    timestamp = str(int(time.time()) - age_s)
    return {
        **FORM,
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": sign(secret, timestamp, body),
    }


async def ask(client: Client, text: str) -> dict[str, object]:
    body = slash(text)
    response = await client.post("/chatops/slack", content=body, headers=signed(body))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert set(answer) == {"response_type", "text", "blocks"}
    assert answer["blocks"][0]["text"]["text"] == answer["text"]  # the verdict comes first
    return answer  # type: ignore[no-any-return]


def everything(answer: dict[str, object]) -> str:
    """The message's text and every block's text, for searching."""
    parts = [str(answer["text"])]
    for block in answer["blocks"]:  # type: ignore[attr-defined]
        if "text" in block:
            parts.append(block["text"]["text"])
        parts += [e["text"] for e in block.get("elements", [])]
    return "\n".join(parts)


def test_the_signature_is_slacks_documented_example() -> None:
    # Slack's "Verifying requests from Slack" example: secret, timestamp, body and signature.
    body = (
        b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&"
        b"channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&"
        b"command=%2Fwebhook-collect&text=&"
        b"response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F"
        b"96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
    )
    assert (
        sign(SECRET, "1531420618", body)
        == "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
    )


async def test_a_signed_request_is_answered(client: Client) -> None:
    answer = await ask(client, "help")
    assert answer["response_type"] == "ephemeral"
    assert "plan MODEL" in everything(answer)


@pytest.mark.parametrize(
    "case", ["stale", "forged", "tampered", "unsigned", "future", "garbled_timestamp"]
)
async def test_a_bad_signature_is_401_and_nothing_runs(client: Client, case: str) -> None:
    body = slash("plan llama-3.1-70b on h100 bf16 40x8192")
    if case == "stale":  # signed correctly, 5 minutes and 1 second ago
        headers = signed(body, age_s=301)
    elif case == "future":
        headers = signed(body, age_s=-301)
    elif case == "forged":  # signed with another secret
        headers = signed(body, secret="not-the-secret")
    elif case == "tampered":  # signed for one text, sent with another
        headers = signed(slash("plan llama-3.1-8b on h100"))
    elif case == "unsigned":
        headers = dict(FORM)
    else:
        headers = {**signed(body), "X-Slack-Request-Timestamp": "yesterday"}
    response = await client.post("/chatops/slack", content=body, headers=headers)
    assert response.status_code == 401, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["type"] == "urn:gpu-planner:bad-slack-signature"
    assert "blocks" not in problem and "H100" not in response.text  # no plan was computed
    assert "WWW-Authenticate" in response.headers


async def test_a_request_just_inside_the_window_is_accepted(client: Client) -> None:
    body = slash("help")
    response = await client.post("/chatops/slack", content=body, headers=signed(body, age_s=290))
    assert response.status_code == 200, response.text


async def test_without_a_secret_the_endpoint_is_disabled(database_url: str) -> None:
    async with AsyncTestClient(app=create_app(Settings(database_url=database_url))) as client:
        body = slash("help")
        response = await client.post("/chatops/slack", content=body, headers=signed(body))
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "SLACK_SIGNING_SECRET" in response.json()["detail"]


async def test_the_six_step_example_names_4_h100s(client: Client) -> None:
    # 141,107,412,992 B + 40 x 8,192 x 327,680 B (107,374,182,400) = 248,481,595,392 B; three
    # H100s hold 204 GB (too few), four 272 GB: 23,518,404,608 B spare = 23.5 GB, 21.9 GiB
    # (/ 2^30 = 21.90), 8.6% of 272 GB: under 10%, "tight".
    answer = await ask(client, "plan llama-3.1-70b on h100 bf16 40x8192 marketed")
    assert answer["response_type"] == "in_channel"
    verdict = str(answer["text"])
    assert verdict.startswith("*4 x H100 SXM")
    assert "23.5 GB (21.9 GiB) spare (8.6%)" in verdict and "tight" in verdict
    text = everything(answer)
    assert "141.1 GB (131.4 GiB)" in text  # the weights: 141,107,412,992 B / 2^30 = 131.42 GiB
    assert "107.4 GB (100.0 GiB)" in text  # the KV cache: 107,374,182,400 B = exactly 100 GiB
    assert ":warning: Under 10% spare" in text


async def test_plan_in_fp8_takes_2_h100s(client: Client) -> None:
    # 70,553,706,496 + 53,687,091,200 (FP8 KV: half of 107,374,182,400) = 124,240,797,696 B in
    # 2 x 68 GB: 11,759,202,304 B = 11.8 GB spare, 8.6%.
    answer = await ask(client, "plan llama-3.1-70b on h100 fp8 40x8k marketed")
    assert str(answer["text"]).startswith("*2 x H100 SXM")
    assert "11.8 GB (11.0 GiB) spare (8.6%)" in str(answer["text"])


async def test_plan_on_too_few_gpus_says_it_does_not_fit(client: Client) -> None:
    # Two H100s hold 136 GB; 248,481,595,392 B needs 124.2 GB each: 56.2 GB short per GPU.
    answer = await ask(client, "plan llama-3.1-70b on 2 h100 40x8192 marketed")
    assert str(answer["text"]).startswith("*Does not fit*")
    assert "56.2 GB" in str(answer["text"])


async def test_plan_without_a_gpu_lists_comfortable_plans_before_amber_ones(
    client: Client,
) -> None:
    # Default 8 x 8,192 tokens: 141,107,412,992 + 21,474,836,480 = 162,582,249,472 B, on the
    # default driver basis. MI355X (0014): 309,216,170,475 B x 0.9 -> 278,294,553,427 - 4 GB
    # = 274,294,553,427: 111,712,303,955 B spare (104.0 GiB), 40.7%: fits, the most spare of
    # the single GPUs. MI300X: 205,822,885,888 B x 0.9 -> 185,240,597,299 - 4 GB =
    # 181,240,597,299: 18,658,347,827 B spare (17.4 GiB), 10.3%: fits. B200: 183,359 MiB x 0.9
    # - 4 GB = 169,039,262,105: 3.8%, amber, so after every plan that fits. Two H200s:
    # 2 x 131,679,338,086 = 263,358,676,172: 100,776,426,700 B spare (93.9 GiB), 38.3%.
    answer = await ask(client, "plan llama-3.1-70b")
    verdict = str(answer["text"])
    assert "*1 x AMD Instinct MI355X* (mi355x)" in verdict
    assert "111.7 GB (104.0 GiB) spare (40.7%)" in verdict
    text = everything(answer)
    assert "2. 1 x AMD Instinct MI300X (mi300x): 18.7 GB (17.4 GiB) spare (10.3%)" in text
    assert "3. 2 x H200 SXM 141GB (h200): 100.8 GB (93.9 GiB) spare (38.3%)" in text
    assert "(b200)" not in text  # amber: below the five that fit comfortably
    assert "Ranked status first: plans that fit with at least 10% spare" in text
    # Marketed (the case): one B200 at 168.8 GB holds it with 3.7% spare (amber),
    # two H200s at 2 x 122.9 GB with 83,217,750,528 B (77.5 GiB), 33.9%: the H200s come
    # before it, after one MI355X at 288 GB x 0.9 - 4 GB = 255.2 GB: 92,617,750,528 B (86.3
    # GiB), 36.3%.
    marketed = await ask(client, "plan llama-3.1-70b marketed")
    assert "*1 x AMD Instinct MI355X* (mi355x), 92.6 GB (86.3 GiB) spare (36.3%), fits" in str(
        marketed["text"]
    )
    assert "2. 2 x H200 SXM 141GB (h200): 83.2 GB (77.5 GiB) spare (33.9%)" in everything(marketed)


async def test_plan_of_deepseek_v3_fp8_on_h100_takes_two_servers(client: Client) -> None:
    # 671,026,404,352 B of FP8 weights / 8 = 83,878,300,544 B per H100 > 68 GB (marketed) or
    # 72,968,728,985 B (driver): the default ladder's next step, 16 = 2 nodes x TP 8.
    for basis in ("", " marketed"):
        answer = await ask(client, f"plan deepseek-v3 on h100 fp8{basis}")
        assert str(answer["text"]).startswith("*16 x H100 SXM"), basis
        assert "tensor parallel 8 x pipeline 2" in everything(answer)


async def test_matrix_shows_every_gpu_per_format(client: Client) -> None:
    # bf16 on H100: 162,582,249,472 B needs 4 x 68 GB; spare 109.4 GB of 272 GB = 40%.
    # fp8: 70,553,706,496 + 10,737,418,240 = 81,291,124,736 B on 2 x 68 GB: 54.7 GB = 40%.
    answer = await ask(client, "matrix llama-3.1-70b marketed")
    text = everything(answer)
    h100 = next(line for line in text.splitlines() if line.startswith("h100-sxm "))
    assert h100.split() == ["h100-sxm", "4", "(40%)", "2", "(40%)", "1", "(26%)"]
    # int4 (4.5 bits): 70,553,706,496 x 4.5 / 8 = 39,686,459,904 B + 10,737,418,240 B FP8 KV
    # = 50,423,878,144 B in 68 GB: 17,576,121,856 B spare = 25.8%, shown as 26%.
    assert "Weights: bf16 141.1 GB (131.4 GiB)" in text


async def test_offload_answers_tokens_per_second(client: Client) -> None:
    # Resident: 68 GB - one 8,192-token KV reserve (2,684,354,560 B) = 65,315,645,440 B at
    # 3,350 GB/s = 19.5 ms; offloaded 75,791,767,552 B over PCIe 5 x16 at 64 GB/s = 1,184.2 ms;
    # 1 / 1.2037 s = 0.83 tokens/s; idle 1,184.2 / 1,203.7 = 98%.
    answer = await ask(client, "offload llama-3.1-70b on 1 h100 marketed")
    verdict = str(answer["text"])
    assert verdict.startswith("*0.83 tokens/s*")
    assert "75.8 GB (70.6 GiB) of weights in CPU memory" in verdict and "98%" in verdict
    assert "1,184.2 ms" in everything(answer)


async def test_gpus_and_models_list_the_catalogue(client: Client) -> None:
    gpus = await ask(client, "gpus")
    assert gpus["text"] == "13 GPUs in the catalogue"
    assert "`h100-sxm` NVIDIA H100 SXM 80GB: 80.0 GB (74.5 GiB)" in everything(gpus)
    models = await ask(client, "models")
    assert models["text"] == "20 models in the catalogue"
    assert "`llama-3.1-70b` Llama 3.1 70B: 70,553,706,496 parameters" in everything(models)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("plan llama-3.1-70b on h1000", "h100-sxm"),
        ("plan lama-3.1-70b on h100", "llama-3.1-70b"),
        ("matrix llama-3.1-70b fp9", "fp8"),
        ("offload llama-3.1-70b on 1 h2000", "h200"),
    ],
)
async def test_unknown_names_get_the_closest(client: Client, text: str, wanted: str) -> None:
    answer = await ask(client, text)
    assert answer["response_type"] == "ephemeral"
    assert str(answer["text"]).startswith("no ")
    assert f"`{wanted}`" in everything(answer)


@pytest.mark.parametrize(
    "text", ["frobnicate", "plan", "plan llama-3.1-70b 0x8192", "plan llama-3.1-70b bf16 fp8"]
)
async def test_unparseable_text_gets_the_usage(client: Client, text: str) -> None:
    answer = await ask(client, text)
    assert answer["response_type"] == "ephemeral"
    assert str(answer["text"]).endswith("Usage:")
    assert "`plan MODEL" in everything(answer)


async def test_input_the_core_refuses_is_a_message_not_an_error(client: Client) -> None:
    # Llama 3.1 70B has 64 attention heads and 8 KV heads: 3 GPUs cannot split them.
    answer = await ask(client, "plan llama-3.1-70b on 3 h100")
    assert answer["response_type"] == "ephemeral"
    assert "Cannot answer that" in str(answer["text"])


async def test_a_warm_chat_command_reads_nothing_from_the_database(database_url: str) -> None:
    # Chat commands compute from the catalogue cache like /plan: the lookups, the prices and the
    # GPUs' display names in the reply all come from the snapshot, so once it is loaded a
    # command issues no SQL at all (and keeps answering while the database is down).
    app = create_app(
        Settings(database_url=database_url, slack_signing_secret=SECRET, catalogue_refresh_s=3600)
    )
    statements: list[str] = []
    async with AsyncTestClient(app=app) as client:
        await ask(client, "help")
        await app.state.cache.refresh()
        engine = app.state.db_config.get_engine()
        event.listen(
            engine.sync_engine,
            "before_cursor_execute",
            lambda _conn, _cursor, statement, *_: statements.append(statement),
        )
        plan = await ask(client, "plan llama-3.1-70b on h100 bf16 40x8192")
        matrix = await ask(client, "matrix llama-3.1-70b")
        gpus = await ask(client, "gpus")
    assert statements == []
    assert str(plan["text"]).startswith("*4 x H100 SXM")  # the display name, from the snapshot
    assert everything(matrix).count("\nh100-sxm ") == 1  # the matrix ran: one H100 line
    assert gpus["text"] == "13 GPUs in the catalogue"
