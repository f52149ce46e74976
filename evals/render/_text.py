"""Text from set files, label files and answers placed in Markdown: shown as written, on one line."""

import re

LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")
MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
BACKTICK_RUNS = re.compile(r"`+")


def one_line(text: str) -> str:
    """Line breaks (which would end a table row or a list item) as single spaces."""
    return LINE_BREAKS.sub(" ", text)


def cell(text: str) -> str:
    """A name (a scenario) in a table cell: on one line, its ``|`` escaped so it ends no cell."""
    return one_line(text).replace("|", "\\|")


def literal(text: str) -> str:
    """On one line, every Markdown punctuation character escaped: no link, emphasis, cell border
    (``|``) or HTML comes from the text."""
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", one_line(text))


def code(text: str) -> str:
    """An inline code span holding ``text`` on one line, whatever backticks it holds (CommonMark: a
    longer run of backticks opens and closes it)."""
    flat = one_line(text)
    fence = "`" * (max((len(run) for run in BACKTICK_RUNS.findall(flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"
