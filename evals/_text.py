"""Text a file can spell but no UTF-8 encoder can write: a lone UTF-16 surrogate."""

import sys
from typing import Any

from evallens.telemetry.messages import holds_surrogate, string_path

SURROGATE_PROBLEM = "holds a lone UTF-16 surrogate (an escape such as \\ud800 without its pair), not text"


def surrogate_path(value: Any) -> str | None:
    """Where the first string in ``value`` holds a lone surrogate (``string_path``)."""
    return string_path(value, holds_surrogate)


def number_too_long() -> str:
    """Why ``json.loads`` or YAML refused an integer: Python reads at most this many digits."""
    return f"a number longer than {sys.get_int_max_str_digits()} digits"
