"""WORKERS > 1: uvicorn worker processes on one port, each accepting on a socket of its own.

uvicorn's own way (``uvicorn.run(workers=N)``) hands every worker the same listening socket,
and asyncio accepts every connection that is waiting when its loop wakes (up to the backlog):
connections that arrive together (a load balancer's pool opening, a benchmark's clients) all
land on the worker that woke first, and stay there while they are kept alive. With a socket
per worker, bound with SO_REUSEPORT, the kernel spreads new connections over the sockets by
their addresses instead, whichever worker is awake.
"""

import logging
import socket
import sys
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Multiprocess, Process

logger = logging.getLogger("uvicorn.error")


def listening_sockets(config: uvicorn.Config, count: int) -> list[socket.socket]:
    """``count`` TCP sockets bound to the configured host and port with SO_REUSEPORT (port 0:
    the port the first one got), each with TCP_NODELAY, which accepted sockets inherit: a
    keep-alive client would otherwise wait for delayed ACKs (about 40 ms an answer).

    The port is first bound once without SO_REUSEPORT: a server already on it (another
    ``serve`` with the same option would otherwise join it and take a share of its
    connections) makes that bind fail, as it does for one worker."""
    family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((config.host, config.port))
        port = probe.getsockname()[1]
    sockets = list[socket.socket]()
    try:
        for _ in range(count):
            sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind((config.host, port))
            sock.set_inheritable(True)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class Supervisor(Multiprocess):
    """uvicorn's supervisor (signals, health checks, restarts, SIGHUP's rolling restart), with
    worker ``i`` on ``sockets[i]`` and its replacement on the same one: the kernel keeps
    hashing connections to a socket whether or not a worker accepts on it, so no socket may
    be left without its worker."""

    def _start(self, index: int) -> Process:
        process = Process(self.config, [self.sockets[index]])
        process.start()
        return process

    def init_processes(self) -> None:
        self.processes = [self._start(index) for index in range(len(self.sockets))]

    def restart_all(self) -> None:
        # As uvicorn's: each replacement serves before the worker it replaces is retired.
        for index, old in enumerate(self.processes):
            if self.should_exit.is_set():
                return
            new = self._start(index)
            if not new.wait_until_ready(self.config.timeout_worker_healthcheck, self.should_exit):
                new.kill()
                new.join()
                if not self.should_exit.is_set():
                    logger.error(
                        f"New child process [{new.pid}] was not ready in time; "
                        f"keeping worker [{old.pid}] and aborting the restart."
                    )
                return
            old.terminate()
            old.join()
            self.processes[index] = new

    def handle_ttin(self) -> None:
        # uvicorn's starts one more worker on every socket, which the slot loops below have no
        # socket for; its SIGTTOU retires the last worker and leaves that socket unserved.
        logger.info("Received SIGTTIN: one worker a socket, set by WORKERS; ignored.")

    def handle_ttou(self) -> None:
        logger.info("Received SIGTTOU: one worker a socket, set by WORKERS; ignored.")

    def keep_subprocess_alive(self) -> None:
        if self.should_exit.is_set():
            return
        for index, process in enumerate(self.processes):
            if process.is_alive(timeout=self.config.timeout_worker_healthcheck):
                continue
            process.kill()  # hung: kill it
            process.join()
            if process.exitcode == STARTUP_FAILURE:
                # The app or its settings are broken: every restart would fail alike.
                logger.error(f"Child process [{process.pid}] failed to start, stopping.")
                self.should_exit.set()
                return
            if self.should_exit.is_set():
                return
            logger.info(f"Child process [{process.pid}] died")
            self.processes[index] = self._start(index)


def serve_workers(
    workers: int, options: dict[str, Any], app: str = "service.app:create_app", factory: bool = True
) -> None:
    """``workers`` uvicorn worker processes, each importing ``app`` (create_app reads the same
    environment in each; bench/bare.py passes the bare app, so that its workers start the same
    way), each on its own socket of the one port."""
    config = uvicorn.Config(app, factory=factory, workers=workers, **options)
    try:
        sockets = listening_sockets(config, workers)
    except OSError as exc:  # as uvicorn answers a port it cannot bind
        logger.error(exc)
        sys.exit(STARTUP_FAILURE)
    Supervisor(config, sockets).run()
