"""What a hostile trace sender puts in its spans, a crafted link in its URL, or a contributor in a set
file's name or a CI run label never breaks a page or changes what it shows.

Spans go through the real collector, as any OTLP client's would.
"""

import json
import re
import time
from pathlib import Path

import httpx
import psycopg
import streamlit as st
from markdown_it import MarkdownIt
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from psycopg.types.json import Jsonb
from sqlalchemy.orm import Session

from collector.runtime import Collector
from evallens import cases
from evallens.db import create_db_engine
from evallens.telemetry import attributes as attr
from tests.collector.conftest import collector_settings, make_request, make_span
from tests.dashboard.conftest import open_page
from tests.dashboard.seed import Seeded
from tests.dashboard.test_scoring_changes import SCORING, set_scoring

TRACE_ID = b"\x0e" * 16
# a tracking pixel, a link that hides its target, a formula, a coloured verdict, HTML and a heading
HOSTILE = (
    "![pixel](http://evil.example/p.png) [sign in](http://evil.example/login) $x^2$ :green-badge[PASS] "
    "<b>bold</b> ~~gone~~ | a | b |\n# Gate passed"
)
SHOWN = HOSTILE.replace("\n", " ")  # on one line
COMMONMARK = MarkdownIt("commonmark").enable(["table", "strikethrough"])
PLAIN_TOKENS = {"text", "strong_open", "strong_close", "code_inline"}


def send(database_url: str, data_dir: Path, spans: list[Span]) -> None:
    """Export ``spans`` to a collector writing into ``database_url`` and wait until they are stored."""
    collector = Collector(collector_settings(database_url, data_dir), database_url)
    collector.start_in_background()
    try:
        response = httpx.post(
            f"http://127.0.0.1:{collector.http_port}/v1/traces",
            content=make_request(spans).SerializeToString(),
            headers={"content-type": "application/x-protobuf"},
        )
        assert response.status_code == 200
    finally:
        collector.stop()


def test_a_span_id_sent_twice_opens_both(app_database: str, seeded: Seeded, tmp_path: Path) -> None:
    start = time.time_ns() - 60 * 10**9
    first = make_span(8000, trace_id=TRACE_ID, start_ns=start, attributes={attr.DEGRADED_REASON: "first"})
    twin = make_span(
        8000, trace_id=TRACE_ID, start_ns=start + 10**6, attributes={attr.DEGRADED_REASON: "twin"}
    )
    send(app_database, tmp_path, [first, twin])  # same name, same span id: only the start tells them apart
    app = open_page("app_pages/traces.py", trace_id=TRACE_ID.hex())  # fails on any exception
    span_box = next(box for box in app.selectbox if box.label == "Span")
    assert len(span_box.options) == 2  # both are stored: the key includes the start time
    for index, reason in ((1, "twin"), (0, "first")):
        next(box for box in app.selectbox if box.label == "Span").select_index(index).run()
        assert not app.exception, [exception.value for exception in app.exception]
        facts = app.table[0].value
        assert dict(zip(facts["attribute"], facts["value"], strict=True))["degraded reason"] == reason


def shown_text(source: str) -> str:
    """The text Markdown ``source`` shows; fails when it holds a link, image, HTML, heading, table or
    strikethrough (CommonMark, GFM), or a formula or a colour directive (Streamlit's own)."""
    outside_code = re.sub(r"`[^`]*`", "", source)  # a code span shows its text as it is
    assert not re.search(r"(?<!\\)\$", outside_code), source
    assert not re.search(r"(?<!\\):[\w-]+\[", outside_code), source
    blocks = [token.type for token in COMMONMARK.parse(source) if token.block]
    assert blocks == ["paragraph_open", "inline", "paragraph_close"], (blocks, source)
    [inline] = [token for token in COMMONMARK.parse(source) if token.type == "inline"]
    children = inline.children or []
    assert {child.type for child in children} <= PLAIN_TOKENS, (children, source)
    return "".join(child.content for child in children)


def test_markdown_in_span_names_questions_and_attributes_is_shown_as_text(
    app_database: str, seeded: Seeded, tmp_path: Path
) -> None:
    root = make_span(
        8100,
        trace_id=TRACE_ID,
        start_ns=time.time_ns() - 60 * 10**9,
        attributes={
            attr.GEN_AI_INPUT_MESSAGES: json.dumps([{"role": "user", "content": HOSTILE}]),
            attr.DEGRADED_REASON: HOSTILE,
            attr.retrieval_document_id(0): HOSTILE,
        },
    )
    root.name = HOSTILE
    root.status.code = Status.STATUS_CODE_ERROR  # a bad case: the Cases page offers it for promotion
    send(app_database, tmp_path, [root])

    app = open_page("app_pages/traces.py", trace_id=TRACE_ID.hex())
    assert shown_text(app.markdown[0].value) == SHOWN  # the span's name above its facts
    facts = dict(zip(app.table[0].value["attribute"], app.table[0].value["value"], strict=True))
    assert shown_text(facts["degraded reason"]) == SHOWN  # st.table reads its cells as Markdown
    assert shown_text(facts["retrieved documents"]) == SHOWN

    app = open_page("app_pages/cases.py")
    app.multiselect[0].select(TRACE_ID.hex()).run()
    preview = next(markdown.value for markdown in app.markdown if "will be stored as" in markdown.value)
    assert shown_text(preview).endswith(f"will be stored as: {SHOWN}")
    next(button for button in app.button if "Promote" in button.label).click().run()
    assert not app.error, [error.value for error in app.error]
    promoted = next(caption.value for caption in app.caption if caption.value.startswith("prod"))
    assert f"{SHOWN} (redacted: nothing)" in shown_text(promoted)


