"""Outside text shown as text: what a visitor, a link, a file name, a CSV or an anchor list says is
drawn literally wherever the explorer echoes it, never as markup.

Three renderers see such text, and each reads markup of its own:

* Streamlit's Markdown (alerts, captions, image captions, tables, expander labels): links,
  images, ``$math$``, ``:directives[...]`` and emphasis. :func:`markdown_literal` escapes every
  ASCII punctuation character with a backslash, which CommonMark reads as that character; and
  because GitHub-flavoured Markdown turns bare ``https://…``, ``www.…`` and ``name@host`` into
  links *after* parsing (escapes cannot stop that), a word joiner (U+2060, invisible) follows
  each ``:`` and ``@`` and splits ``www.``, so no such pattern is left to match;
* Plotly's text (tick labels, legends, hover): a few HTML tags, among them ``<a href>``.
  :func:`plotly_literal` escapes ``&``, ``<`` and ``>``;
* matplotlib's mathtext: :mod:`anchordiv.figure` draws with it switched off.

All three first pass the text through :func:`shown`: bytes that were not UTF-8 become U+FFFD,
line breaks and other control characters a space, invisible format characters (right-to-left
overrides, zero-width spaces) a visible ``⟨U+202E⟩``, and a text longer than ``limit`` keeps its
start and end around a note of how much was left out (the end of an error message says its fix).
"""
from __future__ import annotations

import html
import re
import string
import unicodedata

# Enough for a long file name or anchor; a 10,000-character value is cut to this.
SHOWN_CHARS = 300
WORD_JOINER = "\u2060"
_PUNCTUATION = frozenset(string.punctuation)
_WWW = re.compile(r"(?i)(w)(ww\\\.)")
# Control characters and line or paragraph separators become spaces (a line break would start a
# new Markdown block; SVG cannot hold them) and lone surrogates U+FFFD (how Python keeps bytes that
# were not UTF-8; encoders and font renderers refuse them): a table, one C-level pass even over a
# 10,000-character text. The figures draw through it too.
DRAWABLE = {**{code: " " for code in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]},
            **{code: "\ufffd" for code in range(0xD800, 0xE000)}}


def shown(text: object, limit: int = SHOWN_CHARS) -> str:
    """``text`` as one line of plain, visible characters, at most about ``limit`` long.

    Parameters
    ----------
    text : anything; ``str(text)`` is shown.
    limit : the most characters kept; a longer text keeps its first two thirds and last third of
        ``limit`` around ``"… (N characters left out) …"``.

    Returns
    -------
    str : no control or format characters, no lone surrogates.
    """
    value = "".join(_visible_char(char) for char in str(text).translate(DRAWABLE))
    if len(value) <= limit:
        return value
    head, tail = (2 * limit) // 3, limit // 3
    return f"{value[:head]}… ({len(value) - head - tail:,} characters left out) …{value[len(value) - tail:]}"


def _visible_char(char: str) -> str:
    """An invisible format, private-use or unassigned character as its code; any other as itself."""
    return f"⟨U+{ord(char):04X}⟩" if unicodedata.category(char) in ("Cf", "Co", "Cn") else char


def markdown_literal(text: object, limit: int = SHOWN_CHARS) -> str:
    """``text`` (:func:`shown`) written so that Streamlit's Markdown draws exactly it: no link,
    image, math, directive, emphasis, heading or HTML can come out of it."""
    escaped = "".join("\\" + char if char in _PUNCTUATION else char for char in shown(text, limit))
    escaped = escaped.replace("\\:", "\\:" + WORD_JOINER).replace("\\@", "\\@" + WORD_JOINER)
    return _WWW.sub(r"\1" + WORD_JOINER + r"\2", escaped)


def without_joiners(text: object) -> str:
    """``text`` as a person typed or pasted it, less the word joiners :func:`markdown_literal` writes
    (a value copied out of a caption or an error box and pasted back is the value that was shown)
    and less a leading byte-order mark (text pasted from a file that starts with one).

    A value that is not a text (a client may send a text box a list or bytes, and a widget's
    callback reads it before the page checks it) reads as empty: nothing is searched or added for
    it, and the page's check of the text box names it (``app/widget_checks.py``)."""
    if not isinstance(text, str):
        return ""
    return text.removeprefix("\ufeff").replace(WORD_JOINER, "")


def plotly_literal(text: object, limit: int = SHOWN_CHARS) -> str:
    """``text`` (:func:`shown`) for Plotly's labels and hover text, which read ``<a>``, ``<b>``, ``<br>``."""
    return html.escape(shown(text, limit), quote=False)
