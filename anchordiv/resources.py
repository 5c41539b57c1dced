"""Where the files shipped with anchordiv are, in an editable install and in an installed wheel.

The folders stay at the top of the repository (``assets/``, ``data/emoji/``,
``docs/reproduction/builtin-world/``, ``app/``); ``pyproject.toml`` maps each one to a package
(``anchordiv.assets``, ``anchordiv.emoji_data``, ``anchordiv.report_data``, ``anchordiv.app``), so
a wheel carries them as package data and an editable install's import finder points those package
names back at the repository folders. Each function here asks :mod:`importlib.resources` for its
package's folder.

The package must be installed on a file system (a wheel unpacked into ``site-packages`` or an
editable install), not imported from a zip archive: its readers take :class:`pathlib.Path`\\ s
(memory maps, Streamlit's script path), and a zipped package raises :class:`RuntimeError` here.
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def assets_dir() -> Path:
    """The built-in model's weights and the world embeddings, each with the manifest that vouches for it."""
    return _package_folder("anchordiv.assets")


def emoji_dir() -> Path:
    """The shipped emoji data: ``index.csv``, one sprite atlas per vendor and ``manifest.json``."""
    return _package_folder("anchordiv.emoji_data")


def report_dir() -> Path:
    """The shipped reproduction report on the built-in world: ``report.md`` with its figures and tables."""
    return _package_folder("anchordiv.report_data")


def app_dir() -> Path:
    """The Streamlit explorer's folder, holding ``streamlit_app.py``."""
    return _package_folder("anchordiv.app")


def components_dir() -> Path:
    """The browser components' plain HTML, CSS and JavaScript (``app/components/``): the p player,
    which the explorer's page and the notebook widget (:mod:`anchordiv.widgets`) both draw."""
    return app_dir() / "components"


def _package_folder(package: str) -> Path:
    """The folder of ``package`` on the file system; :class:`RuntimeError` when it is not on one."""
    folder = files(package)
    if not isinstance(folder, Path):
        raise RuntimeError(f"{package} is not a folder on the file system ({folder!r}); install anchordiv "
                           "unzipped (pip install does) so its shipped files can be read as paths")
    return folder
