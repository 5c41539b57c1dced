"""The codebase's shape, checked by reading the source: arrows point down.

* no import circles among the modules of ``anchordiv/`` and ``app/``, lazy imports inside functions
  included (an import of a package's ``__init__`` counts as an edge to it);
* no import circles among packages either: each sub-package of ``anchordiv`` (``anchordiv.figure``,
  ``anchordiv.explorer``, ...), each of its top-level modules and the app are one node, so two
  packages never import each other through different modules;
* the math and search core imports no UI, no command line and no benchmark;
* no module of the app is over 300 lines, and the app never edits ``sys.path``;
* the session values the app keeps for itself (keys starting with ``_``) are declared in
  ``app/session_keys.py`` alone;
* no fragment of the app runs another (docs/design.md, "Runs and fragments").
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP_MODULE_LINES = 300
# The math and search core: anchor models, divergences, search, the slider, the top-k fold.
CORE = ("anchordiv.models", "anchordiv.search", "anchordiv.slider", "anchordiv.sharded", "anchordiv.topk")
# What the core must never reach, directly or through another module.
EDGES = ("anchordiv.app", "anchordiv.cli", "anchordiv.benchmarks", "anchordiv.explorer", "streamlit")


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for ``anchordiv/`` and ``app/`` (``app`` is ``anchordiv.app``)."""
    files = {}
    for folder, package in (("anchordiv", "anchordiv"), ("app", "anchordiv.app")):
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join([package, *parts])] = path
    return files


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imported(module: str, path: Path, known: set[str]) -> set[str]:
    """The names ``module`` imports anywhere in its file (functions included), as dotted names."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(_as_package(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _as_package(_absolute(module, path.name == "__init__.py", node))
            # `from package import submodule` reaches the submodule; `from module import name`, the module.
            names.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    return names


def _as_package(name: str) -> str:
    """``app.x`` is ``anchordiv.app.x`` (the folder is installed as that package)."""
    return "anchordiv." + name if name == "app" or name.startswith("app.") else name


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of the repo (and outside names, as given) it imports."""
    files = module_files(root)
    known = set(files)
    graph = {}
    for module, path in files.items():
        targets = set()
        for name in _imported(module, path, known):
            while name and name not in known and "." in name:
                name = name.rpartition(".")[0]
            if name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start] & graph.keys())))]
        index[start] = low[start] = len(index)
        stack.append(start), on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child), on_stack.add(child)
                work.append((child, iter(sorted(graph[child] & graph.keys()))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def package_of(module: str) -> str:
    """The package-level node of a module: ``anchordiv`` itself, the sub-package of ``anchordiv`` it
    is in (``anchordiv.figure``), a top-level module of ``anchordiv`` (``anchordiv.cache``), or the
    app (``anchordiv.app``)."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Package (:func:`package_of`) -> the other packages of the repo its modules import."""
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        packages.setdefault(package_of(module), set()).update(package_of(name) for name in targets if name in graph)
    for package, targets in packages.items():
        targets.discard(package)
    return packages


def crossings(graph: dict[str, set[str]], found: list[list[str]]) -> list[str]:
    """The imports between modules of two packages of one of the circles ``found``: where to cut."""
    circle_of = {package: index for index, circle in enumerate(found) for package in circle}
    return [f"{module} -> {name}" for module, targets in sorted(graph.items())
            for name in sorted(targets & graph.keys())
            if package_of(module) != package_of(name) and package_of(module) in circle_of
            and circle_of[package_of(module)] == circle_of.get(package_of(name))]


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_the_checks_see_a_circle_a_lazy_import_and_an_edge(tmp_path):
    (tmp_path / "anchordiv" / "models").mkdir(parents=True)
    (tmp_path / "app").mkdir()
    (tmp_path / "anchordiv" / "__init__.py").write_text("")
    (tmp_path / "anchordiv" / "models" / "__init__.py").write_text("from . import core\n")
    (tmp_path / "anchordiv" / "models" / "core.py").write_text("def f():\n    from ..slider import g\n")
    (tmp_path / "anchordiv" / "slider.py").write_text("from anchordiv.models.core import f\nimport streamlit\n")
    (tmp_path / "app" / "page.py").write_text("from app import page\n")
    graph = import_graph(tmp_path)
    assert circles(graph) == [["anchordiv.models.core", "anchordiv.slider"]]
    assert "streamlit" in reachable(graph, "anchordiv.models")
    assert graph["anchordiv.app.page"] == set()  # an import of itself is no edge


def test_no_import_circles():
    assert circles(import_graph()) == []


def test_the_package_check_sees_a_circle_that_no_module_closes(tmp_path):
    for folder in ("anchordiv/figure", "anchordiv/explorer", "app"):
        (tmp_path / folder).mkdir(parents=True)
    for package in ("anchordiv", "anchordiv/figure", "anchordiv/explorer"):
        (tmp_path / package / "__init__.py").write_text("")
    figure, explorer = tmp_path / "anchordiv" / "figure", tmp_path / "anchordiv" / "explorer"
    (figure / "compare.py").write_text("from ..explorer import geometry\nfrom .. import images\n")
    (figure / "limits.py").write_text("LIMITS = 1\n")
    (explorer / "geometry.py").write_text("import anchordiv.images\n")
    (explorer / "settings.py").write_text("def f():\n    from ..figure.limits import LIMITS\n")  # lazy
    (tmp_path / "anchordiv" / "images.py").write_text("")
    (tmp_path / "anchordiv" / "cache.py").write_text("def f():\n    import app.serve\n")
    (tmp_path / "app" / "page.py").write_text("from anchordiv import cache\n")
    (tmp_path / "app" / "serve.py").write_text("")
    graph = import_graph(tmp_path)
    assert circles(graph) == []
    packages = package_graph(graph)
    assert packages["anchordiv.figure"] == {"anchordiv.explorer", "anchordiv.images"}
    found = sorted(circles(packages))
    assert found == [["anchordiv.app", "anchordiv.cache"], ["anchordiv.explorer", "anchordiv.figure"]]
    assert crossings(graph, found) == ["anchordiv.app.page -> anchordiv.cache",
                                       "anchordiv.cache -> anchordiv.app.serve",
                                       "anchordiv.explorer.settings -> anchordiv.figure.limits",
                                       "anchordiv.figure.compare -> anchordiv.explorer.geometry"]


def test_no_import_circles_between_packages():
    graph = import_graph()
    found = circles(package_graph(graph))
    assert found == [], "\n".join(crossings(graph, found))


@pytest.mark.parametrize("core", CORE)
def test_the_core_reaches_no_ui_cli_or_benchmark(core):
    graph = import_graph()
    assert core in graph, f"{core} is not a module of the repo any more: update CORE"
    reached = reachable(graph, core)
    assert not [name for name in reached if name.startswith(EDGES)]


def test_no_app_module_is_over_300_lines():
    lengths = {str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
               for path in sorted((ROOT / "app").rglob("*.py"))}
    assert lengths
    assert {path: n for path, n in lengths.items() if n > APP_MODULE_LINES} == {}


def test_the_app_never_edits_sys_path():
    editing = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "app").rglob("*.py"))
               if "sys.path" in path.read_text(encoding="utf-8")]
    assert editing == []


