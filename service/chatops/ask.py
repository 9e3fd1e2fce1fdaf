"""python -m service slack-ask TEXT: post a slash command to a running service, signed as Slack
signs it, and print the answer; the way to try the chat bot without a Slack workspace.

The signing secret is the server's own, ``SLACK_SIGNING_SECRET`` from the environment (never an
argument: it would land in the shell history). The form carries a fresh random ``trigger_id``
as Slack's does, so asking the same thing twice in one second is two requests, not a replay.
``--curl`` prints the signed request as a curl command line instead of sending it.
"""

import argparse
import sys
import time

from service.settings import Settings

# secrets, shlex, urllib.parse, the signature (hashlib) and httpx are imported where used:
# python -m service builds this command's parser for every command it runs.

FORM = "application/x-www-form-urlencoded"
PATH = "/chatops/slack"


def slash_body(text: str, command: str = "/gpu") -> bytes:
    """The form Slack posts for ``/gpu TEXT`` (the fields the service reads, and a trigger id)."""
    import secrets
    import urllib.parse

    fields = {
        "command": command,
        "text": text,
        "user_name": "slack-ask",
        "trigger_id": secrets.token_hex(8),
    }
    return urllib.parse.urlencode(fields).encode()


def signed_headers(secret: str, body: bytes, now: float | None = None) -> dict[str, str]:
    from service.chatops.signature import sign

    timestamp = str(int(time.time() if now is None else now))
    return {
        "Content-Type": FORM,
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": sign(secret, timestamp, body),
    }


def curl_line(url: str, headers: dict[str, str], body: bytes) -> str:
    import shlex

    parts = ["curl", "-s", "-X", "POST", url.rstrip("/") + PATH]
    for name, value in headers.items():
        parts += ["-H", f"{name}: {value}"]
    parts += ["--data-binary", body.decode()]
    return shlex.join(parts)


def add_command(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    ask = commands.add_parser(
        "slack-ask",
        help="sign a chat command with SLACK_SIGNING_SECRET, post it, print Slack's answer",
    )
    ask.add_argument("text", nargs="+", help='the command, e.g. "plan llama-3.1-8b on h100"')
    ask.add_argument("--url", default="http://127.0.0.1:8000", help="the running service")
    ask.add_argument("--curl", action="store_true", help="print a curl line instead of sending")


def run(args: argparse.Namespace) -> int:
    """0: answered (200); 1: the service refused or did not answer; 2: no secret set."""
    import httpx  # here: every other command of python -m service starts without it

    secret = Settings.from_env().slack_signing_secret
    if not secret:
        print("error: set SLACK_SIGNING_SECRET to the server's signing secret", file=sys.stderr)
        return 2
    body = slash_body(" ".join(args.text))
    headers = signed_headers(secret, body)
    if args.curl:
        print(curl_line(args.url, headers, body))
        return 0
    try:
        response = httpx.post(args.url.rstrip("/") + PATH, content=body, headers=headers)
    except httpx.HTTPError as exc:
        print(f"error: {args.url} did not answer: {exc}", file=sys.stderr)
        return 1
    print(response.text)
    return 0 if response.status_code == 200 else 1
