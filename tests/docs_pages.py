"""The repository's Markdown pages and the links in them, as tests/test_docs.py and
tests/test_repo_hygiene.py both read them."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def markdown_files() -> list[Path]:
    """README.md and docs/*.md; docs/reproduction/ holds generated reports and is not checked."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def link_targets(text: str) -> list[str]:
    """Inline link and image targets ``[text](target)`` and reference definitions ``[x]: target``."""
    inline = re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", text)
    references = re.findall(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", text, flags=re.MULTILINE)
    return inline + references