def private_session_keys(path: Path) -> list[str]:
    """The ``_name`` strings (or f-strings starting with ``_``) written in ``path``: keys of values
    the app keeps for itself, which only app/session_keys.py may spell."""
    found, tree = [], ast.parse(path.read_text(encoding="utf-8"))
    parts = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts
                and re.fullmatch(r"_[a-z]\w*", node.value)):
            found.append(f"{path.name}:{node.lineno} {node.value!r}")
        elif (isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant)
              and str(node.values[0].value).startswith("_")):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_the_apps_own_session_keys_are_declared_in_one_module(tmp_path):
    sample = tmp_path / "page.py"
    sample.write_text('state["_seen"] = True\nstate.get(f"_{key}_labels")\nstate["query_id"] = 1\n')
    assert private_session_keys(sample) == ["page.py:1 '_seen'", "page.py:2 f'_{key}_labels'"]
    spelled = [key for path in sorted((ROOT / "app").rglob("*.py")) if path.name != "session_keys.py"
               for key in private_session_keys(path)]
    assert spelled == []


def fragments_reached(paths: list[Path]) -> dict[str, set[str]]:
    """For each function decorated ``@st.fragment`` in ``paths``, the other such functions its body
    reaches through calls by name to the functions defined there, however deep."""
    functions, fragments = {}, set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                functions[node.name] = node
                if any(ast.unparse(decorator).startswith("st.fragment") for decorator in node.decorator_list):
                    fragments.add(node.name)

    def called(function: ast.FunctionDef) -> set[str]:
        return {node.func.id for node in ast.walk(function)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions}

    reached = {}
    for fragment in fragments:
        seen, todo = set(), called(functions[fragment])
        while todo:
            name = todo.pop()
            if name not in seen and name != fragment:
                seen.add(name)
                todo |= called(functions[name])
        reached[fragment] = seen & fragments
    return reached


def test_no_fragment_runs_another(tmp_path):
    """Streamlit drops a fragment's unsent elements when its next run starts, but not those of a
    fragment nested in it, which then point past the end of the page's tree (a blank page)."""
    sample = tmp_path / "page.py"
    sample.write_text("@st.fragment\ndef outer():\n    helper()\n\ndef helper():\n    inner()\n\n"
                      "@st.fragment\ndef inner():\n    pass\n")
    assert fragments_reached([sample]) == {"outer": {"inner"}, "inner": set()}
    reached = fragments_reached(sorted((ROOT / "app").rglob("*.py")))
    assert len(reached) >= 2  # the results fragment and the UMAP section's, at least
    assert {fragment: others for fragment, others in reached.items() if others} == {}
