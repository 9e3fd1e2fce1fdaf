"""The examples the guides show, read back out of their markdown so a test can run them.

An example is a `$ ` command line in a fenced block (continued by a trailing backslash) and the
lines after it up to the next command: what the command printed. Two kinds are run:

- `curl` against the local server (`localhost:8000` or `http://127.0.0.1:8000`), optionally
  piped into `jq` with the small part of jq's language the guides use (paths, `[]`, object and
  array construction, `,` and string `+`);
- the CLI, `.venv/bin/python -m service ...`, optionally piped into `head -N` or `tail -N`.

Anything else (keys held in shell variables, `$(...)`) is shown but not run, and so is a block
whose preceding line is `<!-- not run: why -->` (an answer that needs an admin's import first,
or ids and times that vary); the tests say how many of each guide's examples run.
"""

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FENCE = re.compile(r"^( *)```[\w-]*\n(.*?)^\1```$", re.M | re.S)
NOT_RUN = "<!-- not run:"  # on the line before a block: shown, not run, and why
LOCAL = re.compile(r"(?:https?://)?(?:localhost|127\.0\.0\.1):8000")


@dataclass(frozen=True)
class Example:
    guide: Path
    line: int
    command: str
    output: str

    @property
    def id(self) -> str:
        return f"{self.guide.name}:{self.line}"


def examples(guide: Path) -> list[Example]:
    text = guide.read_text(encoding="utf-8")
    found: list[Example] = []
    for block in FENCE.finditer(text):
        before = text[: block.start()].rstrip().rsplit("\n", 1)[-1]
        if before.startswith(NOT_RUN):
            continue
        first = text.count("\n", 0, block.start(2)) + 1
        indent = len(block.group(1))
        lines = [line[indent:] for line in block.group(2).splitlines()]
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                i += 1
                continue
            start = i
            command = lines[i][2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1].rstrip() + " " + lines[i].strip()
            i += 1
            out_start = i
            while i < len(lines) and not lines[i].startswith("$ "):
                i += 1
            output = "\n".join(lines[out_start:i]).rstrip("\n")
            if not command.startswith("#"):
                found.append(Example(guide, first + start, command, output))
    return found


def runnable(example: Example) -> str | None:
    """'curl' or 'cli' when a test can run the example as written, else None."""
    command = example.command
    if "$" in command or "`" in command or not example.output:
        return None
    if command.startswith("curl ") and LOCAL.search(command):
        return "curl"
    if command.startswith(".venv/bin/python -m service "):
        return "cli"
    return None


def pipeline(command: str) -> list[list[str]]:
    words = shlex.split(command)
    stages: list[list[str]] = [[]]
    for word in words:
        if word == "|":
            stages.append([])
        else:
            stages[-1].append(word)
    return stages


@dataclass(frozen=True)
class Curl:
    method: str
    path: str
    headers: dict[str, str]
    body: str | None


def parse_curl(words: list[str]) -> Curl:
    method, headers, body, url = "GET", {}, None, ""
    it = iter(words[1:])
    for word in it:
        if word == "-s":
            continue
        if word == "-X":
            method = next(it)
        elif word == "-H":
            name, value = next(it).split(":", 1)
            headers[name.strip()] = value.strip()
        elif word in ("-d", "--data"):
            body = next(it)
            method = "POST" if method == "GET" else method
        elif word.startswith("-"):
            raise ValueError(f"curl option {word} is not understood here")
        else:
            url = word
    return Curl(method, LOCAL.sub("", url) or "/", headers, body)


# A small jq: enough for the filters the guides show.


class _Jq:
    def __init__(self, text: str) -> None:
        self.tokens: list[str] = re.findall(
            r'"(?:[^"\\]|\\.)*"|\.\w*|\[\]|\d+|[{}\[\](),:+]|\w+', text
        )
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.tokens[self.pos]
        if expected is not None and token != expected:
            raise ValueError(f"jq: expected {expected}, got {token}")
        self.pos += 1
        return token

    def comma(self, value: Any) -> list[Any]:
        out = self.plus(value)
        while self.peek() == ",":
            self.take(",")
            out += self.plus(value)
        return out

    def plus(self, value: Any) -> list[Any]:
        out = self.primary(value)
        while self.peek() == "+":
            self.take("+")
            right = self.primary(value)
            out = [a + b for a in out for b in right]
        return out

    def primary(self, value: Any) -> list[Any]:
        token = self.peek()
        if token is None:
            raise ValueError("jq: unexpected end")
        if token.startswith('"'):
            self.take()
            return [json.loads(token)]
        if token == "{":
            return [self.obj(value)]
        if token == "[":
            self.take("[")
            items = self.comma(value)
            self.take("]")
            return [items]
        if token.startswith("."):
            return self.path([value])
        raise ValueError(f"jq: {token} is not understood here")

    def path(self, values: list[Any]) -> list[Any]:
        while (token := self.peek()) is not None:
            if token.startswith(".") and token != ".":
                self.take()
                values = [v[token[1:]] for v in values]
            elif token == ".":
                self.take()
            elif token == "[]":
                self.take()
                values = [item for v in values for item in v]
            elif token == "[" and self.pos > 0 and self.tokens[self.pos - 1].startswith((".", "]")):
                self.take("[")
                index = int(self.take())
                self.take("]")
                values = [v[index] for v in values]
            else:
                break
        return values

    def obj(self, value: Any) -> dict[str, Any]:
        self.take("{")
        out: dict[str, Any] = {}
        while self.peek() != "}":
            key = self.take()
            if self.peek() == ":":
                self.take(":")
                (out[key],) = self.plus(value)
            else:
                out[key] = value[key]
            if self.peek() == ",":
                self.take(",")
        self.take("}")
        return out


def jq(filter_text: str, value: Any) -> list[Any]:
    parser = _Jq(filter_text)
    out = parser.comma(value)
    if parser.peek() is not None:
        raise ValueError(f"jq: {parser.peek()} is not understood here")
    return out


def examples_in(guides: list[Path]) -> Iterator[Example]:
    for guide in guides:
        yield from examples(guide)
