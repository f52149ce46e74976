"""Pieces every page shares: the settings context, the password gate, empty states and number formats."""

import hmac
import math
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import streamlit as st
from psycopg.errors import QueryCanceled
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from dashboard import data
from evallens.auth import AuthError, AuthFailed, AuthUnavailable, Scope, retry_after_header
from evallens.cases.mining import Readers
from evallens.markdown import literal
from evallens.settings import DashboardSettings

PAGES_DIR = Path(__file__).parent / "app_pages"
VIEWER_KEY = "evallens_viewer"
READERS_KEY = "evallens_readers"
# Window choices by the name the URL remembers them under (``?window=7d``), in hours.
WINDOWS_H: dict[str, float] = {"15m": 0.25, "1h": 1, "6h": 6, "24h": 24, "7d": 168, "30d": 720}
WINDOW_LABELS = {
    "15m": "last 15 minutes",
    "1h": "last hour",
    "6h": "last 6 hours",
    "24h": "last 24 hours",
    "7d": "last 7 days",
    "30d": "last 30 days",
}
WINDOW_PARAM = "window"
WINDOW_MARGIN = 1.2  # the default window leaves a fifth of its width beside the data
KEY_UNCHECKED = (
    "PostgreSQL did not answer, so your API key could not be checked: you stay signed in, "
    "reload in {retry_s} s"
)
KEY_LOOKUP_FAILED = (
    "The server failed to look up your API key (a fault on the server, not a wrong key): you stay "
    "signed in, reload once it is mended"
)

EMPTY_HINTS = {
    "runs": "No eval runs yet. Run `evallens eval sets sync evals/datasets/acme/sets` and then "
    "`evallens eval run --set acme-support`, or `evallens demo` for the whole loop.",
    "gates": "No gate has run yet. Run `evallens gate --baseline main --candidate <run id>` "
    "(tag a baseline first with `evallens eval tag <run id> main`).",
    "spans": "No traces yet. Start `evallens collector` and point your service's OTLP exporter at "
    "http://127.0.0.1:4318 (the reference service, `evallens service`, does this by itself).",
    "samples": "No serving metrics yet. `evallens collector` scrapes the service's and vLLM's /metrics "
    "while it runs; start it next to `evallens service`.",
    "sets": "No eval sets yet. Run `evallens eval sets sync evals/datasets/acme/sets` to store one.",
}


@dataclass(frozen=True)
class Context:
    """What a page needs: the database URL, the project, the row limit, whether the viewer may change
    eval sets (promote cases), and the readers mining needs."""

    url: str
    project: str
    max_rows: int
    readers: Readers
    can_write: bool = False


def page_path(name: str) -> str:
    """The file of page ``name`` (e.g. ``traces.py``), as navigation and page links know it."""
    return str(PAGES_DIR / name)


def lend_readers(readers: Readers) -> None:
    """Keep the mining readers the entry layer lends for this session's pages."""
    st.session_state[READERS_KEY] = readers


def settings() -> DashboardSettings:
    """The dashboard's settings, read once per session."""
    if "evallens_settings" not in st.session_state:
        st.session_state["evallens_settings"] = DashboardSettings()
    value: DashboardSettings = st.session_state["evallens_settings"]
    return value


@dataclass(frozen=True)
class Viewer:
    """Who is looking: the one project every query is scoped to, the key when signed in with one, and
    whether they may write (the password, or a key with the write or admin scope; never a read key)."""

    project: str
    api_key: str | None = None
    can_write: bool = True


