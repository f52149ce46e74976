"""Durations as commands take them: ``30m``, ``24h``, ``7d``, ``2w`` (one home for every option)."""

import re
from datetime import timedelta

from evallens.errors import EvallensError

UNIT_MINUTES = {"m": 1, "h": 60, "d": 24 * 60, "w": 7 * 24 * 60}
EXAMPLES = {"m": "30m", "h": "24h", "d": "7d", "w": "2w"}
MAX_DAYS = 100 * 366  # beyond any data kept; and timedelta overflows past 999,999,999 days


class InvalidDuration(EvallensError):
    """A duration option that is not a whole number followed by one of its units."""


def parse_duration(value: str, *, option: str, units: str = "mhdw", allow_zero: bool = False) -> timedelta:
    """``value`` (e.g. ``7d``) as a timedelta, in the ``units`` the option accepts (of m, h, d, w)."""
    match = re.fullmatch(rf"\s*(\d+)\s*([{units}])\s*", value.lower())
    if match is None or (int(match[1]) == 0 and not allow_zero):
        examples = [EXAMPLES[unit] for unit in units]
        shown = ", ".join(examples[:-1]) + f" or {examples[-1]}" if len(examples) > 1 else examples[0]
        raise InvalidDuration(f"{option} {value!r}: give a duration such as {shown}")
    minutes = int(match[1]) * UNIT_MINUTES[match[2]]
    if minutes > MAX_DAYS * UNIT_MINUTES["d"]:
        raise InvalidDuration(f"{option} {value!r}: at most {MAX_DAYS} days")
    return timedelta(minutes=minutes)
