"""The service against the bare framework, over HTTP: the ratios of issue 20.

Starts the bare Litestar app (bench/bare.py) and the service (``python -m service serve``, the
rate limit switched off with RATE_LIMIT_PER_MINUTE=0 so every answer is a 200; JSON log lines
written to /dev/null, their cost kept), each under the same uvicorn, on loopback. A load client
in this process keeps a few keep-alive connections busy (pipelined requests: the client costs
little next to the server) for a fixed time, the bare app and the service taking turns, several
rounds; each side's best round counts. Reports each ratio (service / bare requests per second)
beside its goal, then the throughput of two workers against one, the service's and the bare
app's (what this machine's two CPUs allow a server that does nothing), measured with wrk where
it is installed (its client costs the shared CPUs far less than this one). Beside each line, the
share of the CPUs' time the hypervisor gave to other guests meanwhile (steal, from /proc/stat):
a quiet machine shows none. Ratios measured in one run, never absolute budgets: a busy machine
slows both sides. Run: `python bench/framework.py` (or
`make bench`); ``--quick`` for shorter rounds.
"""

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.verify_log import typical_verify_body  # noqa: E402

PLAN = {"model": "llama-3.1-70b", "gpu": "h100-sxm", "concurrency": 40}
VLLM = {**PLAN, "method": "vllm"}
RENEW = 40
"""Workers' comparison: each connection replaced after this many requests (see _connection)."""


def request(method: str, path: str, body: bytes = b"") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nhost: bench\r\n"
    if body:
        head += f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


def post(path: str, body: object) -> bytes:
    return request("POST", path, json.dumps(body).encode())


