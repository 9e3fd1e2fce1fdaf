"""The service against the bare framework over HTTP, in instructions: noise-free ratios.

bench/framework.py counts requests per second, which this shared 2-core machine moves by a tenth
from one round to the next. Here each server (the bare app, then the service, as
bench/framework.py starts them) runs under valgrind's callgrind; after a warm-up the counters
are zeroed (``callgrind_control -z``), N keep-alive requests are sent one at a time, and the
counts are dumped (``-d``): the server's user-space instructions per request, the same on a busy
machine as on a quiet one to a few thousand (its timers and catalogue checks fall among them).
The kernel's share (the sockets' system calls) and the CPU's instructions per cycle are not in
it, so the ratio is an upper bound of the throughput ratio: it tells a change's effect apart
from the machine's noise, not whether a goal is met.
Needs valgrind (``apt-get install valgrind``); each server takes about a minute under it.
Run: ``python bench/instructions.py [--requests N]``.
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.framework import (  # noqa: E402
    PLAN,
    answer_length,
    free_port,
    post,
    request,
    service_env,
)

CASES = [
    ("GET /healthz", request("GET", "/healthz")),
    ("POST /plan (seed method)", post("/plan", PLAN)),
]


def _answer(sock: socket.socket, payload: bytes) -> None:
    """Send one request and read its whole answer (a 200, framed by Content-Length)."""
    sock.sendall(payload)
    buffer = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed by the server")
        buffer += chunk
        length = answer_length(buffer)
        if length is not None and len(buffer) >= length:
            return


def per_request(argv: list[str], env: dict[str, str], payload: bytes, n: int) -> int:
    """The server's instructions per request for ``payload``, under callgrind."""
    out = Path(tempfile.mkdtemp(prefix="planner-callgrind-"))
    port = free_port()
    valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out / 'cg.out'}"]
    process = subprocess.Popen(
        [*valgrind, *argv, "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=60)
                _answer(sock, request("GET", "/healthz"))
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"{' '.join(argv)} did not start") from None
                time.sleep(0.5)
        with sock:
            for _ in range(50):  # warm: first requests, caches, the catalogue
                _answer(sock, payload)
            control = ["callgrind_control"]
            subprocess.run([*control, "-z", str(process.pid)], check=True, capture_output=True)
            for _ in range(n):
                _answer(sock, payload)
            subprocess.run([*control, "-d", str(process.pid)], check=True, capture_output=True)
    finally:
        process.terminate()
        process.wait(timeout=120)
    dumps = [p for p in out.glob("cg.out.*") if p.suffix != ".out"]
    total = max(
        int(line.split()[1])
        for dump in dumps
        for line in dump.read_text().splitlines()
        if line.startswith("summary:")
    )
    shutil.rmtree(out, ignore_errors=True)
    return total // n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (apt-get install valgrind): skipped")
        return
    from service.db import migrate

    directory = Path(tempfile.mkdtemp(prefix="planner-callgrind-db-"))
    url = f"sqlite+aiosqlite:///{directory / 'bench.db'}"
    migrate(url, quiet=True)
    python = sys.executable
    bare = [python, "-m", "uvicorn", "bench.bare:app", "--log-level", "warning", "--no-access-log"]
    service = [python, "-m", "service", "serve"]
    print(f"{'case':<30} {'bare instr':>11} {'service':>10} {'ratio':>6}")
    for name, payload in CASES:
        theirs = per_request(bare, {}, payload, args.requests)
        mine = per_request(service, service_env(url, 1), payload, args.requests)
        print(f"{name:<30} {theirs:>11,} {mine:>10,} {theirs / mine:>6.3f}")


if __name__ == "__main__":
    main()
