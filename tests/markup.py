"""What Streamlit's Markdown would make of a text, judged without a browser: :func:`active_markup`
lists every construct in it that would render as something other than its characters.

Streamlit renders alerts, captions, image captions, static tables and expander labels with
CommonMark, GitHub's extensions (bare ``https://…``, ``www.…`` and ``name@host`` become links
after parsing), remark-math (``$…$``) and directives (``:red[…]``, ``:material/icon:``, emoji
``:smile:``). This parses with markdown-it (CommonMark, escapes kept as their own tokens) and
applies GitHub's autolink rule, the math and the directive markers to the unescaped text, so it
judges the text as those renderers do, independently of how the app escaped it. The browser test
checks the same in real Chromium.
"""
from __future__ import annotations

import re
import unicodedata

from markdown_it import MarkdownIt

_PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"]).disable("text_join")
_AUTOLINK = re.compile(r"(?i)https?://|www\.|mailto:|xmpp:")
_EMAIL = re.compile(r"[-.\w+]+@[-\w]+(?:\.[-\w]+)+")
_DIRECTIVE = re.compile(r"(?<![\w:]):[A-Za-z]")
_FORMAT_BLOCKS = {"heading_open", "bullet_list_open", "ordered_list_open", "blockquote_open"}
_FORMAT_BLOCK_ENDS = {name.replace("_open", "_close") for name in _FORMAT_BLOCKS}
_ACTIVE_TOKENS = {"link_open": "a link", "image": "an image", "html_inline": "HTML", "html_block": "HTML"}


def active_markup(body: str, marker: str = "evil") -> list[str]:
    """Each construct of ``body`` that would not render as its own characters, described: links,
    images, HTML, math and directives anywhere; formatting (emphasis, code, headings, lists,
    quotes) where it holds ``marker``, the word every hostile text of the tests carries (the
    app's own Markdown may format its own words)."""
    found, blocks = [], []
    for block in _PARSER.parse(body):
        if block.type in _ACTIVE_TOKENS:
            found.append(f"{_ACTIVE_TOKENS[block.type]}: {block.content[:60]!r}")
        if block.type in ("code_block", "fence") and marker in block.content:
            found.append(f"formatting ({block.type}): {block.content[:60]!r}")
        if block.type in _FORMAT_BLOCKS:
            blocks.append(block.type)
        elif block.type in _FORMAT_BLOCK_ENDS and blocks:
            blocks.pop()
        elif block.type == "inline" and blocks and marker in block.content:
            found.append(f"formatting ({blocks[-1]}): {block.content[:60]!r}")
        formatting = []
        for token in block.children or []:
            if token.type in _ACTIVE_TOKENS:
                found.append(f"{_ACTIVE_TOKENS[token.type]}: {token.content[:60]!r}")
            elif token.type.endswith("_open"):
                formatting.append(token.type)
            elif token.type.endswith("_close") and formatting:
                formatting.pop()
            elif token.type == "code_inline" and marker in token.content:
                found.append(f"formatting (code): {token.content[:60]!r}")
            elif token.type == "text":
                found.extend(_in_plain_text(token.content))
                if formatting and marker in token.content:
                    found.append(f"formatting ({formatting[-1]}): {token.content[:60]!r}")
    return found


def _in_plain_text(text: str) -> list[str]:
    """What the renderers' text rules would take from ``text`` (unescaped characters only)."""
    found = [f"a bare link: {text[m.start():m.start() + 40]!r}" for m in _AUTOLINK.finditer(text)
             if _may_start_link(text, m.start())]
    found += [f"an e-mail link: {m.group()[:40]!r}" for m in _EMAIL.finditer(text) if _may_start_link(text, m.start())]
    if "$" in text:
        found.append(f"math: {text[:60]!r}")
    found += [f"a directive: {text[m.start():m.start() + 30]!r}" for m in _DIRECTIVE.finditer(text)]
    return found


def _may_start_link(text: str, start: int) -> bool:
    """GitHub's rule: a bare link starts the text or follows white space or punctuation."""
    if start == 0:
        return True
    before = text[start - 1]
    return before.isspace() or unicodedata.category(before).startswith("P") or before in "*_~("


def plain(body: str) -> str:
    """The characters a Markdown ``body`` made by the app shows (escapes and word joiners removed),
    for tests that look for words in it."""
    return re.sub(r"\\(.)", r"\1", body).replace("\u2060", "")