def test_a_crafted_trace_link_writes_nothing_on_the_page(seeded: Seeded) -> None:
    app = open_page("app_pages/traces.py", trace_id="[Session expired: sign in again](http://evil.example)")
    assert [warning.value for warning in app.warning] == [
        "The link's trace_id is not a trace id (32 hexadecimal digits), so it opens none."
    ]
    shown = [str(element.value) for kind in ("markdown", "subheader", "warning") for element in app.get(kind)]
    assert not [text for text in shown if "evil.example" in text]
    newest = app.dataframe[0].value["trace_id"].iloc[0]
    assert next(box for box in app.selectbox if box.label == "Open trace").value == newest

    app = open_page("app_pages/traces.py", trace_id=f" {seeded.error_trace.upper()} ")  # pasted
    assert not app.warning
    assert next(box for box in app.selectbox if box.label == "Open trace").value == seeded.error_trace


def test_set_names_and_run_labels_are_shown_as_written(app_database: str, seeded: Seeded) -> None:
    set_name = "acme_support *v2* [docs](http://evil.example/docs) $x$"  # one line: set files are YAML
    with psycopg.connect(app_database) as connection:
        connection.execute("UPDATE eval_sets SET name = %s", (set_name,))
        connection.execute("UPDATE gate_reports SET eval_set_name = %s", (set_name,))
        connection.execute("UPDATE eval_runs SET label = label || ' ' || %s", (HOSTILE,))
    set_scoring(app_database, {seeded.baseline_id: SCORING})  # the candidate recorded none: a warning
    st.cache_data.clear()

    app = open_page()
    tile = next(markdown.value for markdown in app.markdown if "acme" in markdown.value)
    assert shown_text(tile.removesuffix(" :red-badge[REGRESSION]")) == set_name
    [gate] = [caption.value for caption in app.caption if "regressed cells" in caption.value]
    assert shown_text(gate).startswith(f"candidate {SHOWN} vs baseline {SHOWN} · ")
    [run] = [caption.value for caption in app.caption if caption.value.startswith("Run ")]
    assert shown_text(run).startswith(f"Run candidate {SHOWN} (")

    [warning] = open_page("app_pages/compare.py").warning
    assert shown_text(warning.value).startswith(f"Runs baseline {SHOWN} and candidate {SHOWN} are not")


def test_set_names_in_commands_and_case_keys_in_notes_are_shown_as_written(
    app_database: str, seeded: Seeded
) -> None:
    set_name = "acme` [docs](http://evil.example/docs) `support"  # a backtick would end a code span
    case_key = "rr-9 [sign in](http://evil.example/login) *now*"
    with psycopg.connect(app_database) as connection:
        connection.execute("UPDATE eval_sets SET name = %s", (set_name,))
        connection.execute(
            "UPDATE gate_reports SET eval_set_name = %s, report = jsonb_set(report, '{edited_cases}', %s)",
            (set_name, Jsonb([case_key])),
        )
    set_scoring(app_database, {seeded.candidate_id: SCORING})  # the baseline recorded none: a rule, a warning
    replay = f"evallens eval run --set '{set_name}' --tag main"  # quoted for the shell, as a paste needs

    app = open_page()
    [trend] = [caption.value for caption in app.caption if "dashed rule" in caption.value]
    assert shown_text(trend).endswith(f"with today's metrics: {replay}.")

    app = open_page("app_pages/compare.py")
    [warning] = app.warning
    assert shown_text(warning.value).endswith(f"with today's metrics ({replay}) and compare against it.")
    notes = [shown_text(caption.value) for caption in app.caption if caption.value.startswith("Edited")]
    assert notes == [
        f"Edited: 1 case(s) edited between the runs' set versions, left out of the comparison: {case_key}."
    ]


def test_a_promotion_error_quoting_a_set_name_is_shown_as_written(app_database: str, seeded: Seeded) -> None:
    set_name = "acme_support [docs](http://evil.example/docs) *v2*"
    with psycopg.connect(app_database) as connection:
        connection.execute("UPDATE eval_sets SET name = %s", (set_name,))
    st.cache_data.clear()
    app = open_page("app_pages/cases.py")
    app.multiselect[0].select(seeded.feedback_trace).run()
    engine = create_db_engine(app_database)  # meanwhile `evallens cases promote` stores the same trace
    try:
        with Session(engine) as db, db.begin():
            cases.promote_traces(db, [seeded.feedback_trace], eval_set_name=set_name, scenario="orders")
    finally:
        engine.dispose()

    next(button for button in app.button if "Promote" in button.label).click().run()
    [error] = app.error
    assert shown_text(error.value) == f"trace {seeded.feedback_trace} is already a case of {set_name} v2"


def test_a_hint_quoting_the_targets_config_is_shown_as_written(app_database: str, seeded: Seeded) -> None:
    # the gate's hint names config values as the target reported them (GET /v1/config, or /v1/models)
    message = f"accuracy got worse and the target's config changed: model: 'tiny' -> '{SHOWN}'"
    with psycopg.connect(app_database) as connection:
        connection.execute(
            "UPDATE gate_reports SET report = jsonb_set(report, '{hints}', %s)",
            (Jsonb([{"message": message, "evidence": {}}]),),
        )
    st.cache_data.clear()
    app = open_page("app_pages/compare.py")
    assert [shown_text(info.value) for info in app.info] == [message]
