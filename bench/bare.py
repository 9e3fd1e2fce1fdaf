"""The yardstick of the HTTP benchmarks: a bare Litestar app on the same server, with no
middleware, no database and no computation. GET /healthz answers a constant; POST /plan decodes
the same body into the service's own PlanRequest Struct (what Litestar's JSON decoding costs)
and answers a constant. Serve it with ``uvicorn bench.bare:app``, or with several workers started
as ``python -m service serve`` starts them: ``python -m bench.bare --workers 2 --port N``."""

import argparse

import msgspec
from litestar import Litestar, get, post

from service.plans.evaluate import PlanRequest


class Health(msgspec.Struct, frozen=True):
    status: str


class Planned(msgspec.Struct, frozen=True):
    model: str | None
    gpu_count: int


@get("/healthz", sync_to_thread=False)
def healthz() -> Health:
    return Health(status="ok")


@post("/plan", status_code=200, sync_to_thread=False)
def plan(data: PlanRequest) -> Planned:
    return Planned(model=data.model, gpu_count=4)


@post("/verify", status_code=200, sync_to_thread=False)
def verify(data: dict[str, object]) -> Planned:
    return Planned(model=None, gpu_count=1)


@get("/matrix", sync_to_thread=False)
def matrix() -> Planned:
    return Planned(model=None, gpu_count=1)


app = Litestar([healthz, plan, verify, matrix], logging_config=None, openapi_config=None)


if __name__ == "__main__":
    from service.workers import serve_workers

    parser = argparse.ArgumentParser(description="the bare app with several uvicorn workers")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    options = {"host": "127.0.0.1", "port": args.port, "log_level": "warning", "access_log": False}
    serve_workers(args.workers, options, "bench.bare:app", factory=False)
