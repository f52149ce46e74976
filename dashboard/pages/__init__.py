"""One module per dashboard page; each is a Streamlit script run by ``st.navigation``."""
