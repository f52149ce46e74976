"""Signed in with a key of project alpha, the dashboard never shows the default project's rows."""

import json
from datetime import timedelta

import pandas as pd
import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from dashboard import data
from evallens.auth import Scope, create_key
from evallens.db import create_db_engine
from evallens.db.models import EvalRun, EvalSet
from evallens.markdown import literal
from evallens.telemetry import attributes as attr
from tests.dashboard.conftest import APP_FILE, TIMEOUT_S, page_file
from tests.dashboard.seed import SET_NAME, Seeded, hex_id, request_trace
from tests.dashboard.seed import span as seed_span

ALPHA = "alpha"
ALPHA_QUESTION = "Where is my alpha order?"
ALPHA_SET = "alpha-set"
ALPHA_TENANT = "alpha-tenant"


def seed_alpha(url: str, seeded: Seeded) -> dict[str, str]:
    """One run and two priced traces in project alpha; keys of each scope for it."""
    engine = create_db_engine(url)
    try:
        with Session(engine) as db, db.begin():
            eval_set = EvalSet(project=ALPHA, name=ALPHA_SET, version=1, content_hash="alpha-v1")
            db.add(eval_set)
            db.flush()
            db.add(
                EvalRun(
                    project=ALPHA,
                    eval_set_id=eval_set.id,
                    label="alpha-run",
                    endpoint="http://127.0.0.1:8000",
                    config={},
                    config_fingerprint="fp-alpha",
                    status="completed",
                )
            )
            for index in range(2):
                for span in request_trace(
                    hex_id("f", index),
                    900 + index,
                    seeded.now - timedelta(minutes=5 + index),
                    question="alpha question",
                    cost=0.25,
                    tenant=ALPHA_TENANT,
                ):
                    span.project = ALPHA
                    db.add(span)
            return {
                scope: create_key(db, ALPHA, Scope(scope)).key
                for scope in ("read", "ingest", "write", "admin")
            }
    finally:
        engine.dispose()


