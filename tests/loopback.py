"""A real server for tests: the app under uvicorn on a free loopback port, in a thread."""

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from service.app import create_app
from service.settings import Settings


@contextmanager
def served(settings: Settings) -> Iterator[str]:
    """The app for ``settings`` serving on 127.0.0.1; yields its base URL, stops it after."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        threading.Event().wait(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
