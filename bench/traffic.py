"""A traffic plan over every catalogue GPU and every tensor-parallel size of a node, against one
/plan without traffic: the app driven as raw ASGI calls in one process (no server, no sockets),
and the same two computations on the core alone. Reports ratios measured in one run (never
absolute budgets). Run: `python bench/traffic.py` (or `make bench`)."""

import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec

from bench.asgi import call
from service.app import create_app
from service.db import migrate
from service.offline import local_catalogue, local_plan
from service.schemas.plan import PlanRequest
from service.settings import Settings

PLAN = {"model": "qwen3-8b"}
"""One /plan today: every catalogue GPU ranked."""
TRAFFIC = {
    **PLAN,
    "traffic": {
        "requests_per_s": 40,
        "input_tokens": 2000,
        "output_tokens": 300,
        "ttft_s": 1.0,
        "tpot_s": 0.05,
    },
}
MATRIX = {"models": ["qwen3-8b", "llama-3.1-70b"], "traffic": TRAFFIC["traffic"]}
REPEAT = 30


async def timed(app: Any, path: str, body: dict[str, Any]) -> float:
    """The median seconds of REPEAT calls (after one to warm)."""
    payload = json.dumps(body).encode()
    status, _ = await call(app, "POST", path, payload)
    assert status == 200, (path, status)
    times = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        await call(app, "POST", path, payload)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def per_call(fn: object, number: int) -> float:
    return min(timeit.Timer(fn).repeat(repeat=5, number=number)) / number  # type: ignore[arg-type]


async def main() -> None:
    directory = Path(tempfile.mkdtemp(prefix="planner-bench-"))
    url = f"sqlite+aiosqlite:///{directory / 'bench.db'}"
    migrate(url, quiet=True)
    app = create_app(Settings(database_url=url, rate_limit_per_minute=0, log_level="WARNING"))
    logging.getLogger().handlers[-1].stream = open("/dev/null", "w")  # noqa: SIM115
    async with app.lifespan():
        plan = await timed(app, "/plan", PLAN)
        traffic = await timed(app, "/plan", TRAFFIC)
        matrix = await timed(app, "/matrix", MATRIX)
    answer = local_plan(msgspec.convert(TRAFFIC, PlanRequest))
    assert answer.traffic is not None  # type: ignore[union-attr]
    options = len(answer.traffic.options)  # type: ignore[union-attr]
    core_plan = per_call(lambda: local_plan(msgspec.convert(PLAN, PlanRequest)), 20)
    core_traffic = per_call(lambda: local_plan(msgspec.convert(TRAFFIC, PlanRequest)), 5)
    gpus = len(local_catalogue().all_gpus())
    print(f"{'case':<64} {'x one /plan':>11}")
    print(f"{'POST /plan, every GPU ranked (baseline)':<64} {1.0:>11.2f}")
    name = f"POST /plan with traffic: {gpus} GPUs, {options} GPU x TP options"
    print(f"{name:<64} {traffic / plan:>11.2f}")
    name = "POST /matrix with traffic: 2 models x 3 formats x every GPU"
    print(f"{name:<64} {matrix / plan:>11.2f}")
    print(f"{'core only: traffic plan / plan':<64} {core_traffic / core_plan:>11.2f}")


if __name__ == "__main__":
    asyncio.run(main())
