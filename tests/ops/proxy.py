"""A loopback TCP proxy between the app and PostgreSQL, to cut and restore the database
connection without touching the (shared) server: ``cut()`` closes the listening socket and
aborts every open connection (the app sees a dead database), ``restore()`` listens again on
the same port (the database is back). ``freeze()`` is a partition: connections stay open and
nothing fails, but no byte goes through either way and a new connection hangs after its TCP
handshake; ``thaw()`` lets the held bytes go on, as TCP's retransmission would."""

import asyncio
import threading
from concurrent.futures import Future
from typing import Any


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self.connections = 0
        self._thawed = asyncio.Event()
        self._thawed.set()

    def _call(self, coroutine: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout=10)

    def start(self) -> int:
        self._thread.start()
        self._call(self._listen())
        return self.port

    def cut(self) -> None:
        self._call(self._cut())

    def restore(self) -> None:
        self._call(self._listen())

    def freeze(self) -> None:
        self._call(self._set_thawed(False))

    def thaw(self) -> None:
        self._call(self._set_thawed(True))

    def stop(self) -> None:
        self._call(self._set_thawed(True))
        self._call(self._cut())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _set_thawed(self, thawed: bool) -> None:
        if thawed:
            self._thawed.set()
        else:
            self._thawed.clear()

    async def _cut(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self._thawed.wait()  # frozen: the client's connect succeeded, nothing answers
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.connections += 1
        self._open |= {writer, upstream_writer}

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    await self._thawed.wait()  # frozen: hold the bytes, answer nothing
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.transport.abort()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
        self._open -= {writer, upstream_writer}