def viewer(dashboard_settings: DashboardSettings) -> Viewer | None:
    """This session's viewer, or None after showing the sign-in form.

    Without auth or password everyone sees ``dashboard_project``; the password signs in to it too; an
    API key with the read, write or admin scope signs in to the key's project, checked again on every
    run (so a revoked key is signed out within ``auth_cache_ttl_s``). Only the password and write or
    admin keys may promote cases.
    """
    password = dashboard_settings.dashboard_password
    if not dashboard_settings.auth_enabled and password is None:
        return Viewer(dashboard_settings.dashboard_project)
    current: Viewer | None = st.session_state.get(VIEWER_KEY)
    if current is not None and current.api_key is not None:
        checked = _check_key(current.api_key)
        if isinstance(checked, AuthUnavailable):  # PostgreSQL away or slow: no reason to sign out
            unchecked = KEY_UNCHECKED.format(retry_s=checked.retry_after_s)
            st.error(f"{unchecked} ({checked}).", icon=":material/cloud_off:")
            return None
        if isinstance(checked, AuthFailed):  # PostgreSQL refused the lookup: the server's fault, not the key
            st.error(f"{KEY_LOOKUP_FAILED} ({checked}).", icon=":material/error:")
            return None
        if isinstance(checked, AuthError):
            st.error(str(checked))
            current = None
    if current is not None:
        return current
    st.title("evallens")
    label = "Password or API key" if dashboard_settings.auth_enabled else "Password"
    label = "API key" if password is None else label
    with st.form("login"):
        entered = st.text_input(label, type="password")
        submitted = st.form_submit_button("Sign in")
    if submitted:
        # per address, not per session: a guesser opens a new session for free (behind a proxy, every
        # viewer shares the proxy's address; signed-in sessions are never affected)
        limiter = data.sign_in_limiter(dashboard_settings.dashboard_sign_in_attempts)
        address = st.context.ip_address  # None for a loopback viewer
        wait_s = limiter.acquire(address if isinstance(address, str) else "loopback")
        if wait_s:
            retry_s = retry_after_header(wait_s)
            st.error(f"Too many sign-in attempts from this address: try again in {retry_s} s.")
            return None
        if password is not None and _same_secret(entered, password.get_secret_value()):
            st.session_state[VIEWER_KEY] = Viewer(dashboard_settings.dashboard_project)
            st.rerun()
        message = f"Wrong {label.lower()}."
        if dashboard_settings.auth_enabled:
            checked = _check_key(entered.strip())
            if not isinstance(checked, AuthError):
                st.rerun()
            elif checked.status != 401:
                message = str(checked)
        st.error(message)
    return None


def _same_secret(entered: str, expected: str) -> bool:
    return hmac.compare_digest(entered.encode(), expected.encode())


def _check_key(key: str) -> Viewer | AuthError:
    """Sign in with ``key`` (or sign out when it no longer may read; not when it cannot be checked, nor
    when PostgreSQL refused to check it)."""
    try:
        principal = data.reader(data.database_url(), key)
    except (AuthUnavailable, AuthFailed) as error:
        return error
    except AuthError as error:
        st.session_state.pop(VIEWER_KEY, None)
        return error
    signed_in = Viewer(principal.project, key, can_write=principal.scope.allows(Scope.WRITE))
    st.session_state[VIEWER_KEY] = signed_in
    return signed_in


def context() -> Context:
    """The page context, scoped to the signed-in project; stops the page when the schema is missing or
    older than the code."""
    dashboard_settings = settings()
    url = data.database_url()
    revision = data.status.schema_revision(url)
    if revision is None:
        st.warning("The database has no evallens schema yet. Run `evallens db upgrade`, then reload.")
        st.stop()
    known = data.status.code_revisions()
    if revision in known[1:]:  # older than the code's queries (a newer one, unknown here, may serve them)
        st.warning(
            f"The database schema is at revision {revision}, older than this evallens ({known[0]}). "
            "Run `evallens db upgrade`, then reload."
        )
        st.stop()
    signed_in: Viewer | None = st.session_state.get(VIEWER_KEY)
    if signed_in is None:  # no auth and no password: the local, single-user case
        signed_in = Viewer(dashboard_settings.dashboard_project)
    readers: Readers = st.session_state[READERS_KEY]
    return Context(
        url, signed_in.project, dashboard_settings.dashboard_max_rows, readers, signed_in.can_write
    )


