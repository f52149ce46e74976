"""Mining reads question and answer attributes as text (``->>``): ``first_text`` finds in it what it finds
in the decoded JSON value, whatever JSON type the attribute holds."""

import json

import psycopg
import pytest

from evallens.telemetry.messages import first_text

MESSAGES = [{"role": "user", "parts": [{"type": "text", "content": "Where is my order?"}]}]
VALUES = [
    MESSAGES,  # structured, as OpenTelemetry's GenAI conventions now send it
    json.dumps(MESSAGES),  # a string holding JSON, as most SDKs send it
    {"messages": [{"role": "user", "content": "Can I return it?"}]},
    "plain question text",
    "  ",
    "",
    "42",
    42,
    True,
    None,
    [{"role": "assistant", "content": "no user here"}],
]


@pytest.mark.parametrize("value", VALUES)
def test_text_and_json_give_the_same_message(database_url: str, value: object) -> None:
    with psycopg.connect(database_url) as connection:
        as_json, as_text = connection.execute(
            "SELECT a -> 'k', a ->> 'k' FROM (SELECT jsonb_build_object('k', %s::jsonb) AS a) x",
            (json.dumps(value),),
        ).fetchone() or (None, None)
    for role in ("user", "assistant"):
        assert first_text((as_text,), role) == first_text((as_json,), role)
    if value in (MESSAGES, json.dumps(MESSAGES)):
        assert first_text((as_text,), "user") == "Where is my order?"
