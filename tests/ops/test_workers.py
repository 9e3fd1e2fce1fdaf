"""`serve` with WORKERS > 1: uvicorn workers on one port, each on a SO_REUSEPORT socket of its
own (service/workers.py), so that connections opened together spread over them."""

import logging
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import SIGNALS

import service.db
import service.workers
from service.__main__ import main
from service.db import migrate
from service.workers import Supervisor, listening_sockets
from tests.ops.support import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_each_worker_gets_its_own_socket_on_the_one_port_with_nodelay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[tuple[Any, list[socket.socket]]] = []

    class Recorder:
        def __init__(self, config: Any, sockets: list[socket.socket]) -> None:
            started.append((config, sockets))

        def run(self) -> None:
            pass

    monkeypatch.setattr(service.workers, "Supervisor", Recorder)
    monkeypatch.setattr(service.db, "migrate", lambda url: None)
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: pytest.fail("one process only"))
    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg://planner@db.invalid:5432/planner")
    monkeypatch.setenv("WORKERS", "3")
    monkeypatch.setenv("SHUTDOWN_GRACE_S", "25")
    port = free_port()
    assert main(["serve", "--host", "127.0.0.1", "--port", str(port)]) == 0
    ((config, sockets),) = started
    try:
        # Each worker imports the factory and builds its own app from the same environment.
        assert (config.app, config.factory, config.workers) == ("service.app:create_app", True, 3)
        assert config.timeout_graceful_shutdown == 25
        assert (config.log_config, config.port) == (None, port)
        assert len(sockets) == 3
        for sock in sockets:
            assert sock.getsockname() == ("127.0.0.1", port)
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) != 0
            # Accepted connections inherit TCP_NODELAY from the listening socket.
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        for sock in sockets:
            sock.close()


def test_port_zero_puts_every_socket_on_the_port_the_first_one_got() -> None:
    sockets = listening_sockets(uvicorn.Config("x:app", host="127.0.0.1", port=0), 3)
    try:
        ports = {sock.getsockname()[1] for sock in sockets}
        assert len(ports) == 1 and ports != {0}
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.parametrize("reuse_port", [False, True])
def test_a_port_another_server_listens_on_is_refused(reuse_port: bool) -> None:
    # Also when that server set SO_REUSEPORT too, as another `serve` would: joining it would
    # split its connections with it unseen.
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, int(reuse_port))
        other.bind(("127.0.0.1", 0))
        other.listen()
        config = uvicorn.Config("x:app", host="127.0.0.1", port=other.getsockname()[1])
        with pytest.raises(OSError):
            listening_sockets(config, 2)


