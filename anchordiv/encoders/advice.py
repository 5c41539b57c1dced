"""Refusals whose advice names the loader's own arguments, in the words of whoever shows them.

A message such as "pass pretrained=/path/to/checkpoint, or allow the download with
allow_download=True" is right for code that calls :func:`~anchordiv.encoders.load_encoder`, and
wrong on the command line, whose options are ``--pretrained`` and ``--allow-download``. So such a
message is kept as parts (:class:`AdvisedError`): text, and each argument it names as an
:class:`Argument`. ``str()`` says the arguments as keyword arguments (:func:`keyword_words`, the
library's words); :meth:`AdvisedError.say` says them in other words, e.g. as the command line's
options (:func:`option_words`), from the one message. Pages that show these errors in their own
words (the explorer's) read ``str()`` as before.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Argument:
    """An argument of the loader a message names: ``name`` (the keyword, e.g. ``"pretrained"``),
    set to ``value`` (as typed), to a stand-in such as ``"/path/to/checkpoint"`` (``stand_in``:
    written as it is, never quoted), or a switch turned on (``value`` ``None``:
    ``allow_download``)."""

    name: str
    value: str | None = None
    stand_in: bool = False


# How a message says an argument: keyword_words (the library's), option_words (the command line's), ...
Words = Callable[[Argument], str]


def keyword_words(argument: Argument) -> str:
    """The library's words: ``pretrained='laion2b_s34b_b79k'``, ``pretrained=/path/to/checkpoint``,
    ``allow_download=True``."""
    if argument.value is None:
        return f"{argument.name}=True"
    return f"{argument.name}={argument.value if argument.stand_in else repr(argument.value)}"


def option_words(argument: Argument) -> str:
    """The command line's words: ``--pretrained laion2b_s34b_b79k``, ``--pretrained PATH``,
    ``--allow-download`` (a value quoted as a shell would need it)."""
    option = "--" + argument.name.replace("_", "-")
    if argument.value is None:
        return option
    return f"{option} {argument.value if argument.stand_in else shlex.quote(argument.value)}"


class AdvisedError(ValueError):
    """A ``ValueError`` whose message names the loader's arguments: ``parts`` are text and
    :class:`Argument` s, said by ``str()`` in the library's words (:func:`keyword_words`) and by
    :meth:`say` in any others.

    Built from one string, it is a plain message (as :class:`ValueError` is), so subclasses such as
    :class:`~anchordiv.encoders.base.CheckpointNotFound` take either."""

    def __init__(self, *parts: str | Argument):
        self.parts = parts
        super().__init__(self.say(keyword_words))

    def say(self, words: Words) -> str:
        """The message with each argument said by ``words``."""
        return "".join(part if isinstance(part, str) else words(part) for part in self.parts)


def said(error: BaseException, words: Words) -> str:
    """``error``'s message with the arguments it names said by ``words`` (``str(error)`` for any
    error that names none)."""
    return error.say(words) if isinstance(error, AdvisedError) else str(error)


# Stand-ins the messages use for a value to fill in.
PRETRAINED_PATH = Argument("pretrained", "/path/to/checkpoint", stand_in=True)
ALLOW_DOWNLOAD = Argument("allow_download")


def pretrained(value: str) -> Argument:
    """``pretrained`` set to ``value`` (a tag or a path as given)."""
    return Argument("pretrained", str(value))


def pretrained_stand_in(text: str) -> Argument:
    """``pretrained`` set to a stand-in, e.g. ``"/path/to/open_clip_model.safetensors"`` or ``"TAG"``."""
    return Argument("pretrained", text, stand_in=True)
