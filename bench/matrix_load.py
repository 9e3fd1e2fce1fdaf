"""The worst /matrix requests the bounds allow, and what /healthz waits meanwhile: the app driven
as raw ASGI calls in one process, probes sent while each matrix computes (in its worker thread).
Reports each matrix's time and size with the probes' latency beside it, measured in one run
(never absolute budgets). Run: `python bench/matrix_load.py` (or `make bench`)."""

import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec

from bench.asgi import call
from service.app import create_app
from service.db import migrate
from service.offline import local_catalogue
from service.settings import Settings
from service.sizing.matrix import MAX_MATRIX_CELLS, build_matrix
from service.sizing.plan import Workload

SPLITS = list(range(1, 65))  # the most GPU counts a request may name


async def probe(app: Any) -> float:
    started = time.perf_counter()
    status, _ = await call(app, "GET", "/healthz")
    assert status == 200, status
    return time.perf_counter() - started


async def under_load(app: Any, body: dict[str, Any]) -> tuple[float, int, int, list[float]]:
    """The matrix's seconds, status and bytes, and each /healthz latency sent while it ran."""
    payload = json.dumps(body).encode()
    started = time.perf_counter()
    matrix = asyncio.ensure_future(call(app, "POST", "/matrix", payload))
    latencies: list[float] = []
    while not matrix.done():
        latencies.append(await probe(app))
        await asyncio.sleep(0.01)
    status, size = await matrix
    return time.perf_counter() - started, status, size, latencies


async def main() -> None:
    directory = Path(tempfile.mkdtemp(prefix="planner-bench-"))
    url = f"sqlite+aiosqlite:///{directory / 'bench.db'}"
    migrate(url, quiet=True)
    app = create_app(Settings(database_url=url, rate_limit_per_minute=0, log_level="WARNING"))
    logging.getLogger().handlers[-1].stream = open("/dev/null", "w")  # noqa: SIM115
    catalogue = local_catalogue()
    models = [m.slug for m in catalogue.snapshot.all_model_specs()]
    gpus = [g.slug for g in catalogue.snapshot.all_gpu_specs()]
    formats = [e.slug for e in catalogue.snapshot.formats.entries]
    cases = {
        # The request: 64 x 16 x 64 names (repeats allowed) and 64 splits.
        "64 x 16 x 64 names, 64 splits (repeats)": {
            "models": (models * 64)[:64],
            "formats": (formats * 16)[:16],
            "gpus": (gpus * 64)[:64],
            "splits": SPLITS,
        },
        # The most distinct cells the shipped catalogue has: every model, format and GPU.
        f"{len(models)} x {len(formats)} x {len(gpus)} catalogue, 64 splits": {
            "formats": formats,
            "splits": SPLITS,
        },
    }
    async with app.lifespan():
        idle = [await probe(app) for _ in range(200)]
        print(f"GET /healthz alone: median {statistics.median(idle) * 1e3:.2f} ms")
        print(f"{'POST /matrix':<44} {'s':>7} {'MB':>6} {'healthz median/worst ms':>24}")
        for name, body in cases.items():
            seconds, status, size, latencies = await under_load(app, body)
            assert status == 200, (name, status)
            worst = max(latencies) if latencies else float("nan")
            median = statistics.median(latencies) if latencies else float("nan")
            print(
                f"{name:<44} {seconds:>7.2f} {size / 1e6:>6.2f} "
                f"{median * 1e3:>11.1f} / {worst * 1e3:<10.1f}"
            )
    # The core at the bound itself (the catalogue cannot name 4,096 distinct cells): the
    # shipped models under distinct slugs until models x formats x GPUs reaches the limit.
    specs = catalogue.snapshot.all_model_specs()
    fmts = [catalogue.number_format(f, "formats") for f in formats]
    gpu_specs = catalogue.snapshot.all_gpu_specs()
    rows = MAX_MATRIX_CELLS // (len(fmts) * len(gpu_specs))
    many = [msgspec.structs.replace(specs[i % len(specs)], slug=f"m{i}") for i in range(rows)]
    started = time.perf_counter()
    build_matrix(many, fmts, gpu_specs, Workload(splits=tuple(SPLITS)))
    cells = rows * len(fmts) * len(gpu_specs)
    seconds = time.perf_counter() - started
    print(
        f"core matrix of {cells:,} cells (limit {MAX_MATRIX_CELLS:,}), 64 splits: {seconds:.2f} s"
    )


if __name__ == "__main__":
    asyncio.run(main())
