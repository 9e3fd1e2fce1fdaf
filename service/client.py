"""A Python client for the planner, on httpx: ``PlannerClient`` (sync) and
``AsyncPlannerClient`` (async), answering the service's own msgspec Structs.

    with PlannerClient("http://127.0.0.1:8000") as planner:
        answer = planner.plan(model="llama-3.1-70b", gpu="h100", concurrency=40)
        answer.gpu_count, answer.spare_bytes          # 4, 23518404608
        sweep = planner.speed(model="qwen3-8b", gpu="h100", input_tokens=1000,
                              output_tokens=200, concurrencies=[1, 8, 64])
        sweep.rows[0].tpot_s                          # seconds per output token

A 429 or 503 is retried (``max_retries`` times) after the answer's Retry-After (seconds or an
HTTP date), or a short backoff without one; a Retry-After longer than ``max_retry_wait_s`` is not
waited for: the error is raised at once. Every other error answer raises a ``PlannerError``
subclass carrying the RFC 9457 problem (``.problem.errors`` names the fields,
``.problem.suggestions`` the closest slugs).

A plain ``pip install gpu-capacity-planner`` is this client: httpx and msgspec, nothing of the
server's (that is the ``server`` extra). It imports the bodies from service.schemas and the
sizing core's answer Structs, both pure msgspec (the import contracts in pyproject.toml and
tests/client/test_packaging.py hold it to that).
"""

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import msgspec

from service.client_errors import (
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    PlannerError,
    RateLimited,
    ServerError,
    Unauthorized,
    Unavailable,
    Unprocessable,
    Unreachable,
    error_for,
    retry_after_s,
)
from service.schemas.catalogue import GpuBody, GpuPage, ModelBody, ModelPage
from service.schemas.compute import MatrixRequest, OffloadRequest, TrafficMatrix
from service.schemas.plan import PlanAnswer, PlanRequest, TrainingAnswer
from service.schemas.speed import SpeedAnswer
from service.sizing.cost import CostedMatrix
from service.sizing.offload import Offload
from service.sizing.vllm.plan import VllmPlanAnswer

__all__ = [
    "Answer",
    "AsyncPlannerClient",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "NotFound",
    "PlannerClient",
    "PlannerError",
    "RateLimited",
    "ServerError",
    "Unauthorized",
    "Unavailable",
    "Unprocessable",
    "Unreachable",
    "error_for",
    "retry_after_s",
]

Answer = PlanAnswer | TrainingAnswer | VllmPlanAnswer
"""What POST /plan answers: the seeds' inference plan, a training plan, or the vLLM method's."""

RETRY_STATUSES = frozenset({429, 503})
DEFAULT_TIMEOUT_S = 30.0
USER_AGENT = "gpu-capacity-planner-client/0.1"


class _Call(msgspec.Struct, frozen=True, kw_only=True):
    method: str
    path: str
    answer: Any
    """The Struct type to decode a 2xx into (or str: the text)."""
    body: bytes | None = None
    params: dict[str, Any] | None = None
    accept: str = "application/json"


def _request(
    base: type[msgspec.Struct], given: msgspec.Struct | None, fields: dict[str, Any]
) -> bytes:
    """A request Struct from an instance or keyword fields (checked like the server checks)."""
    if given is not None and fields:
        raise TypeError("pass a request Struct or keyword fields, not both")
    # A field given as a Struct (a plan's traffic) converts by its fields.
    value = given if given is not None else msgspec.convert(msgspec.to_builtins(fields), base)
    return msgspec.json.encode(value)


