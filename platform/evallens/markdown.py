"""Text from traces, sets, runs and targets' configs placed in Markdown: shown as written, on one line.

The dashboard's pages and the eval engine's reports (gate.md, calibration.md) both quote such text.
"""

import re

__all__ = ["cell", "code", "literal", "one_line"]

LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")
# CommonMark shows any backslash-escaped ASCII punctuation as itself; Streamlit's formulas ($), colours
# and icons (:red[..], :material/..:) and GFM's tables and strikethrough all start with one.
MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
BACKTICK_RUNS = re.compile(r"`+")


def one_line(value: object) -> str:
    """``value`` as text with its line breaks (which would end a table row or a list item) as spaces."""
    return LINE_BREAKS.sub(" ", str(value))


def literal(value: object) -> str:
    """``value`` as Markdown that shows it as written, on one line: every punctuation character escaped,
    so no link, image, emphasis, heading, cell border, formula, colour or HTML comes from it."""
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", one_line(value))


def cell(value: object) -> str:
    """``value`` in a table cell, on one line, its ``|`` escaped so it ends no cell (other Markdown in
    it still renders)."""
    return one_line(value).replace("|", "\\|")


def code(value: object) -> str:
    """``value`` as a Markdown code span that shows it as written, on one line: a backtick in it ends no
    span early (CommonMark closes a span only at a backtick run as long as the one opening it)."""
    text = one_line(value)
    fence = "`" * (max(map(len, BACKTICK_RUNS.findall(text)), default=0) + 1)
    # CommonMark strips one space from each end of a span whose content starts and ends with one
    pad = " " if text[:1] == "`" or text[-1:] == "`" or (text[:1] == text[-1:] == " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