@pytest.fixture
def alpha_keys(seeded: Seeded, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("EVALLENS_AUTH_ENABLED", "true")
    monkeypatch.setenv("EVALLENS_AUTH_CACHE_TTL_S", "0")
    from evallens.settings import read_environment

    return seed_alpha(str(read_environment("EVALLENS_DATABASE_URL")), seeded)


def sign_in(secret: str, **query_params: str):
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(APP_FILE, default_timeout=TIMEOUT_S)
    app.query_params.update(query_params)
    app.run()
    assert [box.label for box in app.text_input] == ["API key"]
    app.text_input[0].input(secret)
    app.button[0].click().run()
    assert not app.exception, [exception.value for exception in app.exception]
    return app


def shown(app) -> str:
    kinds = ("markdown", "caption", "info", "success", "warning", "error", "title", "subheader")
    return "\n".join(str(element.value) for kind in kinds for element in app.get(kind))


def test_alpha_login_never_shows_default_spans_runs_or_costs(
    alpha_keys: dict[str, str], seeded: Seeded
) -> None:
    app = sign_in(alpha_keys["read"])
    text = shown(app)
    assert any(title.value == "Overview" for title in app.title)
    assert literal("alpha-run") in text  # names go into Markdown escaped
    assert literal(SET_NAME) not in text and SET_NAME not in text
    tiles = {metric.label: metric.value for metric in app.metric}
    assert tiles["cost (USD)"] == "$0.5000" and tiles["requests"] == "2"

    app.switch_page(page_file("app_pages/traces.py")).run()
    table = app.dataframe[0].value
    assert set(table["trace_id"]) == {hex_id("f", 0), hex_id("f", 1)}
    assert set(table["tenant"]) == {ALPHA_TENANT}

    app.switch_page(page_file("app_pages/compare.py")).run()
    candidates = next(box for box in app.selectbox if box.label == "Candidate")
    assert len(candidates.options) == 1 and candidates.options[0].startswith("alpha-run")


def test_alpha_login_cannot_open_a_default_trace_by_link(alpha_keys: dict[str, str], seeded: Seeded) -> None:
    app = sign_in(alpha_keys["admin"], trace_id=seeded.error_trace)
    app.switch_page(page_file("app_pages/traces.py")).run()
    assert f"No spans stored for trace {seeded.error_trace}." in shown(app)
    assert "engine failed" not in shown(app)


@pytest.mark.parametrize(
    ("which", "message"),
    [("ingest", "this API key has the ingest scope; read is needed"), ("wrong", "Wrong api key.")],
)
def test_keys_that_may_not_read_are_refused(alpha_keys: dict[str, str], which: str, message: str) -> None:
    app = sign_in(alpha_keys.get(which, "evk_00000000_nope"))
    assert [error.value for error in app.error] == [message]
    assert not any(title.value == "Overview" for title in app.title)


def add_alpha_span_under_default_trace(seeded: Seeded) -> None:
    """A failed request of alpha's under the default project's trace id: alpha must not see the default
    project's question through it (issue 14, finding 3)."""
    from evallens.settings import read_environment

    engine = create_db_engine(str(read_environment("EVALLENS_DATABASE_URL")))
    try:
        with Session(engine) as db, db.begin():
            when = seeded.now - timedelta(minutes=3)
            # alpha's own question: a request that asked nothing is no production traffic (migration 0008)
            question = json.dumps([{"role": "user", "content": ALPHA_QUESTION}])
            db.add(
                seed_span(
                    seeded.error_trace,
                    990,
                    when,
                    50.0,
                    status_code=2,
                    project=ALPHA,
                    attributes={attr.GEN_AI_INPUT_MESSAGES: question},
                )  # fmt: skip
            )
    finally:
        engine.dispose()


def test_alpha_cases_page_never_shows_another_projects_question(
    alpha_keys: dict[str, str], seeded: Seeded
) -> None:
    add_alpha_span_under_default_trace(seeded)
    app = sign_in(alpha_keys["read"])
    app.switch_page(page_file("app_pages/cases.py")).run()
    assert not app.exception, [exception.value for exception in app.exception]
    table = app.dataframe[0].value
    assert seeded.error_trace in set(table["trace_id"])
    assert set(table["question"].dropna()) == {ALPHA_QUESTION}
    assert "Can I return shoes?" not in shown(app) and literal("Can I return shoes?") not in shown(app)


def test_a_read_key_cannot_promote_a_write_key_can(alpha_keys: dict[str, str], seeded: Seeded) -> None:
    add_alpha_span_under_default_trace(seeded)  # one bad trace of alpha's, so the page offers promotion
    reader = sign_in(alpha_keys["read"])
    reader.switch_page(page_file("app_pages/cases.py")).run()
    assert "may only read" in shown(reader)
    assert not [button for button in reader.button if "Promote" in str(button.label)]
    for scope in ("write", "admin"):
        writer = sign_in(alpha_keys[scope])
        writer.switch_page(page_file("app_pages/cases.py")).run()
        assert "may only read" not in shown(writer), scope
        assert [button for button in writer.button if "Promote" in str(button.label)], scope


def test_alpha_serving_page_never_shows_another_projects_samples(
    alpha_keys: dict[str, str], seeded: Seeded, app_database: str
) -> None:
    app = sign_in(alpha_keys["read"])
    app.switch_page(page_file("app_pages/serving.py")).run()
    assert not app.exception
    assert "No serving metrics yet" in "\n".join(str(info.value) for info in app.info)
    assert not app.get("arrow_vega_lite_chart")
    # the rollups behind wide windows (minutes, hours) and the raw samples behind narrow ones alike
    window = data.serving.metrics_window(app_database, "default", 24)
    assert window is not None
    for bucket_s in (30, 600, 3600):
        for project, empty in (("default", False), ("alpha", True)):
            gauges = data.serving.gauge_series(app_database, project, *window, bucket_s)
            increases = data.serving.counter_increases(app_database, project, *window, bucket_s)
            assert (gauges.empty, increases.empty) == (empty, empty), (project, bucket_s)


def test_a_key_that_cannot_be_checked_stays_signed_in(
    alpha_keys: dict[str, str], app_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg
    from sqlalchemy import make_url

    monkeypatch.setenv("EVALLENS_DASHBOARD_STATEMENT_TIMEOUT_S", "0.5")
    app = sign_in(alpha_keys["read"])
    assert any(title.value == "Overview" for title in app.title)
    conninfo = make_url(app_database).set(drivername="postgresql").render_as_string(hide_password=False)
    holder = psycopg.connect(conninfo)
    try:  # the key check waits on the lock past the statement timeout, as on a PostgreSQL gone away
        holder.execute("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
        app.run()
    finally:
        holder.close()
    assert not app.exception, [exception.value for exception in app.exception]
    assert [error.value for error in app.error] == [
        "PostgreSQL did not answer, so your API key could not be checked: you stay signed in, reload in 5 s"
        " (cannot check the API key: OperationalError)."  # 5 s: the Retry-After of the service and collector
    ]
    assert not app.text_input  # no sign-in form
    app.run()
    assert any(title.value == "Overview" for title in app.title)  # still signed in, key checked again


def test_a_key_checked_while_every_pooled_connection_is_busy_stays_signed_in(
    alpha_keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other viewers' slow queries holding every connection of the dashboard's pool is PostgreSQL too busy,
    as a statement timeout is: the key check read it as PostgreSQL refusing the lookup."""
    from contextlib import ExitStack

    from dashboard.data import _db

    monkeypatch.setenv("EVALLENS_DASHBOARD_STATEMENT_TIMEOUT_S", "0.5")  # the pool's timeout too
    app = sign_in(alpha_keys["read"])
    assert any(title.value == "Overview" for title in app.title)
    engine = _db._engine(_db.database_url())  # the pool the key check shares with the pages' queries
    with ExitStack() as held:
        for _ in range(engine.pool.size() + engine.pool._max_overflow):  # type: ignore[attr-defined]
            held.enter_context(engine.connect())
        app.run()
    assert not app.exception, [exception.value for exception in app.exception]
    assert [error.value for error in app.error] == [
        "PostgreSQL did not answer, so your API key could not be checked: you stay signed in, reload in 5 s"
        " (cannot check the API key: TimeoutError)."
    ]
    assert not app.text_input  # no sign-in form
    app.run()
    assert any(title.value == "Overview" for title in app.title)  # still signed in, key checked again


def test_a_key_postgres_refuses_to_look_up_stays_signed_in(
    alpha_keys: dict[str, str], app_database: str
) -> None:
    """A lookup PostgreSQL refuses (here: no api_keys table) is the server's fault, not the key's: the
    viewer was signed out as if the key were wrong."""
    import psycopg
    from sqlalchemy import make_url

    app = sign_in(alpha_keys["read"])
    assert any(title.value == "Overview" for title in app.title)
    conninfo = make_url(app_database).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as connection:
        connection.execute("ALTER TABLE api_keys RENAME TO api_keys_away")
    try:
        app.run()
    finally:
        with psycopg.connect(conninfo, autocommit=True) as connection:
            connection.execute("ALTER TABLE api_keys_away RENAME TO api_keys")
    assert not app.exception, [exception.value for exception in app.exception]
    assert [error.value for error in app.error] == [
        "The server failed to look up your API key (a fault on the server, not a wrong key): you stay "
        "signed in, reload once it is mended (cannot check the API key: PostgreSQL refused the lookup "
        "(ProgrammingError); the server logged why)."
    ]
    assert not app.text_input  # no sign-in form
    app.run()
    assert any(title.value == "Overview" for title in app.title)  # still signed in, key checked again


def test_tags_and_gates_written_past_the_schema_never_show_in_another_project(
    app_database: str, seeded: Seeded
) -> None:
    """A fake for rows no code path writes and the schema refuses (its foreign key triggers off, as a
    hand-made restore could leave them): alpha's tag on the default baseline and alpha's gate of the
    default runs. Before, the run list and the trend showed alpha's tag on the default run, and alpha's
    gate list showed the default runs' labels."""
    with psycopg.connect(app_database, autocommit=True) as connection:
        connection.execute("SET session_replication_role = replica")
        connection.execute(
            "INSERT INTO eval_tags (project, eval_set_name, tag, run_id) VALUES (%s, %s, 'alpha-main', %s)",
            [ALPHA, SET_NAME, seeded.baseline_id],
        )
        connection.execute(
            "INSERT INTO gate_reports (project, eval_set_name, baseline_run_id, candidate_run_id, verdict,"
            " report) VALUES (%s, %s, %s, %s, 'pass', '{}')",
            [ALPHA, SET_NAME, seeded.baseline_id, seeded.candidate_id],
        )
    url = app_database
    runs = data.runs.runs(url, "default").set_index("run_id")
    assert runs.loc[seeded.baseline_id, "tags"] == "main"
    trend = data.runs.metric_trend(url, "default", SET_NAME)
    assert set(trend.loc[trend["run_id"] == seeded.baseline_id, "tags"]) == {"main"}
    assert data.runs.latest_gates(url, ALPHA).empty
    assert len(data.runs.latest_gates(url, "default")) == 1  # the default project's own gate


def test_a_run_naming_another_projects_set_never_shows_that_set(app_database: str, seeded: Seeded) -> None:
    """A fake for a row no code path writes and the schema refuses (migration 0016), its foreign key
    triggers off as a hand-made restore could leave it: alpha's run of the default project's set.
    Before, alpha's run list, trend and serving bands named the default set and its version, and
    alpha's trend of that set name held the run."""
    engine = create_db_engine(app_database)
    try:
        with Session(engine) as db, db.begin():
            db.execute(text("SET LOCAL session_replication_role = replica"))
            run = EvalRun(
                project=ALPHA,
                eval_set_id=seeded.eval_set_id,
                label="alpha-run",
                endpoint="http://127.0.0.1:8000",
                config={},
                config_fingerprint="fp-alpha",
                status="completed",
                summary={"overall": {"accuracy": {"mean": 0.5, "ci_low": 0.4, "ci_high": 0.6}}},
            )
            db.add(run)
    finally:
        engine.dispose()
    url = app_database
    assert data.runs.runs(url, ALPHA).empty
    assert data.runs.metric_trend(url, ALPHA, SET_NAME).empty
    now = pd.Timestamp(seeded.now)  # the run started now
    assert data.serving.run_windows(url, ALPHA, now - pd.Timedelta(days=1), now + pd.Timedelta(days=1)).empty
    assert SET_NAME in set(data.runs.runs(url, "default")["eval_set_name"])  # the default project's own
