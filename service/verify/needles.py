"""Which lines of a text hold which fixed texts: one str.find pass over the whole text per
anchor (C speed), instead of a regex search of every line per pattern. The log parser
(service.verify.startup_log) searches a line only with the patterns whose needed text it holds.

Each pass costs a scan of the whole text (about 10 us for a 33,000-character paste), whatever
the text: texts that share an anchor (a substring of each, e.g. "memory" in eight of them) are
found with one pass, and each line the anchor is on is then checked for the texts themselves.
"""

import re
from collections.abc import Iterable

Needle = tuple[str, bool, tuple[tuple[str, frozenset[str]], ...]]
"""(anchor, compared casefolded, (text holding the anchor, the keys it stands for) each)."""


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
    lines: list[str],
    wanted: list[Needle],
    marks: Iterable[tuple[re.Pattern[str], frozenset[str]]] = (),
) -> dict[int, set[str]]:
    """Each line index that holds a needle's text: the keys of those needles. Casefolded texts
    are looked for in the casefolded text (casefold maps each character alone and never makes
    or removes a line break, so the line indices agree). ``marks``: a pattern (that matches no
    line break) whose every match marks its line with the keys."""
    joined = "\n".join(lines)
    folded: str | None = None
    found: dict[int, set[str]] = {}
    for mark, keys in marks:
        index = counted = 0
        for match in mark.finditer(joined):
            index += joined.count("\n", counted, match.start())
            counted = match.start()
            found.setdefault(index, set()).update(keys)
    for anchor, caseless, texts in wanted:
        if caseless and folded is None:
            folded = joined.casefold()
        hay = folded if caseless and folded is not None else joined
        alone = texts[0][1] if len(texts) == 1 and texts[0][0] == anchor else None
        index = counted = 0  # the line index at offset ``counted``
        at = hay.find(anchor)
        while at >= 0:
            index += hay.count("\n", counted, at)
            end = hay.find("\n", at)
            if alone is not None:
                found.setdefault(index, set()).update(alone)
            else:
                line = hay[hay.rfind("\n", 0, at) + 1 : end if end >= 0 else len(hay)]
                for text, keys in texts:
                    if text in line:
                        found.setdefault(index, set()).update(keys)
            if end < 0:
                break
            index, counted = index + 1, end + 1  # on at the next line
            at = hay.find(anchor, counted)
    return found
