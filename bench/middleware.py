"""Cost of the request middleware (request id, JSON log line, metrics, rate limit): the same
app answering GET /healthz and POST /plan with and without it, driven as raw ASGI calls in one
process. Reports ratios measured in one run, never absolute budgets.
Run: `python bench/middleware.py` (or `make bench`)."""

import asyncio
import json
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.asgi import call
from service.app import create_app
from service.db import migrate
from service.settings import Settings

PLAN = json.dumps({"model": "llama-3.1-70b", "gpu": "h100-sxm", "concurrency": 40}).encode()


async def per_request(app: Any, method: str, path: str, body: bytes, n: int) -> float:
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(n):
            await call(app, method, path, body)
        best = min(best, (time.perf_counter() - started) / n)
    return best


async def main() -> None:
    directory = Path(tempfile.mkdtemp(prefix="planner-bench-"))
    url = f"sqlite+aiosqlite:///{directory / 'bench.db'}"
    migrate(url, quiet=True)
    app = create_app(Settings(database_url=url, rate_limit_per_minute=10**9, log_level="INFO"))
    logging.getLogger().handlers[-1].stream = open("/dev/null", "w")  # noqa: SIM115  (log cost kept, output dropped)
    middleware = app.asgi_handler
    bare = middleware.app  # type: ignore[attr-defined]
    # Both variants compute from the cached catalogue (/plan opts in with its route middleware).
    await middleware.cache.refresh()  # type: ignore[attr-defined]
    async with app.lifespan():
        print(f"{'case':<40} {'with/without':>12}")
        for name, method, path, body, n in (
            ("GET /healthz (trivial)", "GET", "/healthz", b"", 2000),
            ("POST /plan (70B on 4 x H100)", "POST", "/plan", PLAN, 300),
        ):
            status, _ = await call(app, method, path, body)
            assert status == 200, (path, status)
            app.asgi_handler = bare
            without = await per_request(app, method, path, body, n)
            app.asgi_handler = middleware
            with_ = await per_request(app, method, path, body, n)
            print(f"{name:<40} {with_ / without:>12.2f}")


if __name__ == "__main__":
    asyncio.run(main())