class _Base:
    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        max_retries: int = 3,
        max_retry_wait_s: float = 30.0,
        backoff_s: float = 0.5,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {"User-Agent": USER_AGENT, "Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.max_retries = max_retries
        self.max_retry_wait_s = max_retry_wait_s
        self.backoff_s = backoff_s

    def _delay(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before the next try, or None to give up with this answer."""
        if response.status_code not in RETRY_STATUSES or attempt >= self.max_retries:
            return None
        asked = retry_after_s(response)
        if asked is None:
            return min(self.backoff_s * float(2**attempt), self.max_retry_wait_s)
        return asked if asked <= self.max_retry_wait_s else None

    @staticmethod
    def _decode(call: _Call, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise error_for(response)
        if call.answer is str:
            return response.text
        return msgspec.json.decode(response.content, type=call.answer)

    # The calls: each builds a _Call; the subclasses send it.
    @staticmethod
    def _plan(request: PlanRequest | None, fields: dict[str, Any], accept: str = "") -> _Call:
        return _Call(
            method="POST",
            path="/plan",
            body=_request(PlanRequest, request, fields),
            answer=str if accept else Answer,
            accept=accept or "application/json",
        )

    @staticmethod
    def _matrix(request: MatrixRequest | None, fields: dict[str, Any], accept: str = "") -> _Call:
        traffic = (request.traffic if request is not None else fields.get("traffic")) is not None
        return _Call(
            method="POST",
            path="/matrix",
            body=_request(MatrixRequest, request, fields),
            answer=str if accept else (TrafficMatrix if traffic else CostedMatrix),
            accept=accept or "application/json",
        )

    @staticmethod
    def _offload(request: OffloadRequest | None, fields: dict[str, Any]) -> _Call:
        return _Call(
            method="POST",
            path="/offload",
            body=_request(OffloadRequest, request, fields),
            answer=Offload,
        )

    @staticmethod
    def _speed(request: msgspec.Struct | None, fields: dict[str, Any], accept: str = "") -> _Call:
        """POST /speed: a request Struct (the service's SpeedRequest) or its fields."""
        if request is not None and fields:
            raise TypeError("pass a request Struct or keyword fields, not both")
        body = msgspec.json.encode(request if request is not None else fields)
        answer = str if accept else SpeedAnswer
        return _Call(
            method="POST",
            path="/speed",
            body=body,
            answer=answer,
            accept=accept or "application/json",
        )

    @staticmethod
    def _page(path: str, answer: type[msgspec.Struct], limit: int, offset: int) -> _Call:
        return _Call(
            method="GET", path=path, params={"limit": limit, "offset": offset}, answer=answer
        )

    @staticmethod
    def _one(path: str, slug: str, answer: type[msgspec.Struct]) -> _Call:
        return _Call(method="GET", path=f"{path}/{slug}", answer=answer)


class PlannerClient(_Base):
    """Synchronous client; use as a context manager or call ``close()``."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = 3,
        max_retry_wait_s: float = 30.0,
        backoff_s: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(
            base_url,
            token=token,
            max_retries=max_retries,
            max_retry_wait_s=max_retry_wait_s,
            backoff_s=backoff_s,
        )
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout_s, transport=transport)
        self._sleep = sleep

    def __enter__(self) -> "PlannerClient":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: _Call) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    call.method,
                    call.path,
                    content=call.body,
                    params=call.params,
                    headers={**self.headers, "Accept": call.accept},
                )
            except httpx.TransportError as exc:
                raise Unreachable(0, None, f"{self.base_url}: {exc}") from exc
            delay = self._delay(response, attempt)
            if delay is None:
                return self._decode(call, response)
            self._sleep(delay)
            attempt += 1

    def plan(self, request: PlanRequest | None = None, /, **fields: Any) -> Answer:
        """POST /plan: a PlanRequest, or its fields as keywords."""
        answer: Answer = self._send(self._plan(request, fields))
        return answer

    def plan_csv(self, request: PlanRequest | None = None, /, **fields: Any) -> str:
        """POST /plan as CSV: the ranked options, units in the headers."""
        return str(self._send(self._plan(request, fields, "text/csv")))

    def matrix(
        self, request: MatrixRequest | None = None, /, **fields: Any
    ) -> CostedMatrix | TrafficMatrix:
        """POST /matrix; with ``traffic``, each cell's traffic plan too (TrafficMatrix)."""
        answer: CostedMatrix | TrafficMatrix = self._send(self._matrix(request, fields))
        return answer

    def matrix_csv(self, request: MatrixRequest | None = None, /, **fields: Any) -> str:
        return str(self._send(self._matrix(request, fields, "text/csv")))

    def offload(self, request: OffloadRequest | None = None, /, **fields: Any) -> Offload:
        answer: Offload = self._send(self._offload(request, fields))
        return answer

    def speed(self, request: msgspec.Struct | None = None, /, **fields: Any) -> SpeedAnswer:
        """POST /speed: one deployment over a sweep (``concurrencies`` or
        ``request_rates_per_s``), one row per point."""
        answer: SpeedAnswer = self._send(self._speed(request, fields))
        return answer

    def speed_csv(self, request: msgspec.Struct | None = None, /, **fields: Any) -> str:
        return str(self._send(self._speed(request, fields, "text/csv")))

    def gpus(self, limit: int = 500, offset: int = 0) -> GpuPage:
        page: GpuPage = self._send(self._page("/gpus", GpuPage, limit, offset))
        return page

    def gpu(self, slug: str) -> GpuBody:
        row: GpuBody = self._send(self._one("/gpus", slug, GpuBody))
        return row

    def models(self, limit: int = 500, offset: int = 0) -> ModelPage:
        page: ModelPage = self._send(self._page("/models", ModelPage, limit, offset))
        return page

    def model(self, slug: str) -> ModelBody:
        row: ModelBody = self._send(self._one("/models", slug, ModelBody))
        return row


class AsyncPlannerClient(_Base):
    """Asynchronous client; ``async with`` it or ``await aclose()``."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = 3,
        max_retry_wait_s: float = 30.0,
        backoff_s: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__(
            base_url,
            token=token,
            max_retries=max_retries,
            max_retry_wait_s=max_retry_wait_s,
            backoff_s=backoff_s,
        )
        self._http = httpx.AsyncClient(
            base_url=self.base_url, timeout=timeout_s, transport=transport
        )
        self._sleep = sleep

    async def __aenter__(self) -> "AsyncPlannerClient":
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: _Call) -> Any:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    call.method,
                    call.path,
                    content=call.body,
                    params=call.params,
                    headers={**self.headers, "Accept": call.accept},
                )
            except httpx.TransportError as exc:
                raise Unreachable(0, None, f"{self.base_url}: {exc}") from exc
            delay = self._delay(response, attempt)
            if delay is None:
                return self._decode(call, response)
            await self._sleep(delay)
            attempt += 1

    async def plan(self, request: PlanRequest | None = None, /, **fields: Any) -> Answer:
        answer: Answer = await self._send(self._plan(request, fields))
        return answer

    async def plan_csv(self, request: PlanRequest | None = None, /, **fields: Any) -> str:
        return str(await self._send(self._plan(request, fields, "text/csv")))

    async def matrix(
        self, request: MatrixRequest | None = None, /, **fields: Any
    ) -> CostedMatrix | TrafficMatrix:
        answer: CostedMatrix | TrafficMatrix = await self._send(self._matrix(request, fields))
        return answer

    async def matrix_csv(self, request: MatrixRequest | None = None, /, **fields: Any) -> str:
        return str(await self._send(self._matrix(request, fields, "text/csv")))

    async def offload(self, request: OffloadRequest | None = None, /, **fields: Any) -> Offload:
        answer: Offload = await self._send(self._offload(request, fields))
        return answer

    async def speed(self, request: msgspec.Struct | None = None, /, **fields: Any) -> SpeedAnswer:
        answer: SpeedAnswer = await self._send(self._speed(request, fields))
        return answer

    async def speed_csv(self, request: msgspec.Struct | None = None, /, **fields: Any) -> str:
        return str(await self._send(self._speed(request, fields, "text/csv")))

    async def gpus(self, limit: int = 500, offset: int = 0) -> GpuPage:
        page: GpuPage = await self._send(self._page("/gpus", GpuPage, limit, offset))
        return page

    async def gpu(self, slug: str) -> GpuBody:
        row: GpuBody = await self._send(self._one("/gpus", slug, GpuBody))
        return row

    async def models(self, limit: int = 500, offset: int = 0) -> ModelPage:
        page: ModelPage = await self._send(self._page("/models", ModelPage, limit, offset))
        return page

    async def model(self, slug: str) -> ModelBody:
        row: ModelBody = await self._send(self._one("/models", slug, ModelBody))
        return row
