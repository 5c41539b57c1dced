"""The shipped emoji data, installed as the data package ``anchordiv.emoji_data`` (see
``pyproject.toml``); read it through :func:`anchordiv.resources.emoji_dir`."""
