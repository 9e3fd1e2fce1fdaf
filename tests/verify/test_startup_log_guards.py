"""The parser's text guards (startup_log._NEEDS) only skip searches that cannot match: every
collected log, shuffled and in other cases, parses the same with the guards as without."""

import json
import random
import re
from pathlib import Path

import msgspec
import pytest

from service.sizing.errors import SizingError
from service.verify import startup_log

LOGS = sorted(
    (Path(__file__).resolve().parents[2] / "service" / "accuracy" / "cases" / "vllm_logs").glob(
        "*.json"
    )
)


def texts() -> list[str]:
    base = ["\n".join(json.loads(p.read_text(encoding="utf-8"))["log_lines"]) for p in LOGS]
    rnd = random.Random(20)
    out = []
    for text in base:
        lines = text.splitlines()
        rnd.shuffle(lines)
        # re.IGNORECASE matches the Kelvin sign for k and the long s for s: so must the guard.
        odd = text.replace("k", "\u212a").replace("s", "\u017f")
        # Other line breaks (str.splitlines's), and a first line whose "ß" casefolds to "ss",
        # so that no offset means the same in the casefolded text.
        crlf, seps = text.replace("\n", "\r\n"), text.replace("\n", "\u2028")
        out += [text, "\n".join(lines), text.upper(), text.lower(), odd, crlf, seps]
        out.append("Straße\n" + text + "\n")
    return out


def parsed(text: str) -> bytes:
    try:
        return msgspec.json.encode(startup_log.parse_startup_log(text))
    except SizingError as exc:
        return str(exc).encode()


def test_the_guards_change_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = texts()
    guarded = [parsed(t) for t in corpus]
    every = {f"{g}:{name}" for g, patterns in startup_log._GROUPS for name in patterns}

    def all_candidates(text: str) -> dict[int, set[str]]:
        # Every line (by its start), every pattern: the old way.
        starts = [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]
        return dict.fromkeys(starts, every)

    monkeypatch.setattr(startup_log, "_candidates", all_candidates)
    assert [parsed(t) for t in corpus] == guarded
    assert len(LOGS) > 100  # the collected cases, all of them


def test_every_pattern_has_a_guard_and_a_line_holds_its_candidates() -> None:
    names = {name for _, patterns in startup_log._GROUPS for name in patterns}
    assert names == set(startup_log._NEEDS)
    lines = ["INFO Model loading took 15.0 GiB", "nothing here", "GPU KV cache size: 9 tokens"]
    found = startup_log._candidates("\n".join(lines))
    # By the offset each line starts at: 0, then 32 + 1 and 12 + 1 characters on (46).
    assert set(found) == {0, 46}  # the middle line holds no needed text: never searched
    assert "p:weights" in found[0] and "p:kv_tokens" in found[46]
    assert "p:kv_tokens" not in found[0]


def test_each_guard_is_text_its_pattern_spells_out() -> None:
    """A guard is a fixed text of every pattern of its name (a typo would skip lines that
    match); [-_] in a flag stands for either."""
    for group, patterns in startup_log._GROUPS:
        guards = startup_log._FLAG_NEEDS if group == "f" else startup_log._NEEDS
        for name, pattern in patterns.items():
            needs = guards.get(name)
            if needs is None:
                assert group == "f", name  # a flag: the dash-and-letter mark below
                continue
            source = pattern.pattern.replace("\\", "")
            spelled = [source, source.replace("[-_]", "-"), source.replace("[-_]", "_")]
            if pattern.flags & re.IGNORECASE:
                spelled = [s.casefold() for s in spelled]
                needs = tuple(n.casefold() for n in needs)
            assert any(n.strip() in s for n in needs for s in spelled), (name, pattern.pattern)


def test_every_other_flag_holds_the_mark() -> None:
    """What _FLAG_MARK relies on: each alternative of each flag pattern is "--" and a letter,
    or a short form -tp, -pp, -q that the pattern follows with "=" or a space."""
    for name, pattern in startup_log._FLAGS.items():
        if name in startup_log._FLAG_NEEDS:
            continue
        source = pattern.pattern.removeprefix(r"(?<!\S)")
        if source.startswith("(?:"):
            group_end = source.index(")")
            alternatives = source[3:group_end].split("|")
            after = source[group_end + 1 :]
        else:
            alternatives, after = [source], ""
        for alternative in alternatives:
            if alternative.startswith("--"):
                assert re.match(r"--[a-z]", alternative), (name, alternative)
            else:
                assert alternative in ("-tp", "-pp", "-q") and after.startswith("[= ]"), name
            for sep in "= ":
                sample = alternative.replace("[-_]", "-") + sep
                assert startup_log._FLAG_MARK.search(sample), (name, sample)
