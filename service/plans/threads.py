"""CPU-bound computations in worker threads, so the event loop keeps answering meanwhile.

A matrix, a ranked plan or a parsed start-up log is pure Python that can take seconds; on the
loop it would hold up every other request (/healthz, /readyz, a Slack command that must answer
within 3 s). Callers look their rows up on the loop (the database session belongs to it) and
hand the resolved specs to ``off_loop``. At most COMPUTE_THREADS run at once per event loop;
the rest wait on the loop without blocking it.
"""

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from anyio.lowlevel import RunVar

COMPUTE_THREADS = 4
"""Python holds one core for pure computation (the GIL): more threads add queueing, not speed."""

P = ParamSpec("P")
T = TypeVar("T")
_limiter: RunVar[CapacityLimiter] = RunVar("compute_limiter")


def compute_limiter() -> CapacityLimiter:
    """This event loop's limiter (a limiter belongs to the loop that made it)."""
    try:
        return _limiter.get()
    except LookupError:
        limiter = CapacityLimiter(COMPUTE_THREADS)
        _limiter.set(limiter)
        return limiter


async def off_loop(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` in a worker thread; its exceptions are raised here."""
    return await anyio.to_thread.run_sync(
        functools.partial(fn, *args, **kwargs), limiter=compute_limiter()
    )
