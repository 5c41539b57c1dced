"""Repository hygiene: modules keep each other's private names private, and the docs point at files
that exist."""
import ast
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest
from docs_pages import link_targets, markdown_files

ROOT = Path(__file__).resolve().parent.parent
PYTHON_FOLDERS = ("anchordiv", "app", "tests")
# Backticked tokens starting with one of these are read as repository paths.
TOP_LEVEL = ("anchordiv/", "app/", "docs/", "tests/", "data/", "assets/", "scripts/", ".ci/")


def is_private(name: str) -> bool:
    """``_name`` or ``__name`` but not a dunder such as ``__version__``."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(source: str, filename: str) -> list[str]:
    """Where a module imports or reads another module's private name, as ``line: what``.

    Flags ``from X import _name``, ``import X._name`` and ``module._name`` (also ``module.a._name``)
    where ``module`` is bound by an import statement. A private *module* used for its public names
    (``from ._validation import as_matrix``) is the package-private convention and allowed.
    """
    tree = ast.parse(source, filename)
    imported, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if is_private(alias.name.split(".")[-1]):
                    found.append(f"{node.lineno}: import {alias.name}")
                imported.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if is_private(alias.name):
                    found.append(f"{node.lineno}: from {'.' * node.level}{node.module or ''} import {alias.name}")
                imported.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in imported:
                found.append(f"{node.lineno}: {'.'.join([value.id, *reversed(chain)])}")
    return sorted(found, key=lambda use: int(use.split(":")[0]))


def python_files() -> list[Path]:
    return sorted(path for folder in PYTHON_FOLDERS for path in (ROOT / folder).rglob("*.py"))


def test_the_private_name_check_sees_what_it_should():
    source = (
        "import os\nimport pkg._hidden\nimport anchordiv.search as search_module\n"
        "from ._validation import as_matrix\nfrom .base import _helper, public\nfrom . import _module\n"
        "from __future__ import annotations\n"
        "os._exit(0)\nsearch_module._mask_excluded\nsearch_module.torch._C\nos.path.__name__\n"
        "self._cache\nvalue = object()\nvalue._private\n"
    )
    assert private_uses(source, "example.py") == [
        "2: import pkg._hidden", "5: from .base import _helper", "6: from . import _module",
        "8: os._exit", "9: search_module._mask_excluded", "10: search_module.torch._C",
    ]


def test_no_module_uses_another_modules_private_names():
    assert python_files(), "no Python files found"
    violations = [f"{path.relative_to(ROOT)}:{use}" for path in python_files()
                  for use in private_uses(path.read_text(encoding="utf-8"), str(path))]
    assert not violations, "private names used across modules (make them public or keep them inside):\n" + \
        "\n".join(violations)


# ---- the docs point at files that exist -----------------------------------------------------------------

def backticked_paths(text: str) -> list[str]:
    """Tokens inside inline code spans that start with a top-level folder of the repository and are
    not patterns or placeholders (no ``*``, ``<`` or ``{``)."""
    prose = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.MULTILINE | re.DOTALL)  # drop fenced blocks
    paths = []
    for span in re.findall(r"(?<!`)`([^`\n]+)`(?!`)", prose):
        for token in span.split():
            token = token.strip("()[],;:'\"")
            if token.startswith(TOP_LEVEL) and not any(mark in token for mark in "*<{"):
                paths.append(token)
    return paths


def is_relative(target: str) -> bool:
    return not re.match(r"^(?:[a-z][a-z0-9+.-]*:|//|#)", target, flags=re.IGNORECASE)


def resolves(path: Path) -> bool:
    """Exists in the work tree and is not ignored by git (a build output would pass here and fail on
    a fresh checkout)."""
    if not path.exists():
        return False
    ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", str(path)], capture_output=True)
    return ignored.returncode == 1


def test_the_link_and_path_readers_see_what_they_should():
    text = (
        "See [the design](docs/design.md#4-retrieval) and ![shot](docs/explorer.png \"title\"),\n"
        "[web](https://example.com/a.md), [anchor](#usage), [mail](mailto:a@b.c).\n"
        "[ref]: anchordiv/search.py\n"
        "Paths: `anchordiv/models/registry.py`, `python -m x --out docs/reproduction/run`, "
        "`~/.cache/anchordiv`, `reports/x`, `anchordiv/*.py`, `data/<name>/`, `docs/{a,b}.md`, `anchordiv.models`.\n"
        "```\nanchordiv/in/a/fence.py `tests/nor/this.py`\n```\n"
    )
    assert [target for target in link_targets(text) if is_relative(target)] == [
        "docs/design.md#4-retrieval", "docs/explorer.png", "anchordiv/search.py"]
    assert backticked_paths(text) == ["anchordiv/models/registry.py", "docs/reproduction/run"]


@pytest.mark.parametrize("markdown", markdown_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_and_backticked_paths_resolve(markdown):
    text = markdown.read_text(encoding="utf-8")
    broken = []
    for target in link_targets(text):
        if is_relative(target):
            relative = unquote(target.split("#")[0].split("?")[0])
            if relative and not resolves((markdown.parent / relative).resolve()):
                broken.append(f"link {target}")
    for token in backticked_paths(text):
        if not resolves(ROOT / token):
            broken.append(f"path `{token}`")
    assert not broken, f"{markdown.relative_to(ROOT)} points at files that do not exist: {broken}"


@pytest.mark.parametrize("pattern", [
    r"\.\./" + "shared",  # a path out of the repository (written split so this file does not match itself)
    "DESIGN" + r"\.md",  # the old name of docs/design.md
])
def test_no_tracked_file_mentions(pattern):
    result = subprocess.run(["git", "-C", str(ROOT), "grep", "-n", "-e", pattern], capture_output=True, text=True)
    assert result.returncode == 1, f"git grep {pattern!r} (exit {result.returncode}):\n{result.stdout}{result.stderr}"


def imported_top_modules(folder: Path) -> set[str]:
    """The top-level names of every module a Python file under ``folder`` imports (absolute imports)."""
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_every_package_the_code_imports_is_declared():
    """A module the package imports comes from a distribution pyproject.toml names, as a dependency
    or in an extra (a lean install must not lean on what another package happens to pull in)."""
    import importlib.metadata
    import sys
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *(item for extra in project["optional-dependencies"].values() for item in extra)]
    declared = {re.split(r"[\[<>=!~; ]", item)[0].lower().replace("_", "-") for item in declared}
    providers = importlib.metadata.packages_distributions()
    missing = {}
    for module in sorted(imported_top_modules(ROOT / "anchordiv") | imported_top_modules(ROOT / "app")):
        if module in sys.stdlib_module_names or module in ("anchordiv", "step_clock") or module not in providers:
            continue  # the standard library, this project, or a module this environment lacks (skipped below)
        names = {name.lower().replace("_", "-") for name in providers[module]}
        if not names & declared:
            missing[module] = sorted(names)
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


LEAN = '''
import importlib.abc, sys
class WithoutTheExplorer(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("streamlit", "plotly", "umap", "playwright"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, WithoutTheExplorer())
'''


def test_the_library_works_without_the_explorer_extra_and_the_demo_says_what_to_install():
    """``pip install anchordiv`` without ``[explorer]``: the library and its command line work; the
    explorer and a UMAP map say, in one line, which extra brings them."""
    import sys

    script = LEAN + '''
import numpy as np, anchordiv as ad
from anchordiv.cli import main
rng = np.random.default_rng(0)
model = ad.EmpiricalAnchors(scale=10.0).fit(rng.normal(size=(5, 8)))
assert model.divergence(rng.normal(size=(2, 8)), rng.normal(size=(3, 8))).shape == (2, 3)
try:
    main(["--help"])
except SystemExit as done:
    assert done.code == 0
try:
    from anchordiv.projection import umap_from_knn
    umap_from_knn(np.zeros((3, 2), np.int64), np.zeros((3, 2), np.float32))
except ValueError as error:
    print("UMAP:", error)
sys.exit(main(["demo"]))
'''
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2, done.stderr
    assert "UMAP: A UMAP projection needs umap, which anchordiv's explorer extra installs" in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'anchordiv[explorer]'" in lines[0], done.stderr
