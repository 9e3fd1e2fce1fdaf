"""Slack's request signature (v0): HMAC-SHA256 over ``v0:{timestamp}:{raw body}``.

The header ``X-Slack-Signature`` is ``v0=`` + the hex digest, keyed with the app's signing
secret; ``X-Slack-Request-Timestamp`` must be within five minutes of now (replays of an old
request fail). The comparison runs in constant time.
"""

import hashlib
import hmac

MAX_SKEW_S = 300
VERSION = "v0"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature Slack sends for ``body`` at ``timestamp``."""
    base = f"{VERSION}:{timestamp}:".encode() + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return f"{VERSION}={digest}"


def check(
    secret: str, timestamp: str | None, signature: str | None, body: bytes, now: float
) -> str | None:
    """None when the request is Slack's; otherwise why not (for the 401's detail)."""
    if not timestamp or not signature:
        return "X-Slack-Request-Timestamp and X-Slack-Signature are required"
    try:
        sent = int(timestamp)
    except ValueError:
        return "X-Slack-Request-Timestamp must be whole seconds since the epoch"
    if abs(now - sent) > MAX_SKEW_S:
        return f"the request timestamp is more than {MAX_SKEW_S} seconds from now (stale)"
    expected = sign(secret, timestamp, body)
    if not hmac.compare_digest(expected.encode(), signature.strip().encode()):
        return "the signature does not match the body"
    return None
