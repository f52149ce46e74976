"""Entry file of the dashboard (``streamlit run dashboard/app.py``): password gate and navigation."""

import streamlit as st

from dashboard import _ui

PAGES = (
    ("app_pages/overview.py", "Overview", ":material/dashboard:", "overview"),
    ("app_pages/compare.py", "Compare runs", ":material/compare_arrows:", "compare"),
    ("app_pages/traces.py", "Traces", ":material/account_tree:", "traces"),
    ("app_pages/serving.py", "Serving metrics", ":material/monitoring:", "serving"),
    ("app_pages/cases.py", "Cases", ":material/playlist_add:", "cases"),
    ("app_pages/quarantine.py", "Quarantine", ":material/report:", "quarantine"),
)


def main() -> None:
    """Ask for a password or API key when auth is on, then show the chosen page of the viewer's project."""
    st.set_page_config(page_title="evallens", page_icon=":material/insights:", layout="wide")
    if _ui.viewer(_ui.settings()) is None:
        st.stop()
    pages = [
        st.Page(path, title=title, icon=icon, url_path=url_path, default=index == 0)
        for index, (path, title, icon, url_path) in enumerate(PAGES)
    ]
    st.navigation(pages).run()


main()
