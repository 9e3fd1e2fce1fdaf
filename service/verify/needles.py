"""Which lines of a text hold which fixed texts: one str.find pass over the whole text per
anchor (C speed), instead of a regex search of every line per pattern. The log parser
(service.verify.startup_log) searches a line only with the patterns whose needed text it holds.

Each pass costs a scan of the whole text (about 10 us for a 33,000-character paste for a text
of several characters, 1-2 us for one character, found as memchr finds it): texts that share
an anchor (a substring of each, e.g. "z" in nine of them) are found with one pass, and each
line the anchor is on is then checked for the texts themselves. A hit's line is bounded by the
line breaks either side of it (two short searches from the hit), so no pass counts the line
breaks before it, which cost a second scan of the text per anchor.
"""

import re
from collections.abc import Iterable

Needle = tuple[str, bool, tuple[tuple[str, frozenset[str]], ...]]
"""(anchor, compared casefolded, (text holding the anchor, the keys it stands for) each)."""

_LINE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""What str.splitlines breaks a line at besides "\\n" ("\\r\\n" is one break)."""


def as_lines(text: str) -> str:
    """``text``'s lines (str.splitlines) joined by "\\n": ``text`` itself when it breaks its
    lines with "\\n" only (about 3 us to check, against 25 us to split and join again); a
    final line break is then kept, an empty last line, which no text is found on."""
    if any(c in text for c in _LINE_BREAKS):
        return "\n".join(text.splitlines())
    return text


def needles(
    wanted: Iterable[tuple[str, bool, tuple[str, ...]]], anchors: tuple[str, ...] = ()
) -> list[Needle]:
    """From (key, casefolded, texts the key needs, any one): each distinct text once, with the
    keys that need it (casefolded texts are stored casefolded), grouped under the first of
    ``anchors`` it holds (a text that holds none is its own anchor)."""
    keys: dict[tuple[str, bool], set[str]] = {}
    for key, caseless, texts in wanted:
        for text in texts:
            keys.setdefault((text.casefold() if caseless else text, caseless), set()).add(key)
    grouped: dict[tuple[str, bool], list[tuple[str, frozenset[str]]]] = {}
    for (text, caseless), k in keys.items():
        anchor = next((a for a in anchors if a in text), text)
        grouped.setdefault((anchor, caseless), []).append((text, frozenset(k)))
    return [(anchor, caseless, tuple(texts)) for (anchor, caseless), texts in grouped.items()]


def lines_holding(
    text: str,
    wanted: list[Needle],
    marks: Iterable[tuple[re.Pattern[str], frozenset[str]]] = (),
) -> dict[int, set[str]]:
    """Each line of ``text`` (lines broken by "\\n" only: see as_lines) that holds a needle's
    text, by the offset where the line starts: the keys of those needles. ``marks``: a
    pattern (that matches no line break) whose every match marks its line with the keys.

    Casefolded texts are looked for in the casefolded text. Casefolding maps each character
    alone and never makes or removes a line break; when it also keeps the length (every
    character to one, as always in ASCII) an offset means the same in both texts. Otherwise
    (a "ß" folds to "ss") the casefolded texts are looked for line by line."""
    found: dict[int, set[str]] = {}
    for mark, keys in marks:
        end = -1  # the line break that ends the last marked line
        for match in mark.finditer(text):
            at = match.start()
            if at > end:  # a new line (many marks on one long line: bounded once)
                start, end = _line_at(text, at)
                found.setdefault(start, set()).update(keys)
    folded: str | None = None
    for anchor, caseless, texts in wanted:
        hay = text
        if caseless:
            if folded is None:
                folded = text.casefold()
            if len(folded) != len(text):
                _fold_line_by_line(text, anchor, texts, found)
                continue
            hay = folded
        alone = texts[0][1] if len(texts) == 1 and texts[0][0] == anchor else None
        at = hay.find(anchor)
        while at >= 0:
            start, end = _line_at(hay, at)
            if alone is not None:
                found.setdefault(start, set()).update(alone)
            else:
                line = hay[start:end]
                for needed, keys in texts:
                    if needed in line:
                        found.setdefault(start, set()).update(keys)
            at = hay.find(anchor, end + 1)
    return found


def _line_at(text: str, at: int) -> tuple[int, int]:
    """The offsets where the line holding offset ``at`` starts and ends (its "\n", or the
    text's end)."""
    end = text.find("\n", at)
    return text.rfind("\n", 0, at) + 1, len(text) if end < 0 else end


def _fold_line_by_line(
    text: str,
    anchor: str,
    texts: tuple[tuple[str, frozenset[str]], ...],
    found: dict[int, set[str]],
) -> None:
    """lines_holding's casefolded texts where casefolding changes the text's length."""
    start = 0
    for line in text.split("\n"):
        folded = line.casefold()
        if anchor in folded:
            for needed, keys in texts:
                if needed in folded:
                    found.setdefault(start, set()).update(keys)
        start += len(line) + 1
