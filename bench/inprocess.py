"""The service against the bare framework in one process: POST /plan (seed method) and
POST /verify (the typical 200-line log) as raw ASGI calls (bench/asgi.py), no server, no
sockets. Over HTTP (bench/framework.py) a busy machine moves the ratios a lot; here each side's
CPU time per request is measured (time.process_time), the two apps taking turns, several
rounds of N requests, each side's best round counting. The server's own work per request (the
same for both apps, about as much as the bare app's) is left out, so these ratios are lower
than the HTTP ones: compare them with each other, before and after a change.
Run: `python bench/inprocess.py` (``--profile plan|verify`` for cProfile's table instead)."""

import argparse
import asyncio
import cProfile
import json
import logging
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.asgi import call
from bench.bare import app as bare_app
from bench.verify_log import typical_verify_body
from service.app import create_app
from service.db import migrate
from service.settings import Settings

PLAN = json.dumps({"model": "llama-3.1-70b", "gpu": "h100-sxm", "concurrency": 40}).encode()
VERIFY = json.dumps(typical_verify_body()).encode()
CASES = {
    "plan": ("POST /plan (seed method)", "/plan", PLAN, 2000),
    "verify": ("POST /verify (200-line log)", "/verify", VERIFY, 500),
}


async def per_request_us(app: Any, path: str, body: bytes, n: int) -> float:
    """CPU microseconds per request, over ``n`` requests in a row."""
    started = time.process_time()
    for _ in range(n):
        await call(app, "POST", path, body)
    return (time.process_time() - started) / n * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(CASES))
    parser.add_argument("--sort", default="tottime", help="cProfile's sort key")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="planner-inprocess-"))
    url = f"sqlite+aiosqlite:///{directory / 'bench.db'}"
    migrate(url, quiet=True)
    # As bench/framework.py runs the service: the rate limit off, every JSON line written.
    app = create_app(Settings(database_url=url, rate_limit_per_minute=0, log_level="INFO"))
    handler = logging.getLogger().handlers[-1]
    handler.stream = open("/dev/null", "w")  # type: ignore[attr-defined]  # noqa: SIM115
    async with app.lifespan(), bare_app.lifespan():
        for _, path, body, _ in CASES.values():
            for target in (app, bare_app):
                status, _ = await call(target, "POST", path, body)
                assert status == 200, (path, status)
        if args.profile:
            _, path, body, n = CASES[args.profile]
            profile = cProfile.Profile()
            profile.enable()
            await per_request_us(app, path, body, n)
            profile.disable()
            pstats.Stats(profile).sort_stats(args.sort).print_stats(50)
            return
        print(f"load average {os.getloadavg()[0]:.2f}")
        print(f"{'case':<28} {'bare us':>8} {'service us':>10} {'ratio':>6}")
        for name, path, body, n in CASES.values():
            bare = service = float("inf")
            for _ in range(args.rounds):
                bare = min(bare, await per_request_us(bare_app, path, body, n))
                service = min(service, await per_request_us(app, path, body, n))
            print(f"{name:<28} {bare:>8.1f} {service:>10.1f} {bare / service:>6.2f}")


if __name__ == "__main__":
    asyncio.run(main())
