"""The built-in model's weights and the world embeddings, installed as the data package
``anchordiv.assets`` (see ``pyproject.toml``); read them through :func:`anchordiv.resources.assets_dir`."""
