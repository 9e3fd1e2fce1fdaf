"""Which lines of a text hold which fixed texts: one str.find pass over the whole text per
text (C speed), instead of a regex search of every line per pattern. The log parser
(service.verify.startup_log) searches a line only with the patterns whose needed text it holds.
"""

import re
from collections.abc import Iterable

Needle = tuple[str, bool, frozenset[str]]
"""(text, compared casefolded, the keys it stands for)."""


def needles(wanted: Iterable[tuple[str, bool, tuple[str, ...]]]) -> list[Needle]:
    """From (key, casefolded, texts the key needs, any one): each distinct text once, with the
    keys that need it (casefolded texts are stored casefolded)."""
    keys: dict[tuple[str, bool], set[str]] = {}
    for key, caseless, texts in wanted:
        for text in texts:
            keys.setdefault((text.casefold() if caseless else text, caseless), set()).add(key)
    return [(text, caseless, frozenset(k)) for (text, caseless), k in keys.items()]


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
    for text, caseless, keys in wanted:
        if caseless and folded is None:
            folded = joined.casefold()
        hay = folded if caseless and folded is not None else joined
        index = counted = 0  # the line index at offset ``counted``
        at = hay.find(text)
        while at >= 0:
            index += hay.count("\n", counted, at)
            found.setdefault(index, set()).update(keys)
            end = hay.find("\n", at)
            if end < 0:
                break
            index, counted = index + 1, end + 1  # on at the next line
            at = hay.find(text, counted)
    return found
