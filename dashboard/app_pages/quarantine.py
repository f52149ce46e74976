"""Quarantine: spans the collector acknowledged but PostgreSQL refused, kept with the reason."""

import streamlit as st

from dashboard import _ui, data

ctx = _ui.context()
st.title("Quarantine")
st.caption(
    "Spans the collector acknowledged that PostgreSQL refused (a data error such as an index row too "
    "large): kept here with PostgreSQL's reason instead of being dropped or holding back other spans. "
    "Fix the cause, then `evallens collector quarantine retry --all --project "
    f"{ctx.project}` stores them; `quarantine drop` deletes them."
)
if not data.status.data_present(ctx.url, ctx.project)["quarantine"]:
    st.success("Nothing is quarantined: PostgreSQL stored every span the collector acknowledged.")
    st.stop()
total, rows = data.quarantine.quarantine(ctx.url, ctx.project, ctx.max_rows)
st.metric("quarantined spans", f"{total:,}")
st.dataframe(
    rows,
    hide_index=True,
    column_config={
        "quarantined_at": st.column_config.DatetimeColumn("quarantined (UTC)", format="YYYY-MM-DD HH:mm:ss"),
        "reason": st.column_config.TextColumn("reason", width="large"),
    },
)
