"""`serve` with WORKERS > 1: uvicorn worker processes on one socket that leaves Nagle off."""

import socket
from typing import Any

import pytest

import service.db
from service.__main__ import main


def test_several_workers_share_one_listening_socket_with_nodelay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import uvicorn.supervisors

    started: list[tuple[Any, list[socket.socket]]] = []

    class Supervisor:
        def __init__(self, config: Any, sockets: list[socket.socket]) -> None:
            started.append((config, sockets))

        def run(self) -> None:
            pass

    monkeypatch.setattr(uvicorn.supervisors, "Multiprocess", Supervisor)
    monkeypatch.setattr(service.db, "migrate", lambda url: None)
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: pytest.fail("one process only"))
    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg://planner@db.invalid:5432/planner")
    monkeypatch.setenv("WORKERS", "2")
    monkeypatch.setenv("SHUTDOWN_GRACE_S", "25")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["serve", "--host", "127.0.0.1", "--port", str(port)]) == 0
    ((config, sockets),) = started
    try:
        # Each worker imports the factory and builds its own app from the same environment.
        assert (config.app, config.factory, config.workers) == ("service.app:create_app", True, 2)
        assert config.timeout_graceful_shutdown == 25
        assert (config.log_config, config.port) == (None, port)
        # Accepted connections inherit TCP_NODELAY from the listening socket.
        assert sockets[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        for sock in sockets:
            sock.close()


def test_one_worker_is_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(app))
    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg://planner@db.invalid:5432/planner")
    monkeypatch.delenv("WORKERS", raising=False)
    assert main(["serve"]) == 0
    assert len(served) == 1 and not isinstance(served[0], str)  # the app itself, made here
