"""Pieces every page shares: the settings context, the password gate, empty states and number formats."""

import hmac
import math
from dataclasses import dataclass

import streamlit as st

from dashboard import data
from evallens.settings import DashboardSettings

AUTH_KEY = "evallens_authenticated"
WINDOWS_H = {"last hour": 1, "last 6 hours": 6, "last 24 hours": 24, "last 7 days": 168, "last 30 days": 720}

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
    """What a page needs to query: the database URL, the project and the row limit."""

    url: str
    project: str
    max_rows: int


def settings() -> DashboardSettings:
    """The dashboard's settings, read once per session."""
    if "evallens_settings" not in st.session_state:
        st.session_state["evallens_settings"] = DashboardSettings()
    value: DashboardSettings = st.session_state["evallens_settings"]
    return value


def password_ok(dashboard_settings: DashboardSettings) -> bool:
    """True when no password is configured or this session has entered it; otherwise ask for it."""
    secret = dashboard_settings.dashboard_password
    if secret is None or st.session_state.get(AUTH_KEY):
        return True
    st.title("evallens")
    with st.form("login"):
        entered = st.text_input("Password", type="password")
        submitted = st.form_submit_button("Sign in")
    if submitted:
        if hmac.compare_digest(entered.encode(), secret.get_secret_value().encode()):
            st.session_state[AUTH_KEY] = True
            st.rerun()
        st.error("Wrong password.")
    return False


def context() -> Context:
    """The page context; stops the page with one clear message when the schema is missing."""
    dashboard_settings = settings()
    url = data.database_url()
    if data.schema_revision(url) is None:
        st.warning("The database has no evallens schema yet. Run `evallens db upgrade`, then reload.")
        st.stop()
    return Context(url, dashboard_settings.dashboard_project, dashboard_settings.dashboard_max_rows)


def empty_state(kind: str) -> None:
    """Say what is missing and which command produces it."""
    st.info(EMPTY_HINTS[kind], icon=":material/info:")


def window_hours(label: str, default: str = "last 7 days", key: str | None = None) -> int:
    """A time-window picker; returns the window in hours."""
    names = list(WINDOWS_H)
    choice = st.selectbox(label, names, index=names.index(default), key=key)
    return WINDOWS_H[str(choice)]


def pct(value: float | None, digits: int = 1) -> str:
    """A rate in [0, 1] as a percentage, or an em dash when unknown."""
    return "—" if value is None or math.isnan(value) else f"{value * 100:.{digits}f}%"


def points(value: float | None) -> str:
    """A difference of rates in percentage points."""
    return "—" if value is None or math.isnan(value) else f"{value * 100:+.1f} pts"


def short_id(value: str | None, length: int = 12) -> str:
    """The first characters of an id, enough to tell traces and runs apart."""
    return "—" if not value else value[:length]