def test_serve_exits_as_uvicorn_does_when_the_port_is_taken(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(service.db, "migrate", lambda url: None)
    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg://planner@db.invalid:5432/planner")
    monkeypatch.setenv("WORKERS", "2")
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        with pytest.raises(SystemExit) as exited:
            main(["serve", "--host", "127.0.0.1", "--port", str(port)])
    assert exited.value.code == STARTUP_FAILURE
    assert "Address already in use" in caplog.text


def test_the_kernel_spreads_connections_opened_together_over_the_sockets() -> None:
    # 32 connections at once: the kernel picks a socket by each one's addresses, so both get
    # some (all 32 on one: a chance of 2 in 2^32), where one shared socket would hand them all
    # to whichever worker accepts first.
    sockets = listening_sockets(uvicorn.Config("x:app", host="127.0.0.1", port=0), 2)
    clients = []
    try:
        for sock in sockets:
            sock.listen(64)
            sock.setblocking(False)
        port = sockets[0].getsockname()[1]
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
        time.sleep(0.2)
        accepted = [0, 0]
        for index, sock in enumerate(sockets):
            while True:
                try:
                    conn, _ = sock.accept()
                except BlockingIOError:
                    break
                conn.close()
                accepted[index] += 1
        assert sum(accepted) == 32
        assert min(accepted) > 0, accepted
    finally:
        for sock in [*sockets, *clients]:
            sock.close()


class _FakeProcess:
    """A worker that records its sockets and is alive until told otherwise."""

    made: ClassVar[list["_FakeProcess"]] = []

    def __init__(self, config: Any, sockets: list[socket.socket]) -> None:
        self.sockets, self.alive, self.exitcode = sockets, True, 1
        self.pid = 1000 + len(_FakeProcess.made)
        _FakeProcess.made.append(self)

    def start(self) -> None:
        pass

    def is_alive(self, timeout: float = 5) -> bool:
        return self.alive

    def wait_until_ready(self, timeout: float, should_exit: Any = None) -> bool:
        return True

    def kill(self) -> None:
        self.alive = False

    terminate = kill

    def join(self) -> None:
        pass


def test_a_dead_worker_is_replaced_on_its_own_socket(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Worker i listens on socket i; the one that dies is replaced on the same socket (its
    # queue would otherwise wait unserved), and SIGHUP's rolling restart keeps the slots.
    monkeypatch.setattr(service.workers, "Process", _FakeProcess)
    monkeypatch.setattr(_FakeProcess, "made", [])
    config = uvicorn.Config("x:app", host="127.0.0.1", port=0, workers=3, log_config=None)
    sockets = listening_sockets(config, 3)
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}  # the supervisor takes them
    caplog.set_level(logging.INFO, logger="uvicorn.error")
    # Straight on the logger: an earlier uvicorn.Config's logging stops "uvicorn" propagating.
    logging.getLogger("uvicorn.error").addHandler(caplog.handler)
    try:
        supervisor = Supervisor(config, sockets)
        supervisor.init_processes()
        assert [p.sockets for p in _FakeProcess.made] == [[s] for s in sockets]
        supervisor.processes[1].alive = False  # type: ignore[attr-defined]
        supervisor.keep_subprocess_alive()
        assert len(_FakeProcess.made) == 4 and _FakeProcess.made[3].sockets == [sockets[1]]
        assert "Child process [1001] died" in caplog.text  # as uvicorn's supervisor says
        assert supervisor.processes[1] is _FakeProcess.made[3]  # type: ignore[comparison-overlap]
        supervisor.restart_all()
        assert [p.sockets for p in _FakeProcess.made[4:]] == [[s] for s in sockets]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        logging.getLogger("uvicorn.error").removeHandler(caplog.handler)
        for sock in sockets:
            sock.close()


def test_sigttin_and_sigttou_keep_one_worker_a_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    # uvicorn's handlers add a worker on every socket (one the slots have no socket for) and
    # retire the last one (its socket's connections would wait unserved): both are ignored.
    monkeypatch.setattr(service.workers, "Process", _FakeProcess)
    monkeypatch.setattr(_FakeProcess, "made", [])
    config = uvicorn.Config("x:app", host="127.0.0.1", port=0, workers=2, log_config=None)
    sockets = listening_sockets(config, 2)
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    try:
        supervisor = Supervisor(config, sockets)
        supervisor.init_processes()
        workers = list(supervisor.processes)
        supervisor.handle_ttin()
        assert supervisor.processes == workers
        supervisor.handle_ttou()
        assert supervisor.processes == workers and all(p.alive for p in _FakeProcess.made)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sock in sockets:
            sock.close()


def _established(port: int) -> set[str]:
    """The socket inodes of the established TCP connections on local ``port`` (the server's
    side), from Linux's /proc/net tables."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                    inodes.add(fields[9])
    return inodes


def _held(pid: int, inodes: set[str]) -> int:
    """How many of the sockets ``inodes`` process ``pid`` holds open."""
    held = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        held += link.startswith("socket:[") and link[8:-1] in inodes
    return held


def _connect_together(port: int, count: int) -> list[socket.socket]:
    """``count`` connections started at once, as a load balancer's pool or a benchmark opens
    them: every handshake is under way before the server accepts the first."""
    clients = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    for client in clients:
        client.setblocking(False)
        client.connect_ex(("127.0.0.1", port))
    for client in clients:
        _, writable, _ = select.select([], [client], [], 10)
        assert writable and client.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
        client.settimeout(10)
    return clients


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_two_real_workers_both_serve_connections_opened_together(tmp_path: Path) -> None:
    # A real `python -m service serve` with WORKERS=2: once both workers have started (each
    # logs its startup, then listens), 32 connections opened at once are answered, and each
    # worker holds some of them (a shared socket: the first worker to wake accepts them all).
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'serve.db'}"
    migrate(database_url)
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url, "WORKERS": "2", "LOG_LEVEL": "INFO"}
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    clients: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 90
        while log.read_text().count("Application startup complete") < 2:
            assert server.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.2)
        time.sleep(1.0)  # from the startup line to the listening socket
        clients = _connect_together(port, 32)
        for client in clients:
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        for client in clients:
            assert client.recv(65536).startswith(b"HTTP/1.1 200"), "every connection answered"
        with open(f"/proc/{server.pid}/task/{server.pid}/children") as listed:
            workers = [int(pid) for pid in listed.read().split()]
        established = _established(port)
        held = [_held(pid, established) for pid in workers]
        # Hashed over two sockets, fewer than 4 of 32 on one has a chance of 3 in a million.
        assert sum(held) == 32 and sorted(held)[-2] >= 4, held
    finally:
        for client in clients:
            client.close()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def test_one_worker_is_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(app))
    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg://planner@db.invalid:5432/planner")
    monkeypatch.delenv("WORKERS", raising=False)
    assert main(["serve"]) == 0
    assert len(served) == 1 and not isinstance(served[0], str)  # the app itself, made here
