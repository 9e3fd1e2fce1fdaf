"""A chat plan links to its memory picture: GET /plan.svg with the plan's own request, under
PUBLIC_BASE_URL, which draws the same SVG as POST /plan with Accept: image/svg+xml."""

import re
import time
import urllib.parse

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.chatops.signature import sign
from service.settings import Settings

Client = AsyncTestClient[Litestar]
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BASE = "https://planner.example/gpu"
SVG = "image/svg+xml"
LINK = re.compile(r"<([^|>]+)\|Memory picture \(SVG\)>")


@pytest.fixture
def app(database_url: str) -> Litestar:
    settings = Settings(
        database_url=database_url, slack_signing_secret=SECRET, public_base_url=BASE + "/"
    )
    return create_app(settings)


async def ask(client: Client, text: str) -> dict[str, object]:
    body = urllib.parse.urlencode({"command": "/gpu", "text": text}).encode()
    timestamp = str(int(time.time()))
    headers = {
        "content-type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": sign(SECRET, timestamp, body),
    }
    response = await client.post("/chatops/slack", content=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def picture_link(answer: dict[str, object]) -> str:
    links = [
        match
        for block in answer["blocks"]  # type: ignore[attr-defined]
        if block["type"] == "context"
        for element in block["elements"]
        for match in LINK.findall(element["text"])
    ]
    assert len(links) == 1, answer
    return links[0]


async def test_a_chat_plan_links_to_the_svg_of_the_same_plan(client: Client) -> None:
    answer = await ask(client, "plan llama-3.1-70b on 4 h100 bf16 40x8192 marketed")
    url = picture_link(answer)
    assert url.startswith(BASE + "/plan.svg?")  # the base URL, its trailing slash dropped
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    assert query["model"] == ["llama-3.1-70b"] and query["gpu"] == ["h100"]
    assert query["splits"] == ["4"] and query["concurrency"] == ["40"]
    assert query["capacity_basis"] == ["marketed"]
    drawn = await client.get(url.removeprefix(BASE))
    assert drawn.status_code == 200 and drawn.headers["content-type"].startswith(SVG)
    request = {
        "model": "llama-3.1-70b",
        "gpu": "h100",
        "splits": [4],
        "weight_format": "bf16",
        "concurrency": 40,
        "context_tokens": 8192,
        "capacity_basis": "marketed",
    }
    posted = await client.post("/plan", json=request, headers={"Accept": SVG})
    assert drawn.text == posted.text
    # The seeds' six-step plan: 35,276,853,248 B of weights on each of the 4 H100s.
    assert drawn.text.count('data-band="weights" data-bytes="35276853248"') == 4


async def test_a_ranked_chat_plan_links_to_the_best_option(client: Client) -> None:
    answer = await ask(client, "plan llama-3.1-70b 40x8192")
    url = picture_link(answer)
    assert "gpu=" not in url
    drawn = await client.get(url.removeprefix(BASE))
    assert drawn.status_code == 200 and "<svg" in drawn.text


async def test_other_commands_carry_no_picture_link(client: Client) -> None:
    answer = await ask(client, "gpus")
    assert not LINK.search(str(answer))
