"""Limits: rate limit per API key, database timeouts, graceful shutdown, serve never migrates
anything but the default SQLite file."""

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

import service.api.guards
import service.db
from service.__main__ import main
from service.app import create_app
from service.db import create_engine, migrate, timeout_connect_args
from service.observability import RateLimiter, RequestMiddleware
from service.settings import DEFAULT_DATABASE_URL, Settings
from tests.conftest import new_key
from tests.ops.support import PLAN_70B, free_port, metric

ROOT = Path(__file__).resolve().parents[2]


def test_token_bucket_refills_at_the_rate_and_caps_at_the_burst() -> None:
    now = [0.0]
    limiter = RateLimiter(per_minute=60, burst=2, clock=lambda: now[0])
    assert [limiter.take("a"), limiter.take("a")] == [0.0, 0.0]
    assert limiter.take("a") == pytest.approx(1.0)
    assert limiter.take("b") == 0.0  # per caller
    now[0] += 0.5
    assert limiter.take("a") == pytest.approx(0.5)
    now[0] += 0.5
    assert limiter.take("a") == 0.0
    now[0] += 3600  # a long pause saves up only the burst
    assert [limiter.take("a"), limiter.take("a")] == [0.0, 0.0]
    assert limiter.take("a") > 0


async def test_rate_limit_per_key_answers_429_with_retry_after(database_url: str) -> None:
    app = create_app(
        Settings(database_url=database_url, rate_limit_per_minute=60, rate_limit_burst=3)
    )
    one = {"Authorization": f"Bearer {await new_key(database_url, 'viewer', 'one')}"}
    two = {"Authorization": f"Bearer {await new_key(database_url, 'viewer', 'two')}"}
    async with AsyncTestClient(app=app) as client:
        statuses = [(await client.get("/gpus", headers=one)).status_code for _ in range(3)]
        limited = await client.get("/gpus", headers=one)
        assert statuses == [200, 200, 200]
        assert limited.status_code == 429
        assert limited.headers["content-type"].startswith("application/problem+json")
        assert limited.headers["retry-after"] == "1"  # 60/minute: one token a second
        assert limited.json()["type"] == "urn:gpu-planner:rate-limited"
        assert limited.json()["request_id"] == limited.headers["x-request-id"]
        assert (await client.get("/gpus", headers=two)).status_code == 200  # another key
        probes = [(await client.get("/healthz", headers=one)).status_code for _ in range(10)]
        assert probes == [200] * 10  # probes and scrapes are never limited
        text_ = (await client.get("/metrics")).text
        assert metric(text_, "planner_rate_limited_total") == 1


def _frozen_limits(app: Any) -> RequestMiddleware:
    """The app's buckets on a clock that stands still, so no token refills mid-test."""
    middleware: RequestMiddleware = app.asgi_handler
    for limiter in (middleware.limiter, getattr(middleware, "auth_failures", None)):
        if limiter is not None:
            limiter._clock = lambda: 0.0
    return middleware


def _count_lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every key the guards' verifier looks up in the database."""
    looked_up: list[str] = []
    real = service.api.guards.find_key

    async def counting(session: Any, key: str) -> Any:
        looked_up.append(key)
        return await real(session, key)

    monkeypatch.setattr(service.api.guards, "find_key", counting)
    return looked_up


@pytest.mark.parametrize("require_auth", [True, False])
async def test_guessed_keys_end_in_429_after_the_failed_authentication_burst(
    database_url: str, monkeypatch: pytest.MonkeyPatch, require_auth: bool
) -> None:
    """150 fresh random keys from one address: the first 20 are looked up (and fail: 401 when
    keys are required, 200 on an open read otherwise); the other 130 meet an empty failure
    bucket (AUTH_FAILURES_PER_MINUTE=20, as many at once) and are 429 without a lookup. The
    address bucket (burst 120) is never the one that stops them: 20 < 120."""
    app = create_app(Settings(database_url=database_url, require_auth=require_auth))
    _frozen_limits(app)
    looked_up = _count_lookups(monkeypatch)
    async with AsyncTestClient(app=app) as client:
        statuses = [
            (
                await client.get(
                    "/gpus", headers={"Authorization": f"Bearer {secrets.token_urlsafe(32)}"}
                )
            ).status_code
            for _ in range(150)
        ]
        limited = await client.get("/gpus", headers={"Authorization": "Bearer guess"})
    assert statuses == [401 if require_auth else 200] * 20 + [429] * 130
    assert len(looked_up) == 20
    assert "failed authentications" in limited.json()["detail"]


