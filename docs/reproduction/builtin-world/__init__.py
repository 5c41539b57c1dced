"""The shipped reproduction report on the built-in world, installed as the data package
``anchordiv.report_data`` (see ``pyproject.toml``); read it through :func:`anchordiv.resources.report_dir`."""
