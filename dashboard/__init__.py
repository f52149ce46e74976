"""The evallens Streamlit dashboard: an ``st.navigation`` entry file and one module per page."""

from dashboard.serve import DashboardRun, run_dashboard, streamlit_command

__all__ = ["DashboardRun", "run_dashboard", "streamlit_command"]