# (name, the service's request, the bare app's request, goal: service / bare at least)
CASES = [
    ("GET /healthz", request("GET", "/healthz"), request("GET", "/healthz"), 0.8),
    ("POST /plan (seed method)", post("/plan", PLAN), post("/plan", PLAN), 0.8),
    ("POST /plan (vllm method)", post("/plan", VLLM), post("/plan", VLLM), 0.5),
    (
        "POST /verify (200-line log)",
        post("/verify", typical_verify_body()),
        post("/verify", typical_verify_body()),
        0.3,
    ),
    ("GET /matrix (default)", request("GET", "/matrix"), request("GET", "/healthz"), 0.1),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server(argv: list[str], env: dict[str, str]) -> Iterator[int]:
    """A server subprocess on a free loopback port; yields the port once /healthz answers."""
    port = free_port()
    process = subprocess.Popen(
        [*argv, "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,  # the JSON log lines: written, then dropped
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(request("GET", "/healthz"))
                    if s.recv(64).startswith(b"HTTP/1.1 200"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"{' '.join(argv)} did not start")
            time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def answer_length(buffer: bytes | bytearray) -> int | None:
    """The bytes of the first answer in ``buffer``, head and body (framed by Content-Length),
    or None until its head is all there; a RuntimeError naming the status for any but a 200."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buffer[:end]).lower()
    if not head.startswith(b"http/1.1 200"):
        raise RuntimeError(head.split(b"\r\n", 1)[0].decode())
    at = head.find(b"content-length:") + 15
    line_end = head.find(b"\r\n", at)  # -1: the head's last line
    return end + 4 + int(head[at : line_end if line_end >= 0 else None])


class _Pipelined(asyncio.Protocol):
    """One keep-alive connection sending ``depth`` pipelined requests at a time, the next batch
    once all are answered, until ``until`` or ``renew`` answers (0: never renewed). Parsed as
    bytes arrive (a protocol, not a stream reader: no future and no wake-up per answer), so
    the client costs the shared CPUs little next to the server it measures."""

    def __init__(self, batch: bytes, depth: int, until: float, renew: int) -> None:
        self.batch, self.depth, self.until, self.renew = batch, depth, until, renew
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.answered = self.pending = 0
        self.buffer = bytearray()
        self.need = 0  # the bytes of the answer being read (head and body); 0: a head is next

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self._send()

    def _send(self) -> None:
        self.transport.write(self.batch)
        self.pending = self.depth

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        while True:
            if not self.need:
                try:
                    need = answer_length(buffer)
                except RuntimeError as exc:
                    self._finish(exc)
                    return
                if need is None:
                    return
                self.need = need
            if len(buffer) < self.need:
                return
            del buffer[: self.need]
            self.need = 0
            self.answered += 1
            self.pending -= 1
            if self.pending == 0:
                renewed = self.renew and self.answered >= self.renew
                if renewed or time.perf_counter() >= self.until:
                    self._finish(None)
                    return
                self._send()

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish(exc or ConnectionError("closed by the server"))

    def _finish(self, exc: BaseException | None) -> None:
        if not self.done.done():
            if exc is None:
                self.done.set_result(None)
            else:
                self.done.set_exception(exc)
        self.transport.close()


async def _connection(port: int, payload: bytes, depth: int, until: float, renew: int) -> int:
    """Requests answered on keep-alive connections, each replaced after ``renew`` requests (0:
    never): with several workers the kernel hands a new connection to whichever accepts it
    first, and a busy worker accepts later, so renewed connections spread over the workers."""
    loop, answered = asyncio.get_running_loop(), 0
    while time.perf_counter() < until:
        _, client = await loop.create_connection(
            lambda: _Pipelined(payload * depth, depth, until, renew), "127.0.0.1", port
        )
        await client.done
        answered += client.answered
    return answered


async def _rate(
    port: int, payload: bytes, seconds: float, connections: int, depth: int, renew: int
) -> float:
    started = time.perf_counter()
    until = started + seconds
    counts = await asyncio.gather(
        *(_connection(port, payload, depth, until, renew) for _ in range(connections))
    )
    return sum(counts) / (time.perf_counter() - started)


def rate(
    port: int,
    payload: bytes,
    seconds: float,
    connections: int = 4,
    depth: int = 4,
    renew: int = 0,
) -> float:
    """Requests per second that ``port`` answers with ``payload`` for about ``seconds``."""
    return asyncio.run(_rate(port, payload, seconds, connections, depth, renew))


def wrk_rate(port: int, body: object, seconds: float, connections: int = 64) -> float:
    """Requests per second that ``port`` answers to POST /plan with ``body``, from wrk (one
    thread, ``connections`` keep-alive connections opened at once, a request in flight on
    each): a C client that spends a fraction of this client's CPU time per request, which
    the servers of the workers' comparison share two CPUs with."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(
            f'wrk.method = "POST"\nwrk.body = [[{json.dumps(body)}]]\n'
            'wrk.headers["Content-Type"] = "application/json"\n'
        )
    try:
        argv = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "-s"]
        url = f"http://127.0.0.1:{port}/plan"
        out = subprocess.run([*argv, script.name, url], capture_output=True, text=True).stdout
    finally:
        os.unlink(script.name)
    if "Non-2xx" in out or "Requests/sec:" not in out:
        raise RuntimeError(f"wrk: {out.strip()[-300:]}")
    return float(out.split("Requests/sec:")[1].split()[0])


class CpuClock:
    """The machine's CPU time by kind since it started (/proc/stat's first line: user, nice,
    system, idle, iowait, irq, softirq, steal), or nothing where there is no /proc/stat."""

    def __init__(self) -> None:
        self.start = self._read()

    @staticmethod
    def _read() -> list[int]:
        try:
            with open("/proc/stat") as stat:
                return [int(ticks) for ticks in stat.readline().split()[1:9]]
        except (OSError, ValueError):
            return []

    def steal(self) -> float | None:
        """The share of the CPUs' time stolen by the host since this clock started."""
        now = self._read()
        spent = [after - before for before, after in zip(self.start, now, strict=False)]
        return spent[7] / sum(spent) if len(spent) == 8 and sum(spent) else None


def steal_label(clock: CpuClock) -> str:
    steal = clock.steal()
    return "" if steal is None else f"{steal:>6.1%}"


def service_env(database_url: str, workers: int) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        "RATE_LIMIT_PER_MINUTE": "0",  # every answer a 200: the limit is measured off
        "LOG_LEVEL": "INFO",
        "WORKERS": str(workers),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter rounds (noisier)")
    args = parser.parse_args()
    seconds, rounds = (0.7, 2) if args.quick else (1.0, 7)
    wrk = shutil.which("wrk") is not None

    from service.db import migrate

    directory = Path(tempfile.mkdtemp(prefix="planner-http-bench-"))
    url = f"sqlite+aiosqlite:///{directory / 'bench.db'}"
    migrate(url, quiet=True)
    python = sys.executable
    bare_argv = [python, "-m", "uvicorn", "bench.bare:app", "--log-level", "warning"]
    bare_argv.append("--no-access-log")
    serve_argv = [python, "-m", "service", "serve"]
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(f"{'case':<30} {'bare req/s':>10} {'service':>9} {'ratio':>6} {'goal':>6}  steal")
    with server(bare_argv, {}) as bare, server(serve_argv, service_env(url, 1)) as one:
        for name, mine, theirs, goal in CASES:
            rate(bare, theirs, 0.3)  # warm both: first requests, caches, the catalogue
            rate(one, mine, 0.3)
            best_bare = best_service = 0.0
            clock = CpuClock()
            for _ in range(rounds):
                best_bare = max(best_bare, rate(bare, theirs, seconds))
                best_service = max(best_service, rate(one, mine, seconds))
            ratio = best_service / best_bare
            verdict = "ok" if ratio >= goal else "below"
            print(
                f"{name:<30} {best_bare:>10.0f} {best_service:>9.0f} {ratio:>6.3f} "
                f">={goal:<4} {verdict:<5} {steal_label(clock)}"
            )
        # One worker and two take turns too, all four servers up at once (the idle ones wait in
        # their accept): a slow spell of this shared machine then slows every side alike.
        bare_two_argv = [python, "-m", "bench.bare", "--workers", "2"]
        with server(serve_argv, service_env(url, 2)) as two, server(bare_two_argv, {}) as bare_two:
            plan = post("/plan", PLAN)

            def measure(port: int, seconds: float) -> float:
                # wrk's rounds are whole seconds, two of them: its 64 connections open first.
                if wrk:
                    return wrk_rate(port, PLAN, 2 * seconds)
                return rate(port, plan, seconds, 8, renew=RENEW)

            sides = (one, two, bare, bare_two)
            for port in sides:
                measure(port, 1.0)
            best = dict.fromkeys(sides, 0.0)
            clock = CpuClock()
            for _ in range(rounds):
                for port in sides:
                    best[port] = max(best[port], measure(port, seconds))
    scaling, ceiling = best[two] / best[one], best[bare_two] / best[bare]
    print(
        f"{'2 workers / 1, POST /plan':<30} {best[one]:>10.0f} {best[two]:>9.0f} "
        f"{scaling:>6.3f} >=1.6  {'ok' if scaling >= 1.6 else 'below':<5} {steal_label(clock)}"
    )
    print(
        f"{'  the bare app, the same run':<30} {best[bare]:>10.0f} {best[bare_two]:>9.0f} "
        f"{ceiling:>6.3f} (this machine's ceiling)"
    )
    client = "wrk, 64 connections" if wrk else "this client (no wrk: apt-get install wrk)"
    print(f"{'  the load client':<30} {client}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
