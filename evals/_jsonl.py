"""The lines of a JSON Lines file: only a line feed, a carriage return or both end a line."""

import re
from collections.abc import Iterator

# str.splitlines() also ends lines at U+2028, U+2029, NEL and the like, which JSON keeps raw inside
# strings (json.dumps(..., ensure_ascii=False) writes them as they are): a valid row would be cut in two.
_LINE_END = re.compile(r"\r\n|\r|\n")


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """Each line of ``text`` with its number, counted from 1."""
    yield from enumerate(_LINE_END.split(text), start=1)
