"""Text quoted in Markdown (dashboard pages, gate.md, calibration.md) renders as written, on one line."""

import pytest
from markdown_it import MarkdownIt

from evallens.markdown import cell, code, literal

# (text, what a reader sees): line breaks become one space, nothing else changes
HOSTILE = [
    (
        "a | b\n- c [link](http://x.test) *bold* $x$ :red[no] <b>html</b> # head",
        "a | b - c [link](http://x.test) *bold* $x$ :red[no] <b>html</b> # head",
    ),
    ("k`1\r\n  x", "k`1 x"),
    ("``", "``"),
    (" padded ", " padded "),
    ("`ends", "`ends"),
]


def _inline(markdown: str) -> list[tuple[str, str]]:
    """(type, content) of each inline piece of ``markdown`` between two words (so that nothing in it can
    start a block, a list or a heading, and its spaces are not the paragraph's to strip)."""
    [_, paragraph, _] = MarkdownIt("commonmark").parse(f"x {markdown} y")
    return [(child.type, child.content) for child in paragraph.children or []]


@pytest.mark.parametrize(("text", "shown"), HOSTILE)
def test_literal_renders_as_plain_text_on_one_line(text: str, shown: str) -> None:
    pieces = _inline(literal(text))
    assert {kind for kind, _ in pieces} <= {"text", "text_special"}  # no link, emphasis, HTML, code
    assert "".join(content for _, content in pieces) == f"x {shown} y"


@pytest.mark.parametrize(("text", "shown"), HOSTILE)
def test_code_renders_as_one_code_span(text: str, shown: str) -> None:
    assert _inline(code(text)) == [("text", "x "), ("code_inline", shown), ("text", " y")]


def test_a_cell_keeps_its_table_row() -> None:
    table = "| a | b |\n|---|---|\n| " + cell("x | y\nz") + " | 2 |\n"
    tokens = MarkdownIt("commonmark").enable("table").parse(table)
    assert [token.content for token in tokens if token.type == "inline"] == ["a", "b", "x | y z", "2"]
