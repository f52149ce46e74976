"""An empty database: every page says what to run instead of failing; a password guards the pages."""

import pytest

from evallens.markdown import literal
from tests.dashboard.conftest import open_page
from tests.dashboard.seed import Seeded

PAGES_AND_HINTS = [
    (None, "evallens eval run"),
    ("app_pages/compare.py", "evallens eval run"),
    ("app_pages/traces.py", "evallens collector"),
    ("app_pages/serving.py", "scrapes the service's and vLLM's /metrics"),
    ("app_pages/cases.py", "evallens collector"),
]


@pytest.mark.parametrize(("page", "hint"), PAGES_AND_HINTS)
def test_empty_database_shows_what_to_run(app_database: str, page: str | None, hint: str) -> None:
    app = open_page(page)
    infos = [info.value for info in app.info]
    assert any(hint in info for info in infos), infos
    assert not app.error
    assert not app.get("vega_lite_chart")


def test_a_database_without_schema_says_to_migrate(
    empty_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import streamlit as st

    monkeypatch.setenv("EVALLENS_DATABASE_URL", empty_database_url)
    # no embedding thread: a pass of it could hold a connection while the clear below disposes the
    # engine, and that connection would be garbage-collected open (a ResourceWarning in a later test)
    monkeypatch.setenv("EVALLENS_DASHBOARD_EMBED_AHEAD_S", "0")
    st.cache_data.clear()
    st.cache_resource.clear()
    app = open_page()
    assert any("evallens db upgrade" in warning.value for warning in app.warning)
    st.cache_resource.clear()


def test_password_guards_every_page(app_database: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALLENS_DASHBOARD_PASSWORD", "s3cret")
    app = open_page()
    assert [box.label for box in app.text_input] == ["Password"]
    assert not app.title or app.title[0].value == "evallens"
    app.text_input[0].input("wrong")
    app.button[0].click().run()
    assert [error.value for error in app.error] == ["Wrong password."]
    assert not any(title.value == "Overview" for title in app.title)
    app.text_input[0].input("s3cret")
    app.button[0].click().run()
    assert any(title.value == "Overview" for title in app.title)


def errors_on_two_pages(database_url: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The one error the overview and the traces page each show with ``database_url`` (opening a page
    fails on any exception it raised)."""
    import streamlit as st

    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    monkeypatch.setenv("EVALLENS_DASHBOARD_EMBED_AHEAD_S", "0")
    st.cache_data.clear()
    st.cache_resource.clear()
    shown = []
    for page in (None, "app_pages/traces.py"):
        [error] = [error.value for error in open_page(page).error]
        shown.append(error)
    st.cache_resource.clear()
    return shown


def test_an_unreachable_database_is_one_readable_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from evallens.ports import free_port

    gone = f"postgresql+psycopg://evallens@127.0.0.1:{free_port()}/gone"
    for error in errors_on_two_pages(gone, monkeypatch):
        assert error.startswith(f"PostgreSQL did not answer ({literal('connection failed: ')}")
        assert "Connection refused" in error


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("postgresql://evallens:s3cret@127.0.0.1:notaport/db", "the database URL cannot be parsed"),
        ("nonsense", "the database URL cannot be parsed"),
        ("postgresql://evallens:s3cret@127.0.0.1/db?colour=blue", 'invalid connection option "colour"'),
    ],
)
def test_a_malformed_database_url_is_one_readable_line(
    url: str, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for error in errors_on_two_pages(url, monkeypatch):
        assert error.startswith(f"The database cannot be opened: {literal(reason)}")
        assert error.endswith("Check EVALLENS_DATABASE_URL, then restart the dashboard.")
        assert "s3cret" not in error


def test_a_query_past_the_statement_timeout_is_one_readable_line(
    app_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg
    from sqlalchemy import make_url
    from streamlit.testing.v1 import AppTest

    from tests.dashboard.conftest import APP_FILE

    monkeypatch.setenv("EVALLENS_DASHBOARD_STATEMENT_TIMEOUT_S", "0.5")
    conninfo = make_url(app_database).set(drivername="postgresql").render_as_string(hide_password=False)
    holder = psycopg.connect(conninfo)  # a migration or a partition drop holds the spans so
    try:
        # PostgreSQL ends the holder after a while: a page that waits on the lock then renders in full
        holder.execute("SET idle_in_transaction_session_timeout = '20s'")
        holder.execute("LOCK TABLE spans IN ACCESS EXCLUSIVE MODE")
        app = AppTest.from_file(APP_FILE, default_timeout=120)
        app.run()
    finally:
        holder.close()  # its transaction and lock end with it, unless PostgreSQL ended it first
    assert not app.exception, [exception.value for exception in app.exception]
    assert [error.value for error in app.error] == [
        "PostgreSQL did not answer within 0.5 s (EVALLENS_DASHBOARD_STATEMENT_TIMEOUT_S), so the page "
        "stopped waiting. Reload in a while, or pick a shorter window."
    ]


def test_a_schema_behind_the_code_says_to_migrate(app_database: str, seeded: Seeded) -> None:
    from evallens.db.migrate import downgrade, head_revision

    downgrade(app_database, "0011")  # eval_runs.scoring, which the overview and compare read, is gone
    for page in (None, "app_pages/compare.py"):
        app = open_page(page)  # fails on any exception the page raised
        assert [warning.value for warning in app.warning] == [
            f"The database schema is at revision 0011, older than this evallens ({head_revision()}). "
            "Run `evallens db upgrade`, then reload."
        ]


def test_a_pool_with_every_connection_busy_is_one_readable_line(
    app_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextlib import ExitStack

    from dashboard.data import _db

    monkeypatch.setenv("EVALLENS_DASHBOARD_STATEMENT_TIMEOUT_S", "0.5")
    engine = _db._engine(_db.database_url())  # the page's own pool, as other viewers' slow queries hold it
    with ExitStack() as held:
        for _ in range(engine.pool.size() + engine.pool._max_overflow):  # type: ignore[attr-defined]
            held.enter_context(engine.connect())
        app = open_page()  # fails on any exception the page raised
    assert [error.value for error in app.error] == [
        "Every connection the dashboard keeps to PostgreSQL stayed busy for 0.5 s "
        "(EVALLENS_DASHBOARD_STATEMENT_TIMEOUT_S), so the page stopped waiting. Reload in a while."
    ]


def test_sign_in_attempts_past_the_limit_are_refused(
    app_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALLENS_DASHBOARD_PASSWORD", "s3cret")
    monkeypatch.setenv("EVALLENS_DASHBOARD_SIGN_IN_ATTEMPTS", "2")
    app = open_page()
    for _ in range(2):
        app.text_input[0].input("guess")
        app.button[0].click().run()
        assert [error.value for error in app.error] == ["Wrong password."]
    app.text_input[0].input("s3cret")  # right, yet not even checked: one more attempt a minute
    app.button[0].click().run()
    refused = "Too many sign-in attempts from this address: try again in "
    assert [error.value.startswith(refused) for error in app.error] == [True]
    assert not any(title.value == "Overview" for title in app.title)
    other = open_page()  # a new session from the same address gets no fresh attempts
    other.text_input[0].input("s3cret")
    other.button[0].click().run()
    assert [error.value.startswith(refused) for error in other.error] == [True]
