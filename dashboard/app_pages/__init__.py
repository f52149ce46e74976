"""One module per dashboard page; each is a Streamlit script run by ``st.navigation``.

Not named ``pages``: Streamlit would treat that folder as its legacy multipage directory and run the
pages without the entry file (no password gate, no page config).
"""
