"""The parser every command shares: argparse refusals as :class:`UsageError`, the number types, and
the options several commands take (defined here once, so each says and checks the same)."""
from __future__ import annotations

import argparse
import math
from typing import Callable

MODEL_FORMS = "builtin, open_clip:<arch> (e.g. open_clip:ViT-B-32 with --pretrained) or open_clip:hf-hub:ORG/REPO"
DEVICE_HELP = "cpu or cuda (default: CUDA when available)"
SPLITS = ("all", "train", "heldout")


class UsageError(ValueError):
    """A command line argparse refused (unknown option, bad number, missing argument), raised
    instead of argparse's exit so that :func:`anchordiv.cli.main` reports it like any other ``ValueError``."""

    def __init__(self, prog: str, message: str):
        super().__init__(f"{message} (see `{prog} --help`)")
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` that raises :class:`UsageError` instead of exiting."""

    def error(self, message: str):
        raise UsageError(self.prog, message)


def integer(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer ``>= minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}; got {text!r}")
        return value
    return parse


def number(low: float, high: float = math.inf, low_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number from ``low`` (excluded when ``low_open``) to ``high``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < low or value > high or (low_open and value == low):
            bound = (f"> {low:g}" if low_open else f">= {low:g}") + (f" and <= {high:g}" if math.isfinite(high) else "")
            raise argparse.ArgumentTypeError(f"must be a finite number {bound}; got {text!r}")
        return value
    return parse


COUNT, NATURAL, POSITIVE, FRACTION = integer(1), integer(0), number(0, low_open=True), number(0, 1)


def option_name(name: str) -> str:
    """The option that sets field ``name``: ``naive_queries`` -> ``--naive-queries``."""
    return "--" + name.replace("_", "-")


def labels_for(args: argparse.Namespace) -> Callable[[str], str]:
    """Field name -> what to call it in a message: its option where this command has one."""
    return lambda name: option_name(name) if hasattr(args, name) else name


def add_encoder_options(parser: argparse.ArgumentParser, required: bool = False) -> None:
    """``--model`` (required, or ``builtin`` by default), ``--pretrained`` and ``--allow-download``."""
    if required:
        parser.add_argument("--model", required=True,
                            help=f"encoder spec: {MODEL_FORMS}")
    else:
        parser.add_argument("--model", default="builtin", help=f"encoder spec (default builtin): {MODEL_FORMS}")
    parser.add_argument("--pretrained", help="with open_clip:<arch>: a checkpoint file or an open_clip pretrained tag "
                                             "(e.g. laion2b_s34b_b79k)")
    parser.add_argument("--allow-download", action="store_true", dest="allow_download",
                        help="download the model's missing files from the Hugging Face hub ($HF_ENDPOINT) or its "
                             "published URL into the caches, verified (off: nothing is downloaded, and missing "
                             "files are named with where to copy them)")


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """``--device``: where the model or the benchmark runs."""
    parser.add_argument("--device", help=DEVICE_HELP)


def add_json_option(parser: argparse.ArgumentParser, what: str = "figures") -> None:
    """``--json``: also write the command's ``what`` to a JSON file."""
    parser.add_argument("--json", help=f"also write the {what} to this JSON file")


def add_labels_option(parser: argparse.ArgumentParser, note: str = "") -> None:
    """``--labels``: a CSV naming each image (by path or filename) and its label columns."""
    parser.add_argument("--labels", help=f"{note}a CSV with a path (or filename) column and label columns")


def add_world_options(parser: argparse.ArgumentParser, split: str, limit: str, shows: str = "to search",
                      note: str = "") -> None:
    """The emoji world's split (option ``split``, one of :data:`SPLITS`) the command ``shows``, and a
    cap on its images (option ``limit``); ``note`` opens each help text (``"with --browser: "``)."""
    parser.add_argument(split, choices=list(SPLITS), default="all", help=f"{note}the emoji world split {shows} (default all)")
    parser.add_argument(limit, type=COUNT, help=f"{note}only the first N images of that split (default: all)")


def add_weights_option(parser: argparse.ArgumentParser, note: str = "") -> None:
    """``--weights``: the folder with the built-in model's weights and manifest, by default the
    shipped ``assets/`` (checked by :func:`~anchordiv.cli.checks.check_weights`); ``note`` follows
    the help text's first words."""
    from ..resources import assets_dir

    parser.add_argument("--weights", default=str(assets_dir()),
                        help=f"folder with the weights and manifest{note} (default: assets/)")


def add_logging_options(parser: argparse.ArgumentParser) -> None:
    """``--quiet`` (warnings only on stderr) and ``--verbose`` (also debug messages)."""
    chatter = parser.add_mutually_exclusive_group()
    chatter.add_argument("-q", "--quiet", action="store_const", const=-1, default=0, dest="verbosity",
                         help="no progress on stderr, only warnings and errors")
    chatter.add_argument("-v", "--verbose", action="store_const", const=1, dest="verbosity",
                         help="also debug messages on stderr")
