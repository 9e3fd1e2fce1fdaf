"""Running it like a production service: request ids, JSON logs, Prometheus metrics, rate limit.

``RequestMiddleware`` wraps the whole Litestar ASGI handler (see create_app), outside routing and
the exception handlers, so it sees every request, 404s and 413s included:

- request id: an incoming ``X-Request-ID`` is kept when sane (1-128 of ``A-Za-z0-9._:-``),
  else a new uuid4 hex; it goes back in the ``X-Request-ID`` header, into every problem body
  (``request_id``, through ``scope["state"]``) and into the request's log line;
- one structlog JSON line per request: method, path, route template, status, duration, caller;
- metrics by route *template* (``/plans/{plan_id:int}``, never the raw path: bounded labels);
- rate limit per verified principal: a presented key is verified here (KeyVerifier, cached a
  few seconds) and its principal handed to the guards in ``scope["state"]``; anonymous callers
  and keys that fail are limited by client address (the socket peer, or TRUSTED_PROXY_HEADER).
  A token bucket per replica: ``RATE_LIMIT_PER_MINUTE`` (default 600) refilled continuously,
  ``RATE_LIMIT_BURST`` (default 120) at once; failed authentications have their own, stricter
  bucket per address (``AUTH_FAILURES_PER_MINUTE``, default 20), checked before the lookup, so
  guessing keys ends in 429s, not database lookups. Over a limit, 429 problem+json with
  Retry-After. /healthz, /readyz and /metrics are never limited (probes and scrapes). Behind N
  replicas the effective limit is up to N times higher: it protects each replica, not a quota;
- a catalogue write answered 2xx on this replica expires the catalogue cache
  (service.catalogue.cache) that the computations are served from.

Litestar's built-in RateLimitMiddleware was not used: it keeps every request timestamp per key
(STACK-NOTES: throughput fell ~8x at high limits) and its 429 carries no Retry-After.
"""

import bisect
import itertools
import logging
import math
import random
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
from litestar import Request, Response, get
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import CollectorRegistry, Counter, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from service.api.guards import AUTH_ERROR, AUTH_FAILED, PRINCIPAL, KeyVerifier, bearer_key
from service.api.negotiation import header
from service.api.problems import PROBLEM_JSON, make_problem
from service.catalogue.cache import CatalogueCache
from service.logs import configure_logging as configure_logging  # re-exported: create_app's
from service.logs import log_request

REQUEST_ID_HEADER = "X-Request-ID"
_SANE_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:-]{1,128}")
UNLIMITED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
CATALOGUE_PATHS = ("/gpus", "/interconnects", "/models", "/formats")
UNMATCHED = "<unmatched>"
METRICS_MEDIA_TYPE = "text/plain; version=0.0.4"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

disable_created_metrics()  # type: ignore[no-untyped-call]  # no *_created series: half the exposition, nothing we query


# Metrics ---------------------------------------------------------------------------------


REQUEST_LABELS = ("method", "route", "status")


class RequestSeries:
    """One (method, route, status)'s answers: how many, their seconds in all, and how many in
    each latency bucket (not cumulative; the last one +Inf)."""

    __slots__ = ("buckets", "count", "total_s")

    def __init__(self, bucket_count: int) -> None:
        self.count = 0
        self.total_s = 0.0
        self.buckets = [0] * bucket_count


