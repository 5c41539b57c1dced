"""The explorer's launch options, read in one place: what the server may open and download, and
the encoder and image folder it starts on.

They come after ``--`` on the ``anchordiv demo`` (or ``streamlit run``) line, or from the
environment, and are fixed for the life of the server:

* ``--data-root DIR`` (repeatable), ``--allow-any-path``: which files it may open
  (:class:`~anchordiv.explorer.paths.DataRoots`);
* ``--allow-download`` (or ``ANCHORDIV_ALLOW_DOWNLOAD=1``): visitors may have the server fetch a
  model's weights from its hub. Off unless given: a server offering its own data folders downloads
  nothing nobody asked it to (``make demo`` gives it);
* ``--encoder SPEC`` / ``--pretrained TAG``, ``--folder DIR`` / ``--labels CSV``: what the sidebar
  shows first (``anchordiv demo --encoder ... --folder ...`` embeds the folder, then passes them);
  ``--encoder``'s former name ``--model`` is still read, silently (the server reads these options
  on every run; ``anchordiv demo --model`` says it is ``--encoder`` now);
* ``--device DEVICE``: where the server encodes, fits, ranks and lays out maps (``cpu``, ``cuda``,
  ``cuda:1``; default :func:`anchordiv.device.default_device`, CUDA when available).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..renamed_options import add_renamed_option
from .paths import ANY_PATH_VARIABLE, ROOTS_VARIABLE, DataRoots, truthy

DOWNLOAD_VARIABLE = "ANCHORDIV_ALLOW_DOWNLOAD"
__all__ = ["ANY_PATH_VARIABLE", "DOWNLOAD_VARIABLE", "LaunchOptions", "ROOTS_VARIABLE"]


@dataclass(frozen=True)
class LaunchOptions:
    """What a server was started with (see the module docstring)."""

    roots: DataRoots = DataRoots()
    allow_download: bool = False
    encoder: str | None = None
    pretrained: str | None = None
    folder: str | None = None
    labels_csv: str | None = None
    device: str | None = None

    @classmethod
    def from_launch(cls, argv: Sequence[str], environ: Mapping[str, str]) -> "LaunchOptions":
        """The options in ``argv`` (the script's arguments; others are ignored) and ``environ``.
        A data root that is not a folder, an encoder spec that cannot be parsed, or a device torch does
        not know or this machine lacks, is a ``ValueError`` naming it, so a typo shows at start-up."""
        parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        parser.add_argument("--allow-download", action="store_true")
        add_renamed_option(parser, "--encoder", "--model", say=None)
        for option in ("--pretrained", "--folder", "--labels", "--device"):
            parser.add_argument(option)
        options, _ = parser.parse_known_args(list(argv))
        if options.encoder is not None:
            from ..encoders.specs import parse_model_spec

            parse_model_spec(options.encoder, options.pretrained)
        if options.device is not None:
            from ..device import resolve_device

            resolve_device(options.device, "--device")
        roots = DataRoots.from_launch(argv, environ)
        if options.labels is not None:  # the owner named this one file: it opens, its folder does not
            roots = roots.with_file(options.labels, "--labels")
        return cls(roots,
                   options.allow_download or truthy(environ.get(DOWNLOAD_VARIABLE, "")),
                   options.encoder, options.pretrained, options.folder, options.labels, options.device)
