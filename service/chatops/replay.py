"""Slack replays inside the signature's 5-minute window: refused; Slack's own retries: answered
once.

A valid signature proves who sent a request, not that it is new: without this, a captured
request could be sent again and again until its timestamp turns stale. So every accepted
signature is remembered until its timestamp leaves the window (``timestamp + MAX_SKEW_S``;
after that ``signature.check`` refuses it as stale anyway, so the entry can go). The same
signature again is a replay and is refused, unless it carries ``X-Slack-Retry-Num``: Slack
retries a request it got no answer to in time, and a retry gets the answer the first attempt
got (awaited if that one is still running), never a second computation. A retry Slack signs
anew (a new timestamp, the same body) finds that answer by the body's digest.

The retry header is not signed, so a replay that adds it gets the stored answer again and
nothing runs a second time; the commands are read-only, so that reveals nothing new.

Bounded: at most ``max_entries`` signatures are kept (only requests that passed the signature
check get in, so filling it takes the signing secret); past that the oldest is forgotten, and a
replay of that one would be accepted once more.

Per replica, in process: nothing is shared between pods (chat keeps answering from each pod's
catalogue cache while the database is down, and this keeps that). With N replicas behind a
load balancer a replayed request may land on a pod that has not seen it and be answered there:
at most once per pod in the window, N times in all rather than without limit; and a Slack retry
that lands on another pod is computed there again (the same read-only answer).
"""

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from service.chatops.signature import MAX_SKEW_S
from service.chatops.slack import SlackMessage

MAX_ENTRIES = 10_000
"""About 33 accepted commands a second for 5 minutes, per replica: far above one workspace's."""

Verdict = Literal["fresh", "replay", "retry"]


@dataclass
class _Entry:
    signature: str
    expires_at: float
    digest: bytes
    message: SlackMessage | None = None
    """The answer once there is one (read without the event loop that made it)."""
    answer: "asyncio.Future[SlackMessage]" = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


@dataclass(frozen=True)
class Claim:
    """What to do with a signed request: compute (``fresh``), refuse (``replay``), or answer
    what the first attempt answered (``retry``)."""

    verdict: Verdict
    entry: _Entry | None = None

    async def stored(self) -> SlackMessage | None:
        """The first attempt's answer (None when it failed: then compute it here)."""
        assert self.entry is not None
        if self.entry.message is not None:
            return self.entry.message
        try:  # the first attempt is still computing: wait for its answer
            return await asyncio.shield(self.entry.answer)
        except Exception:  # the first attempt failed; its error was answered there
            return None


class ReplayGuard:
    """The signatures accepted in the last ``window_s`` and their answers; ``clock`` is
    injectable (tests move it instead of sleeping)."""

    def __init__(
        self,
        *,
        window_s: float = MAX_SKEW_S,
        max_entries: int = MAX_ENTRIES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.window_s = window_s
        self.max_entries = max_entries
        self.clock = clock
        self._by_signature: OrderedDict[str, _Entry] = OrderedDict()
        self._by_digest: dict[bytes, str] = {}

    def __len__(self) -> int:
        return len(self._by_signature)

    def claim(self, timestamp: str, signature: str, body: bytes, *, retry: bool) -> Claim:
        """Call once the signature checked out (``timestamp`` is then whole seconds)."""
        self._expire()
        digest = hashlib.sha256(body).digest()
        entry = self._by_signature.get(signature.strip())
        if entry is None and retry and digest in self._by_digest:  # re-signed by Slack
            entry = self._by_signature[self._by_digest[digest]]
        if entry is not None:
            return Claim("retry", entry) if retry else Claim("replay")
        while len(self._by_signature) >= self.max_entries:
            self._forget(next(iter(self._by_signature)))
        entry = _Entry(signature.strip(), int(timestamp) + self.window_s, digest)
        self._by_signature[entry.signature] = entry
        self._by_digest[digest] = entry.signature
        return Claim("fresh", entry)

    def answered(self, claim: Claim, answer: SlackMessage) -> None:
        assert claim.entry is not None
        claim.entry.message = answer
        claim.entry.answer.set_result(answer)

    def failed(self, claim: Claim, error: BaseException) -> None:
        """The first attempt raised: forget it, so Slack's retry is computed afresh."""
        assert claim.entry is not None
        if self._by_signature.get(claim.entry.signature) is claim.entry:
            self._forget(claim.entry.signature)
        if not claim.entry.answer.done():
            claim.entry.answer.set_exception(error)
            claim.entry.answer.exception()  # retrieved: no "never retrieved" warning

    def _expire(self) -> None:
        """Drop the oldest entries whose timestamps left the window (entries arrive nearly in
        timestamp order; one that does not waits behind a younger one, still bounded)."""
        now = self.clock()
        while self._by_signature:
            oldest = next(iter(self._by_signature.values()))
            if oldest.expires_at >= now:
                break
            self._forget(oldest.signature)

    def _forget(self, signature: str) -> None:
        entry = self._by_signature.pop(signature)
        if self._by_digest.get(entry.digest) == signature:
            del self._by_digest[entry.digest]