class RequestMetrics(Collector):
    """``planner_http_requests`` (a counter) and ``planner_http_request_duration_seconds`` (a
    histogram), by method, route template and status: the families prometheus_client's Counter
    and Histogram expose (a test compares the two expositions), counted as plain numbers by
    RequestMiddleware on the event loop's thread and turned into samples when scraped, instead
    of three calls through the library's checks and locks on every request."""

    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.upper_bounds = (*buckets, math.inf)
        # The "le" labels as the library writes them (Go's float format: "0.0025", "+Inf").
        self.bucket_names = [floatToGoString(b) for b in self.upper_bounds]  # type: ignore[no-untyped-call]
        # By (method, route template, status): the routes are templates, so this stays small.
        self.series: dict[tuple[str, str, int], RequestSeries] = {}

    def series_of(self, method: str, route: str, status: int) -> RequestSeries:
        key = (method, route, status)
        series = self.series.get(key)
        if series is None:
            series = self.series[key] = RequestSeries(len(self.upper_bounds))
        return series

    def observe(self, series: RequestSeries, seconds: float) -> None:
        """What Counter.inc() and Histogram.observe(seconds) count (the same bucket rule)."""
        series.count += 1
        series.total_s += seconds
        series.buckets[bisect.bisect_left(self.upper_bounds, seconds)] += 1

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "planner_http_requests",
            "HTTP requests answered, by method, route template and status",
            labels=REQUEST_LABELS,
        )
        latency = HistogramMetricFamily(
            "planner_http_request_duration_seconds",
            "Time from the request's arrival to the end of its answer",
            labels=REQUEST_LABELS,
        )
        for (method, route, status), series in list(self.series.items()):
            labels = (method, route, str(status))
            requests.add_metric(labels, float(series.count))
            cumulative = itertools.accumulate(float(n) for n in series.buckets)
            latency.add_metric(
                labels, list(zip(self.bucket_names, cumulative, strict=True)), series.total_s
            )
        yield requests
        yield latency


class Metrics:
    """One registry per app (tests build many apps in one process; no global state)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = RequestMetrics(LATENCY_BUCKETS)
        r.register(self.requests)
        self.plans_created = Counter(
            "planner_plans_created",
            "Saved plans created (201; idempotent replays excluded)",
            registry=r,
        )
        self.plans_reviewed = Counter(
            "planner_plans_reviewed",
            "Reviews recorded, by the plan's status after the review",
            ["result"],
            registry=r,
        )
        self.plan_outcomes = Counter(
            "planner_plan_outcomes",
            "Plans computed (/plan) or saved (/plans), by answer status",
            ["source", "status"],
            registry=r,
        )
        self.database_errors = Counter(
            "planner_database_errors",
            "Database calls that failed (unreachable, timed out), by where they happened",
            ["where"],
            registry=r,
        )
        self.rate_limited = Counter(
            "planner_rate_limited",
            "Requests answered 429 by the rate limit (per principal, address or failed key)",
            registry=r,
        )

    def database_error(self, where: str) -> None:
        self.database_errors.labels(where=where).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


@get("/metrics", include_in_schema=False, sync_to_thread=False)
def metrics_endpoint(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Prometheus text format (scraped by the cluster; not part of the API contract)."""
    metrics: Metrics = request.app.state.metrics
    return Response(metrics.render(), media_type=METRICS_MEDIA_TYPE)  # Litestar adds charset


# Rate limit ------------------------------------------------------------------------------


