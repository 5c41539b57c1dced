"""The Streamlit explorer, installed as ``anchordiv.app``; ``anchordiv.resources.app_dir()`` is its folder."""