def database_unavailable(error: OperationalError | PoolTimeout) -> None:
    """Say in one line that PostgreSQL did not answer, and why, instead of a traceback."""
    timeout_s = settings().dashboard_statement_timeout_s
    if isinstance(error, PoolTimeout):  # every pooled connection busy: other viewers' slow queries
        st.error(
            f"Every connection the dashboard keeps to PostgreSQL stayed busy for {timeout_s:g} s "
            "(EVALLENS_DASHBOARD_STATEMENT_TIMEOUT_S), so the page stopped waiting. Reload in a while.",
            icon=":material/hourglass_disabled:",
        )
        return
    if isinstance(error.orig, QueryCanceled):  # the statement timeout: a locked table, a busy server
        st.error(
            f"PostgreSQL did not answer within {timeout_s:g} s (EVALLENS_DASHBOARD_STATEMENT_TIMEOUT_S), "
            "so the page stopped waiting. Reload in a while, or pick a shorter window.",
            icon=":material/hourglass_disabled:",
        )
        return
    reason = str(error.orig or error).strip().splitlines()[0]
    st.error(
        f"PostgreSQL did not answer ({literal(reason)}). Reload once it runs again.",
        icon=":material/cloud_off:",
    )


def database_unusable(reason: str) -> None:
    """Say in one line why the database cannot be opened at all (its URL, the driver's options for it,
    the embedded server), instead of a traceback; the reasons never quote the URL's password."""
    reason = reason.strip().splitlines()[0]
    st.error(
        f"The database cannot be opened: {literal(reason)}. Check EVALLENS_DATABASE_URL, then restart "
        "the dashboard.",
        icon=":material/database:",
    )


def empty_state(kind: str) -> None:
    """Say what is missing and which command produces it."""
    st.info(EMPTY_HINTS[kind], icon=":material/info:")


def fitting_window(extent: timedelta | None, finest: str = "1h") -> str:
    """The smallest window (no finer than ``finest``) that holds ``extent`` of data plus a margin."""
    names = [name for name in WINDOWS_H if WINDOWS_H[name] >= WINDOWS_H[finest]]
    if extent is None:
        return names[-1]
    hours = extent.total_seconds() / 3600 * WINDOW_MARGIN
    return next((name for name in names if WINDOWS_H[name] >= hours), names[-1])


def window_hours(label: str, extent: timedelta | None, finest: str = "1h") -> float:
    """A time-window picker defaulting to the window that fits ``extent`` of data, remembered in the
    URL (``?window=7d``); returns the window in hours."""
    names = [name for name in WINDOWS_H if WINDOWS_H[name] >= WINDOWS_H[finest]]
    fitting = fitting_window(extent, finest)
    asked = st.query_params.get(WINDOW_PARAM)
    shown = asked if asked in names else fitting
    choice = str(st.selectbox(label, names, index=names.index(shown), format_func=WINDOW_LABELS.get))
    if choice == fitting:  # the URL names a window only when it is not the one the data suggests
        st.query_params.pop(WINDOW_PARAM, None)
    else:
        st.query_params[WINDOW_PARAM] = choice
    return WINDOWS_H[choice]


def count(value: float | None) -> str:
    """A count as an integer with thousands separators."""
    return "—" if value is None or math.isnan(value) else f"{round(value):,}"


def pct(value: float | None, digits: int = 1) -> str:
    """A rate in [0, 1] as a percentage, or an em dash when unknown."""
    return "—" if value is None or math.isnan(value) else f"{value * 100:.{digits}f}%"


def points(value: float | None) -> str:
    """A difference of rates in percentage points."""
    return "—" if value is None or math.isnan(value) else f"{value * 100:+.1f} pts"


def short_id(value: str | None, length: int = 12) -> str:
    """The first characters of an id, enough to tell traces and runs apart."""
    return "—" if not value else value[:length]
