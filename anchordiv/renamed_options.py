"""Command-line options under a new name that still answer to their old one, so that scripts
written for the old name keep working: the command line's and the explorer's launch options share
it (``--encoder``, formerly ``--model``).

The old name is hidden: ``--help``, the usage line and every refusal name the new one only."""
from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence


def renamed_note(prog: str, old: str, new: str) -> str:
    """The one line a use of the old name prints on stderr."""
    return f"{prog}: {old} is now called {new} ({old} still works for now)"


def say_on_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class _RenamedOption(argparse.Action):
    """A single-value option that its former name sets too; a use of the former name is said by ``say``."""

    def __init__(self, option_strings: Sequence[str], dest: str, old: str = "",
                 say: Callable[[str], None] | None = None, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.old, self.say = old, say

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string == self.old and self.say is not None:
            self.say(renamed_note(parser.prog, self.old, self.option_strings[0]))
        setattr(namespace, self.dest, values)


def add_renamed_option(parser: argparse.ArgumentParser, new: str, old: str,
                       say: Callable[[str], None] | None = say_on_stderr, **kwargs) -> argparse.Action:
    """Option ``new`` (``add_argument``'s ``kwargs``: ``required``, ``default``, ``help``, ...),
    which ``old`` sets as well.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The parser to add it to.
    new, old : str
        The option's name and its former one, e.g. ``"--encoder"`` and ``"--model"``.
    say : callable or None
        Called with :func:`renamed_note`'s line on each use of ``old`` (default: printed on
        stderr); ``None`` reads ``old`` silently (a server that parses its options on every run).

    Returns
    -------
    argparse.Action
        The option. One action for both names, so that ``required=True`` is met by either.
    """
    action = parser.add_argument(new, old, action=_RenamedOption, old=old, say=say, **kwargs)
    # The parser still reads ``old`` (it looks options up by every name it was given); --help, the
    # usage line and argparse's refusals name an action by these, so they say the new name only.
    action.option_strings.remove(old)
    return action
