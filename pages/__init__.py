"""Dashboard pages (run by ``app.py`` through ``st.navigation``); ``pages.common`` holds what they share."""
