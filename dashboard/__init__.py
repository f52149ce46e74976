"""Streamlit dashboard for product managers and engineers."""

__all__: list[str] = []
