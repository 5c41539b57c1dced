"""The parser every command shares: argparse refusals as :class:`UsageError`, the number types, and
the options several commands take (defined here once, so each says and checks the same).

Every numeric option is bounded where it is declared, ``type=integer(low, high)`` or
``type=number(low, high)``: a value out of range, ``nan``, ``inf`` or a word is refused by argparse
as one line naming the option, its bounds and what to pass, before any work starts."""
from __future__ import annotations

import argparse
from decimal import Decimal, InvalidOperation
from typing import Callable

from ..figure.limits import SCALE_HIGH, SCALE_LOW
from ..renamed_options import add_renamed_option

ENCODER_FORMS = "builtin, open_clip:<arch> (e.g. open_clip:ViT-B-32 with --pretrained) or open_clip:hf-hub:ORG/REPO"
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


def integer(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` to ``high``, both allowed.

    Parameters
    ----------
    low, high : int
        The smallest and the largest value the option takes.

    Returns
    -------
    callable
        ``parse(text) -> int``. Written as ``12``, ``1_000`` or ``1e3``; anything else, or a value
        out of range, raises :class:`argparse.ArgumentTypeError`, which argparse reports as one line
        naming the option.
    """
    wanted = f"a whole number from {low} to {high}"

    def parse(text: str) -> int:
        value = _checked(text, low, high, wanted)
        if value != value.to_integral_value():
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not a whole number; pass {wanted}")
        return int(value)
    return parse


def number(low: float, high: float, low_open: bool = False) -> Callable[[str], float]:
    """An argparse ``type``: a finite number from ``low`` (excluded when ``low_open``) to ``high``.

    Parameters
    ----------
    low, high : float
        The bounds; ``high`` is allowed, ``low`` too unless ``low_open``.
    low_open : bool
        Whether ``low`` itself is refused (a scale must be above 0).

    Returns
    -------
    callable
        ``parse(text) -> float``. Text that is not a finite number (``nan`` and ``inf`` are not), or
        one out of range, raises :class:`argparse.ArgumentTypeError`, reported naming the option.
    """
    wanted = (f"a number above {_bound(low)} and at most {_bound(high)}" if low_open
              else f"a number from {_bound(low)} to {_bound(high)}")

    def parse(text: str) -> float:
        value = float(_checked(text, low, high, wanted))
        if low_open and value == low:  # the float, not the text: 1e-999 is above 0 but rounds to it
            raise argparse.ArgumentTypeError(f"{_shown(text)} is out of range; pass {wanted}")
        return value
    return parse


def _checked(text: str, low: float, high: float, wanted: str) -> Decimal:
    """``text`` as an exact number from ``low`` to ``high``, else a refusal saying what it is instead
    and, as ``wanted``, what to pass.

    Decimal, not float: ``1e400`` is out of range rather than infinite, and a 5,000-digit number is
    compared exactly rather than refused as too long for ``int``."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is not a number; pass {wanted}") from None
    if not value.is_finite():
        raise argparse.ArgumentTypeError(f"{_shown(text)} is not a finite number; pass {wanted}")
    if not Decimal(str(low)) <= value <= Decimal(str(high)):  # str: 0.1 as written, not its binary float
        raise argparse.ArgumentTypeError(f"{_shown(text)} is out of range; pass {wanted}")
    return value


def _shown(text: str, most: int = 40) -> str:
    """``text`` quoted for a message, cut to ``most`` characters (an argument can be megabytes long)."""
    return repr(text if len(text) <= most else text[:most] + "…")


def _bound(value: float) -> str:
    """A bound as typed: ``1000`` rather than ``1000.0`` or ``1e+03``."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# The number types several commands share, each bound declared once.
SEED = integer(0, 2**32 - 1)  # 32 bits: what every seeded library here takes (torch's seed overflows past 64)
FRACTION = number(0, 1)  # a mix or a share, e.g. --memory-weight, --name-smoothing, a sweep's p
# A logit scale s, bounded as a figure column's s= is (anchordiv.figure.limits, where the bounds are
# justified): below 0.1 float32 ranks by rounding error, and 1000 is ten times CLIP's 100.
SCALE = number(SCALE_LOW, SCALE_HIGH)


def option_name(name: str) -> str:
    """The option that sets field ``name``: ``naive_queries`` -> ``--naive-queries``."""
    return "--" + name.replace("_", "-")


def labels_for(args: argparse.Namespace) -> Callable[[str], str]:
    """Field name -> what to call it in a message: its option where this command has one."""
    return lambda name: option_name(name) if hasattr(args, name) else name


def add_encoder_option(parser: argparse.ArgumentParser, **kwargs) -> None:
    """``--encoder SPEC`` (``args.encoder``; ``kwargs`` as ``add_argument`` takes them), also read
    under its former name ``--model``, which says on stderr that it is ``--encoder`` now."""
    add_renamed_option(parser, "--encoder", "--model", metavar="SPEC", **kwargs)


def add_encoder_options(parser: argparse.ArgumentParser, required: bool = False) -> None:
    """``--encoder`` (required, or ``builtin`` by default), ``--pretrained`` and ``--allow-download``."""
    if required:
        add_encoder_option(parser, required=True, help=f"encoder spec: {ENCODER_FORMS}")
    else:
        add_encoder_option(parser, default="builtin", help=f"encoder spec (default builtin): {ENCODER_FORMS}")
    parser.add_argument("--pretrained", help="with open_clip:<arch>: a checkpoint file or an open_clip pretrained tag "
                                             "(e.g. laion2b_s34b_b79k)")
    parser.add_argument("--allow-download", action="store_true", dest="allow_download",
                        help="download the encoder's missing files from the Hugging Face hub ($HF_ENDPOINT) or its "
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
    # A limit above the split's size takes the whole split (19,728 images in all); a million is plenty.
    parser.add_argument(limit, type=integer(1, 10**6),
                        help=f"{note}only the first N images of that split (default: all)")


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