async def test_a_valid_key_is_looked_up_once_and_keeps_its_own_budget(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Burst 3: each verified principal has 3 requests, the anonymous address 3 more, and
    failed keys from that address spend neither (their own bucket)."""
    one_key = await new_key(database_url, "viewer", "one")
    two_key = await new_key(database_url, "viewer", "two")
    one, two = {"Authorization": f"Bearer {one_key}"}, {"Authorization": f"Bearer {two_key}"}
    app = create_app(
        Settings(database_url=database_url, rate_limit_per_minute=60, rate_limit_burst=3)
    )
    _frozen_limits(app)
    looked_up = _count_lookups(monkeypatch)
    async with AsyncTestClient(app=app) as client:

        async def status(headers: dict[str, str], path: str = "/plans") -> int:
            return (await client.get(path, headers=headers)).status_code

        guessed = [await status({"Authorization": f"Bearer guess-{i}"}) for i in range(3)]
        assert guessed == [401, 401, 401]  # 3 failed keys: 3 tokens of the address bucket
        assert [await status(one) for _ in range(4)] == [200, 200, 200, 429]
        assert [await status(two) for _ in range(3)] == [200, 200, 200]
        assert await status({}, "/gpus") == 429  # the address: its 3 went on the guesses
    # One lookup per guess, one per valid key: the guards reuse the middleware's verdict and
    # the cache answers the repeats.
    assert sorted(looked_up) == sorted([f"guess-{i}" for i in range(3)] + [one_key, two_key])


async def test_the_client_address_comes_from_the_proxy_header_only_when_configured(
    database_url: str,
) -> None:
    """Burst 2 per address. Unconfigured, X-Forwarded-For is the caller's to invent: every
    request counts against the socket peer. Configured, its last value (the one the trusted
    proxy appended) is the address, whatever the client put before it."""
    limits = {"rate_limit_per_minute": 60, "rate_limit_burst": 2}

    async def statuses(settings: Settings, forwarded: list[str]) -> list[int]:
        app = create_app(settings)
        _frozen_limits(app)
        async with AsyncTestClient(app=app) as client:
            return [
                (await client.get("/gpus", headers={"X-Forwarded-For": f})).status_code
                for f in forwarded
            ]

    spoofed = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert await statuses(Settings(database_url=database_url, **limits), spoofed) == [
        200,
        200,
        429,
    ]
    proxied = Settings(database_url=database_url, trusted_proxy_header="X-Forwarded-For", **limits)
    assert await statuses(proxied, spoofed) == [200, 200, 200]
    one_client = ["1.1.1.1, 10.0.0.9", "2.2.2.2, 10.0.0.9", "10.0.0.9", "10.0.0.8"]
    assert await statuses(proxied, one_client) == [200, 200, 429, 200]


def test_timeouts_reach_each_driver() -> None:
    psycopg = timeout_connect_args("postgresql+psycopg://u@h/db", 1.5, 2.5)
    assert psycopg == {
        "connect_timeout": 2,  # libpq takes whole seconds, at least 2
        "options": "-c statement_timeout=2500",  # milliseconds
        # A silent peer (a partition): keepalive probes after 1.5 s idle, rounded up to 2,
        # 3 probes 1 s apart; unacknowledged bytes give up after 1.5 s = 1500 ms.
        "keepalives": 1,
        "keepalives_idle": 2,
        "keepalives_interval": 1,
        "keepalives_count": 3,
        "tcp_user_timeout": 1500,
    }
    asyncpg = timeout_connect_args("postgresql+asyncpg://u@h/db", 3, 4)
    assert asyncpg == {"timeout": 3, "command_timeout": 4}
    assert timeout_connect_args("sqlite+aiosqlite:///x.db", 3, 4) == {"timeout": 4}


@pytest.mark.postgres
@pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs TEST_DATABASE_URL")
async def test_a_slow_statement_is_cancelled_at_the_statement_timeout() -> None:
    engine = create_engine(os.environ["TEST_DATABASE_URL"], statement_timeout_s=0.3)
    started = time.monotonic()
    try:
        with pytest.raises(OperationalError, match="statement timeout"):
            async with engine.connect() as connection:
                await connection.execute(text("SELECT pg_sleep(5)"))
    finally:
        await engine.dispose()
    assert time.monotonic() - started < 4


def test_serve_migrates_only_the_default_sqlite_file(monkeypatch: pytest.MonkeyPatch) -> None:
    migrated: list[str] = []
    served: list[dict[str, Any]] = []
    monkeypatch.setattr(service.db, "migrate", migrated.append)
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(kw))
    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg://planner@db.invalid:5432/planner")
    monkeypatch.setenv("SHUTDOWN_GRACE_S", "25")
    assert main(["serve"]) == 0
    assert migrated == []  # Kubernetes and compose migrate in their own job/service
    assert served[0]["timeout_graceful_shutdown"] == 25
    assert served[0]["log_config"] is None
    monkeypatch.delenv("DATABASE_URL")
    assert main(["serve", "--port", "8123"]) == 0
    assert migrated == [DEFAULT_DATABASE_URL]
    assert served[1]["port"] == 8123


def test_sigterm_lets_an_in_flight_request_finish(tmp_path: Path) -> None:
    """A real `python -m service serve`: a request whose body is still arriving when SIGTERM
    comes is answered in full; new connections are refused; the process exits 0."""
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'serve.db'}"
    migrate(database_url)
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url, "SHUTDOWN_GRACE_S": "15"}
    server = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "serve did not start"
                time.sleep(0.1)
        body = json.dumps(PLAN_70B).encode()
        conn = socket.create_connection(("127.0.0.1", port), timeout=20)
        conn.sendall(
            b"POST /plan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\nX-Request-ID: in-flight\r\n\r\n".encode()
            + body[:10]
        )
        time.sleep(0.5)
        server.send_signal(signal.SIGTERM)
        time.sleep(1.0)
        with pytest.raises(OSError):  # no longer accepting
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        conn.sendall(body[10:])
        raw = b""
        while chunk := conn.recv(65536):
            raw += chunk
        conn.close()
        head, _, payload = raw.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), raw[:300]
        answer = json.loads(payload)
        assert (answer["gpu_count"], answer["budget_bytes"]) == (4, 272_000_000_000)
        # uvicorn re-raises the SIGTERM it caught once it has shut down cleanly.
        assert server.wait(timeout=20) in (0, -signal.SIGTERM)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.stdout is not None
    lines = [
        json.loads(line) for line in server.stdout.read().splitlines() if line.startswith(b"{")
    ]
    served = [line for line in lines if line.get("request_id") == "in-flight"]
    assert [(s["route"], s["status"]) for s in served] == [("/plan", 200)]


# The worst request (64 models x 16 formats x 64 GPUs x 64 splits, names repeated) as
# far as the catalogue allows: every shipped GPU and format, repeated to the lists' bounds.
WORST_MATRIX = {
    "models": ["llama-3.1-70b", "deepseek-v3", "llama-3.1-8b", "gpt-oss-120b"] * 16,
    "formats": ["bf16", "fp8", "int4", "mxfp4"] * 4,
    "gpus": ["h100", "h200", "b200", "a100-80gb"] * 16,
    "splits": list(range(1, 65)),
}


def test_probes_and_chat_answer_while_the_worst_matrix_computes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real server on loopback: the matrix's computation is held (in its worker thread) until
    /healthz, /readyz and a signed Slack command have answered, so each answers while the matrix
    is still computing. On the event loop (as before) the held computation blocked every other
    request: /healthz never answered."""
    import threading

    import httpx

    import service.api.compute
    from service.chatops.signature import sign
    from tests.loopback import served

    computing, release = threading.Event(), threading.Event()
    real = service.api.compute.answer_matrix

    def held(*args: Any) -> Any:
        computing.set()
        release.wait(timeout=60)  # never hang the suite, even on the old code
        return real(*args)

    monkeypatch.setattr(service.api.compute, "answer_matrix", held)
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'loop.db'}"
    migrate(database_url)
    secret = "loopback-secret"
    settings = Settings(
        database_url=database_url, rate_limit_per_minute=0, slack_signing_secret=secret
    )
    order: list[tuple[str, int]] = []
    with served(settings) as base:

        def post_matrix() -> None:
            response = httpx.post(f"{base}/matrix", json=WORST_MATRIX, timeout=120)
            order.append(("matrix", response.status_code))

        matrix = threading.Thread(target=post_matrix)
        matrix.start()
        try:
            assert computing.wait(timeout=60), "the matrix never started computing"
            with httpx.Client(base_url=base, timeout=10) as client:
                order.append(("healthz", client.get("/healthz").status_code))
                order.append(("readyz", client.get("/readyz").status_code))
                body = b"command=%2Fgpu&text=gpus"
                stamp = str(int(time.time()))
                headers = {
                    "Content-Type": "application/x-www-form-urlencoded",
                    "X-Slack-Request-Timestamp": stamp,
                    "X-Slack-Signature": sign(secret, stamp, body),
                }
                chat = client.post("/chatops/slack", content=body, headers=headers)
                order.append(("chat", chat.status_code))
        finally:
            release.set()
            matrix.join(timeout=120)
    assert order == [("healthz", 200), ("readyz", 200), ("chat", 200), ("matrix", 200)]
