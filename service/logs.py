"""JSON logs: every line one JSON object on stdout (configure_logging), and the request's own
line, cheap enough to write on every request (log_request, called by RequestMiddleware in
service/observability.py)."""

import logging
import os
import sys
import threading
import time
from typing import Any

import msgspec
import structlog

request_log = logging.getLogger("service.request")


def configure_logging(level: str) -> None:
    """Every log line as one JSON object on stdout: structlog's and the standard library's
    (uvicorn, SQLAlchemy, alembic) alike. Safe to call again (tests build many apps)."""
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
    ]
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = _JsonFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(serializer=_dumps),
        ],
    )
    root = logging.getLogger()
    for handler in list(root.handlers):
        # Ours from an earlier call, and plain console handlers (alembic.ini's fileConfig
        # installs one when `serve` migrates first); handler subclasses (pytest's) stay.
        if getattr(handler, "planner_json", False) or type(handler) is logging.StreamHandler:
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(formatter)
    handler.planner_json = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level.upper())


def _dumps(event: dict[str, Any], **_: Any) -> str:
    """One JSON object (msgspec: compact, several times faster than json.dumps); a value JSON
    cannot hold is written as its repr, like structlog's own fallback."""
    return msgspec.json.encode(event, enc_hook=repr).decode()


class _JsonFormatter(structlog.stdlib.ProcessorFormatter):
    """structlog's formatter, with a short way for the request lines (``log_request``): their
    event dict is complete already, so it is written as it is, without copying the record."""

    def format(self, record: logging.LogRecord) -> str:
        if getattr(record, "planner_request", False):
            return _dumps(record.msg)  # type: ignore[arg-type]
        return super().format(record)


_second: tuple[int, str] = (-1, "")
"""The last whole second a request line was stamped in, and its ISO text (replaced whole, so
a reader in another thread never sees one without the other)."""


def _utc_now_iso() -> str:
    """structlog's TimeStamper(fmt="iso", utc=True), as the other log lines carry it: what
    ``datetime.now(tz=UTC).isoformat()`` writes (microseconds floored, left out when zero),
    with "Z" for "+00:00"; the date and time of day formatted once per second."""
    global _second
    seconds, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
    stamped = _second
    if seconds != stamped[0]:
        stamped = _second = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)))
    microseconds = nanoseconds // 1000
    return f"{stamped[1]}.{microseconds:06d}Z" if microseconds else f"{stamped[1]}Z"


def log_request(level: int, fields: dict[str, Any]) -> None:
    """The request's JSON line: the keys structlog's chain adds (logger, level, ts), built
    here once. One LogRecord, without structlog's processors or a caller lookup per request;
    handlers (pytest's caplog too) see the event dict as the record's ``msg``, as before."""
    if not request_log.isEnabledFor(level):
        return
    fields["logger"] = request_log.name
    fields["level"] = "warning" if level == logging.WARNING else "info"
    fields["ts"] = _utc_now_iso()
    handler = _only_handler(level)
    if handler is not None:  # what the record would come to: the same line, written directly
        try:
            line = _dumps(fields) + handler.terminator
            with handler.lock:  # type: ignore[union-attr]
                handler.stream.write(line)
                handler.stream.flush()
            return
        except Exception:
            pass
    record = logging.LogRecord.__new__(logging.LogRecord)
    record.__dict__.update(_record_template(level))
    record.msg = fields
    record.created = now = time.time()
    record.msecs = int(now * 1000) % 1000
    record.relativeCreated = (now - logging._startTime) * 1000  # type: ignore[attr-defined]
    request_log.handle(record)


def _only_handler(level: int) -> "logging.StreamHandler[Any] | None":
    """configure_logging's handler when a request record would reach it alone, unfiltered (no
    other handler anywhere on its way, as pytest's caplog adds): then the line can be written
    without the record; else None."""
    if request_log.handlers or request_log.filters or not request_log.propagate:
        return None
    root = logging.getLogger()
    if root.filters or len(root.handlers) != 1:
        return None
    handler = root.handlers[0]
    if not getattr(handler, "planner_json", False) or handler.filters or level < handler.level:
        return None
    return handler  # type: ignore[return-value]


_TEMPLATES: dict[tuple[int, int, int], dict[str, Any]] = {}


def _record_template(level: int) -> dict[str, Any]:
    """A LogRecord's attributes that do not change between requests of one process and thread
    (LogRecord() looks the thread, process and their names up again for every record)."""
    key = (level, os.getpid(), threading.get_ident())
    template = _TEMPLATES.get(key)
    if template is None:
        made = logging.LogRecord(request_log.name, level, "", 0, "", None, None)
        made.planner_request = True
        template = _TEMPLATES[key] = dict(made.__dict__)
    return template