class RateLimiter:
    """A token bucket per caller: ``per_minute`` tokens a minute, at most ``burst`` saved up."""

    MAX_CALLERS = 10_000

    def __init__(
        self, per_minute: int, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(max(1, burst))
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, caller: str) -> float:
        """0 when the request may go ahead, else the seconds until it could."""
        now = self._clock()
        tokens, at = self._buckets.get(caller, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        if tokens >= 1.0:
            self._buckets[caller] = (tokens - 1.0, now)
            if len(self._buckets) > self.MAX_CALLERS:
                self._forget_full(now)
            return 0.0
        self._buckets[caller] = (tokens, now)
        return (1.0 - tokens) / self.rate

    def give_back(self, caller: str) -> None:
        """Undo one take(): the request turned out not to count against this bucket."""
        tokens, at = self._buckets.get(caller, (self.burst, self._clock()))
        self._buckets[caller] = (min(self.burst, tokens + 1.0), at)

    def _forget_full(self, now: float) -> None:
        """Callers whose bucket has refilled are indistinguishable from new ones: drop them."""
        self._buckets = {
            k: (t, at)
            for k, (t, at) in self._buckets.items()
            if t + (now - at) * self.rate < self.burst
        }


MAX_ADDRESS_CHARS = 64  # an IPv6 address with a zone fits; a longer one is not an address


def client_address(scope: Scope, proxy_header: bytes = b"") -> str:
    """The caller's address: the last value of ``proxy_header`` (lower-case) when configured and
    present, else the socket peer's."""
    if proxy_header:
        found = b""
        for name, value in scope["headers"]:
            if name == proxy_header:
                found = value.rsplit(b",", 1)[-1].strip() or found
        if found:
            return found[:MAX_ADDRESS_CHARS].decode("latin-1")
    client = scope.get("client")
    return client[0] if client else "-"


# The middleware --------------------------------------------------------------------------


OUTCOME = "planner_outcome"
"""Where a handler leaves what its answer counts for (``note_outcome``): RequestMiddleware
counts it once the request ends in a 2xx, so no answer body is decoded again to count it."""
Outcome = tuple[str, str | None]


def note_outcome(state: dict[str, Any], kind: str, status: str | None) -> None:
    """Count this request's answer, if it ends in a 2xx: ``kind`` "compute" (POST /plan, the
    plan's status), "created" (a new saved plan, its answer's status) or "reviewed" (the plan's
    workflow status after the review). ``state``: the scope's state (``request.scope["state"]``)."""
    state[OUTCOME] = (kind, status)


def request_id_of(scope: Scope) -> tuple[str, bool]:
    """The request's id (the first sane X-Request-Id, else a new one) and whether it presents
    an Authorization header (its key is then verified here even with the rate limits off, so
    the guards read one verdict): one pass over the headers for both."""
    request_id, has_auth = None, False
    for name, value in scope["headers"]:
        if name == b"authorization":
            has_auth = True
        elif name == b"x-request-id" and request_id is None and _SANE_REQUEST_ID.fullmatch(value):
            request_id = value.decode()
    return (request_id or new_request_id()), has_auth


_VERSION_4 = ~(0xF000 << 64 | 0xC000 << 48) & (2**128 - 1)


def new_request_id() -> str:
    """A random version-4 UUID in hex, as uuid.uuid4().hex, from Python's generator (seeded
    from the OS once per process) instead of an os.urandom call per request: a request id
    names a request, it guards nothing."""
    bits = random.getrandbits(128) & _VERSION_4 | 0x4000 << 64 | 0x8000 << 48
    return bits.to_bytes(16, "big").hex()  # the 32 digits of f"{bits:032x}", in half the time


class RequestMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: Metrics,
        cache: CatalogueCache,
        limiter: RateLimiter | None,
        keys: KeyVerifier,
        auth_failures: RateLimiter | None = None,
        proxy_header: str = "",
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.cache = cache
        self.limiter = limiter
        self.keys = keys
        self.auth_failures = auth_failures
        self.proxy_header = proxy_header.strip().lower().encode("latin-1")
        self._computed: dict[str, Any] = {}  # POST /plan's outcome counter, by plan status

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id, has_auth = request_id_of(scope)
        state: dict[str, Any] = scope.setdefault("state", {})  # type: ignore[typeddict-item]
        state["request_id"] = request_id
        header = (b"x-request-id", request_id.encode())
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), header]}  # type: ignore[typeddict-item]
            await send(message)

        route = UNMATCHED
        try:
            if (has_auth or self.limiter is not None or self.auth_failures is not None) and (
                scope["path"].rstrip("/") or "/"
            ) not in UNLIMITED_PATHS:
                limited = await self._limit(scope)
                if limited is not None:
                    route = "<rate-limited>"
                    self.metrics.rate_limited.inc()
                    await _too_many_requests(scope, send_with_id, *limited, request_id)
                    return
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = scope.get("path_template") or route  # type: ignore[assignment]
            self._record(scope, route, status, elapsed, request_id)

    async def _limit(self, scope: Scope) -> tuple[float, str] | None:
        """Verify a presented key (state for the guards), then take a token from the caller's
        bucket: (seconds to wait, whose limit) when there is none."""
        state: dict[str, Any] = scope["state"]  # type: ignore[typeddict-item]
        address = state["client_address"] = client_address(scope, self.proxy_header)
        caller, whose = f"addr:{address}", "this client address"
        key = bearer_key(header(scope, b"authorization") or "")
        if key is not None:
            principal = self.keys.cached(key)
            if principal is None:
                # Every lookup of an unknown key costs a token of the address's failure bucket,
                # taken first so that guessing stops before the database is asked again.
                if self.auth_failures is not None:
                    wait = self.auth_failures.take(caller)
                    if wait:
                        return wait, "failed authentications from this client address"
                try:
                    principal = await self.keys.verify(key)
                except Exception as exc:  # database unavailable: the guard answers 503
                    state[AUTH_ERROR] = exc
                if self.auth_failures is not None and (principal or AUTH_ERROR in state):
                    self.auth_failures.give_back(caller)  # not a failed authentication
            if principal is not None:
                state[PRINCIPAL] = principal
                caller, whose = f"principal:{principal.name}", "this API key"
            elif AUTH_ERROR not in state:
                state[AUTH_FAILED] = True
        wait = self.limiter.take(caller) if self.limiter is not None else 0.0
        return (wait, whose) if wait else None

    def _record(
        self, scope: Scope, route: str, status: int, elapsed: float, request_id: str
    ) -> None:
        method = scope["method"]  # type: ignore[typeddict-item]
        requests = self.metrics.requests
        requests.observe(requests.series_of(method, route, status), elapsed)
        state: dict[str, Any] = scope["state"]  # type: ignore[typeddict-item]
        if 200 <= status < 300:
            if method not in ("GET", "HEAD", "OPTIONS") and route.startswith(CATALOGUE_PATHS):
                self.cache.expire()  # committed (the commit runs before the answer starts)
            outcome: Outcome | None = state.get(OUTCOME)
            if outcome is not None:
                self._count(*outcome)
        principal = state.get(PRINCIPAL)
        address = state.get("client_address") or (
            client_address(scope, self.proxy_header) if scope.get("client") else None
        )
        log_request(
            logging.WARNING if status >= 500 else logging.INFO,
            {
                "request_id": request_id,
                "method": method,
                "path": scope["path"].rstrip("/") or "/",
                "route": route,
                "status": status,
                "duration_ms": round(elapsed * 1000, 2),
                "client": address,
                "principal": getattr(principal, "name", None),
                "event": "request",  # after the fields, where structlog put it
            },
        )

    def _count(self, kind: str, status: str | None) -> None:
        if kind == "compute" and status is not None:
            outcome = self._computed.get(status)
            if outcome is None:  # a few statuses: each child looked up (under a lock) once
                outcome = self._computed[status] = self.metrics.plan_outcomes.labels(
                    "compute", status
                )
            outcome.inc()
        elif kind == "created":
            self.metrics.plans_created.inc()
            if status is not None:
                self.metrics.plan_outcomes.labels("saved", status).inc()
        elif kind == "reviewed" and status is not None:
            self.metrics.plans_reviewed.labels(status).inc()


async def _too_many_requests(
    scope: Scope, send: Send, wait: float, whose: str, request_id: str
) -> None:
    retry_after = max(1, int(wait + 0.999))
    problem = make_problem(
        429,
        f"rate limit for {whose} reached; retry in {retry_after} s",
        scope["path"],
        request_id,
        type_="urn:gpu-planner:rate-limited",
    )
    payload = msgspec.json.encode(problem)
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                (b"content-length", str(len(payload)).encode()),
                (b"retry-after", str(retry_after).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload, "more_body": False})
