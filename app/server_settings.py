"""The explorer's Streamlit server settings: one table for every way the server starts
(``anchordiv demo``, ``make demo``, the browser benchmark and the browser tests), passed as
command-line flags so that they hold from any folder, an installed package included.

A shared demo shows visitors messages, never tracebacks or server internals.
"""
from __future__ import annotations

import ipaddress
import re
import sys
from pathlib import Path
from typing import Sequence

# The explorer's entry script, in the app's folder (anchordiv.resources.app_dir()).
EXPLORER_SCRIPT = "streamlit_app.py"
EXPLORER_LAUNCHER = "anchordiv.app.serve"  # Streamlit's command line, with what must precede the first request

SETTINGS = {
    # Errors that escape the app's own error boxes show as a bare "error" notice, without the
    # exception, its message or a stack trace.
    "client.showErrorDetails": "none",
    "client.toolbarMode": "viewer",
    "server.headless": "true",
    # Megabytes. The image loader refuses files over 25 MB (anchordiv.images.MAX_BYTES) with a
    # message; the server refuses anything much larger before it is even received.
    "server.maxUploadSize": "25",
    "server.runOnSave": "false",
    "browser.gatherUsageStats": "false",
    # Streamlit runs gc.collect(2) after every script run by default. With torch, transformers and
    # pandas loaded a full collection is slow (docs/benchmarks.md), and every run would wait for it;
    # Python's own generational collector still runs as usual.
    "runner.postScriptGC": "false",
}


# A host name (RFC 1123): dot-separated labels of letters, digits and inner hyphens, 253 characters
# at most, the last not all digits (999.1.1.1 is a mistyped address, not a name).
HOST_NAME_CHARS = 253
HOST_NAME = re.compile(r"((?!-)[A-Za-z0-9-]{1,63}(?<!-)\.)*(?!-)(?![0-9]+$)[A-Za-z0-9-]{1,63}(?<!-)")

# Read by Streamlit at the start of every run, so a server started without the flags above (a bare
# `streamlit run app/streamlit_app.py`) takes it from the entry script, from its first run on:
# visitors see no "Deploy" menu. (client.showErrorDetails is left to the flags: set from the
# script, it would also hide an app exception's details from the tests, which run the app in
# their own process.)
SCRIPT_APPLIED = ("client.toolbarMode",)


def apply_unset_settings() -> bool:
    """Set the options of :data:`SCRIPT_APPLIED` that the server's command line, environment and
    config files left unset to :data:`SETTINGS` (Streamlit's own config module: ``st.set_option``
    refuses these); whether any was set now (then only on a bare server's first run). A value the
    operator set stays."""
    from streamlit import config

    unset = [name for name in SCRIPT_APPLIED if not config.is_manually_set(name)]
    for name in unset:
        config.set_option(name, SETTINGS[name], where_defined="anchordiv.app.server_settings")
    return bool(unset)


def streamlit_flags() -> list[str]:
    """:data:`SETTINGS` as ``streamlit run`` options, ``--section.name=value``."""
    return [f"--{name}={value}" for name, value in SETTINGS.items()]


def server_address(text: str) -> str:
    """``text`` as the one address a server listens on (Streamlit's ``server.address``): an IPv4 or
    IPv6 address (``127.0.0.1``, ``::1``) or a host name (``localhost``), as typed less surrounding
    spaces. Raises ``ValueError`` saying what is accepted for anything else (an empty text, a
    port, a URL, more than :data:`HOST_NAME_CHARS` characters)."""
    address = str(text).strip()
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        pass
    if len(address) <= HOST_NAME_CHARS and HOST_NAME.fullmatch(address):
        return address
    shown = address if len(address) <= 60 else address[:60] + "…"
    raise ValueError(f"{shown!r} is not an address to listen on; give an IP address such as 127.0.0.1 (this "
                     "machine only) or ::1, or a host name such as localhost")


def streamlit_argv(script: str | Path, app_args: Sequence[str] = (), port: int | None = None,
                   extra: Sequence[str] = (), address: str | None = None) -> list[str]:
    """The command line that serves ``script`` with this Python's Streamlit and :data:`SETTINGS`
    (headless, no error details for visitors, the upload cap), on ``port`` (``None``: Streamlit's
    default) and ``address`` (:func:`server_address`; ``None``: Streamlit's default, every
    address of the machine), with ``extra`` ``streamlit run`` options, passing ``app_args`` to the script.
    The explorer (:data:`EXPLORER_SCRIPT`) is started through :data:`EXPLORER_LAUNCHER`, any other
    script (the benchmarks' reference app) by ``python -m streamlit`` itself."""
    server = [f"--server.port={port}"] if port is not None else []
    if address is not None:
        server.append(f"--server.address={server_address(address)}")
    passed = ["--", *app_args] if app_args else []
    launcher = EXPLORER_LAUNCHER if Path(script).name == EXPLORER_SCRIPT else "streamlit"
    return [sys.executable, "-m", launcher, "run", str(script), *streamlit_flags(), *server, *extra, *passed]
