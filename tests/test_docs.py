"""The docs' examples work: every ```python block of README.md and docs/*.md runs, and every
``anchordiv <command>`` a shell block shows names a real command with real options.

A Python block that cannot run here (it needs a GPU, a user's dataset, a checkpoint) says so with an
HTML comment on the line before its fence, ``<!-- not run: <reason> -->``; the reason is required.
docs/reproduction/ holds generated reports and is not read.
"""
from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from docs_pages import link_targets, markdown_files

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NOT_RUN = re.compile(r"<!--\s*not run\s*:?(.*?)-->\s*\Z", re.DOTALL)
SHELL = ("bash", "sh", "shell", "console")
# `python -m anchordiv CMD`, `.venv/bin/python -m anchordiv CMD` or `anchordiv CMD` (the installed script).
COMMAND = re.compile(r"(?:(?<![\w/.-])python3?\s+-m\s+anchordiv|(?<![\w/.-])anchordiv)\s+([a-z][a-z0-9-]*)")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its file, its position among the file's blocks, its language, its
    code, its first line's number, and the reason it is not run (``None``: it runs; ``""``: the
    comment gave none)."""

    path: Path
    index: int
    language: str
    code: str
    line: int
    not_run: str | None

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.index}"


def code_blocks(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file, in order."""
    text = path.read_text(encoding="utf-8")
    blocks, previous_end = [], 0
    for index, match in enumerate(FENCE.finditer(text)):
        marker = NOT_RUN.search(text[previous_end:match.start()])
        blocks.append(Block(path, index, match.group(1).lower(), match.group(2), text.count("\n", 0, match.start()) + 1,
                            None if marker is None else marker.group(1).strip()))
        previous_end = match.end()
    return blocks


def all_blocks(*languages: str) -> list[Block]:
    return [block for path in markdown_files() for block in code_blocks(path) if block.language in languages]


def shell_commands(code: str) -> list[tuple[str, set[str]]]:
    """``(command, options)`` for every anchordiv command a shell block shows. A line that starts
    with white space, or follows one ending in a backslash, continues the one before (the usage
    synopses); ``#`` after white space starts a comment; ``a | b | c`` right after ``anchordiv``
    lists alternative commands."""
    lines: list[str] = []
    for raw in code.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if lines and (raw[:1].isspace() or lines[-1].endswith("\\")):
            lines[-1] = lines[-1].rstrip("\\") + " " + line.strip()
        elif line:
            lines.append(line)
    found = []
    for line in lines:
        matches = list(COMMAND.finditer(line))
        for number, match in enumerate(matches):
            segment = line[match.end():matches[number + 1].start() if number + 1 < len(matches) else len(line)]
            alternatives = re.match(r"((?:\s*\|\s*[a-z][a-z0-9-]*)*)", segment).group(1)
            for command in [match.group(1), *re.findall(r"[a-z][a-z0-9-]*", alternatives)]:
                found.append((command, set(OPTION.findall(segment))))
    return found


def test_the_readers_see_what_they_should(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "Text.\n\n```python\nprint(1)\n```\n\n<!-- not run: needs a CUDA device -->\n```python\nimport cupy\n```\n"
        "<!-- not run -->\n```python\nx = 1\n```\n\n```bash\n"
        "python -m anchordiv bench --scale N  # a comment --not-an-option\n"
        "python -m anchordiv embed FOLDER --encoder SPEC [--out FILE.npz\n"
        "                          [--engine local|ray]]\n"
        "python -m anchordiv train-builtin | embed-builtin-world | evaluate-builtin\n"
        "OMP_NUM_THREADS=1 .venv/bin/python -m anchordiv reproduce --quick && anchordiv demo\n"
        "streamlit run app/streamlit_app.py -- --data-root /srv\nmake demo\n```\n",
        encoding="utf-8")
    blocks = code_blocks(page)
    assert [(block.language, block.not_run, block.line) for block in blocks] == [
        ("python", None, 3), ("python", "needs a CUDA device", 8), ("python", "", 12), ("bash", None, 16)]
    assert shell_commands(blocks[3].code) == [
        ("bench", {"--scale"}), ("embed", {"--encoder", "--out", "--engine"}), ("train-builtin", set()),
        ("embed-builtin-world", set()), ("evaluate-builtin", set()), ("reproduce", {"--quick"}), ("demo", set())]


@pytest.mark.parametrize("block", all_blocks("python"), ids=lambda block: block.name)
def test_python_example_runs(block, tmp_path, monkeypatch):
    if block.not_run is not None:
        assert len(block.not_run.split()) >= 2, (
            f"{block.name} (line {block.line}) is marked not run without a reason: write <!-- not run: why -->")
        pytest.skip(f"not run: {block.not_run}")
    monkeypatch.chdir(tmp_path)  # a block that writes files writes them here
    namespace = {"__name__": "__docs__"}
    exec(compile(block.code, f"{block.path}:{block.line}", "exec"), namespace)  # noqa: S102 - the docs' own code


def test_every_not_run_comment_stands_before_a_python_block():
    stray = []
    for path in markdown_files():
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"<!--\s*not run.*?-->", text, flags=re.DOTALL):
            if not re.match(r"[ \t]*\n```python\b", text[match.end():]):
                stray.append(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}")
    assert not stray, f"<!-- not run: ... --> must stand on the line before a ```python fence: {stray}"


def shown_commands() -> dict[str, set[str]]:
    """Every command the shell blocks show, with the options shown for it anywhere."""
    commands: dict[str, set[str]] = {}
    for block in all_blocks(*SHELL):
        for command, options in shell_commands(block.code):
            commands.setdefault(command, set()).update(options)
    return commands


def test_shell_blocks_show_real_commands_and_options():
    from anchordiv.cli import main  # here, so that a broken command line fails this test, not the file's collection

    commands = shown_commands()
    assert commands, "no anchordiv command found in the docs' shell blocks"
    problems = []
    for command, options in sorted(commands.items()):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main([command, "--help"])
            except SystemExit as done:
                status = done.code
        if status not in (0, None):
            problems.append(f"`anchordiv {command} --help` exits {status}: {err.getvalue().strip()[-300:]}")
            continue
        known = set(OPTION.findall(out.getvalue()))
        problems += [f"`anchordiv {command}` has no option {option}" for option in sorted(options - known)]
    assert not problems, "the docs' shell blocks show what the command line does not have:\n" + "\n".join(problems)


def heading_slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_links_into_a_page_name_one_of_its_headings():
    broken = []
    for path in markdown_files():
        for target in link_targets(path.read_text(encoding="utf-8")):
            name, _, anchor = target.partition("#")
            if not (name.endswith(".md") and anchor):
                continue
            page = (path.parent / name).resolve()
            headings = re.findall(r"^#+\s+(.*)$", page.read_text(encoding="utf-8"), flags=re.MULTILINE) if page.exists() else []
            if anchor not in {heading_slug(heading) for heading in headings}:
                broken.append(f"{path.relative_to(ROOT)}: {name}#{anchor}")
    assert not broken, f"links to headings that do not exist: {broken}"
