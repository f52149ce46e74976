"""The dashboard's navigation: the sign-in gate, then the chosen page of the viewer's project.

``evallens dashboard`` hands Streamlit the entry layer's script (``evallens/app/streamlit_app.py``),
which calls ``run`` with the mining readers the eval engine lends: the dashboard never imports it.
"""

from datetime import timedelta

import streamlit as st
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from dashboard import _ui, data
from evallens.cases.mining import Readers
from evallens.errors import DatabaseUnavailable

PAGES = (
    ("overview.py", "Overview", ":material/dashboard:", "overview"),  # also at the root
    ("compare.py", "Compare runs", ":material/compare_arrows:", "compare"),
    ("traces.py", "Traces", ":material/account_tree:", "traces"),
    ("serving.py", "Serving metrics", ":material/monitoring:", "serving"),
    ("cases.py", "Cases", ":material/playlist_add:", "cases"),
    ("quarantine.py", "Quarantine", ":material/report:", "quarantine"),
)


def run(readers: Readers) -> None:
    """Ask for a password or API key when auth is on, then show the chosen page of the viewer's project."""
    st.set_page_config(page_title="evallens", page_icon=":material/insights:", layout="wide")
    _ui.lend_readers(readers)
    try:
        _show(readers)
    # PostgreSQL down, restarting, unreachable or too busy to lend a connection, on any page
    except (OperationalError, PoolTimeout) as error:
        _ui.database_unavailable(error)
    except DBAPIError as error:
        if error.statement is not None:  # a query PostgreSQL refused: a fault of the page, shown in full
            raise
        _ui.database_unusable(str(error.orig or error))  # the driver refused the URL's options
    except DatabaseUnavailable as error:  # a URL that cannot be parsed, an embedded server that won't start
        _ui.database_unusable(str(error))


def _show(readers: Readers) -> None:
    if _ui.viewer(_ui.settings()) is None:
        st.stop()
    every_s = _ui.settings().dashboard_embed_ahead_s
    if every_s and readers.embedding_model:  # started once per process: the Cases page then waits less
        windows = tuple(timedelta(hours=hours) for hours in _ui.WINDOWS_H.values())
        data.cases.embedding_ahead(data.database_url(), every_s, windows, readers)
    # Streamlit serves the default page at the root only (its own name answers "Page not found"), yet
    # reserves the name: the default takes a name nobody links to, and a hidden twin serves /overview.
    name, title, icon, url_path = PAGES[0]
    pages = [
        st.Page(_ui.page_path(name), title=title, icon=icon, url_path=f"{url_path}-home", default=True),
        *(
            st.Page(_ui.page_path(name), title=title, icon=icon, url_path=path)
            for name, title, icon, path in PAGES[1:]
        ),
        st.Page(_ui.page_path(name), title=title, icon=icon, url_path=url_path, visibility="hidden"),
    ]
    st.navigation(pages).run()
