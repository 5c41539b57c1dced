"""anchordiv as a user installs it: a wheel built from the repository, installed into a fresh virtual
environment outside the repository, runs the CLI, the built-in encoder, the emoji world, a search,
the shipped report and the explorer (its first page, and ``anchordiv demo`` serving it) from
another folder.

The wheel is built from the files git tracks, copied as they are in the working tree (so edits not
yet committed are tested too, while files git does not know are left out, as from a clean checkout).
The fresh environment sees the repository's ``.venv`` dependencies through a ``.pth`` file holding a
plain path line, which does not run the editable install's finder there, so ``anchordiv`` can only
come from the wheel (asserted). No network: the build uses the ``.venv``'s setuptools.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from anchordiv.benchmarks.browser import free_port, wait_healthy
from conftest import stop_process_group

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]

# Run inside the installed environment, from a folder outside the repository.
INSTALLED_USE = textwrap.dedent('''
    import sys
    from pathlib import Path

    import anchordiv as ad
    from anchordiv import resources
    from anchordiv.datasets.world_embeddings import shipped_world_embeddings
    from anchordiv.datasets import open_emoji_world
    from anchordiv.encoders import load_encoder
    from anchordiv.explorer.report import read_report
    from anchordiv.gallery import world_gallery

    site = Path(sys.argv[1]).resolve()
    loaded = {name: Path(module.__file__).resolve() for name, module in list(sys.modules.items())
              if name.split(".")[0] == "anchordiv" and getattr(module, "__file__", None)}
    outside = {name: str(path) for name, path in loaded.items() if not path.is_relative_to(site)}
    assert not outside, f"anchordiv modules not from the wheel: {outside}"
    folders = {"assets": resources.assets_dir(), "emoji": resources.emoji_dir(),
               "report": resources.report_dir(), "app": resources.app_dir()}
    assert all(folder.resolve().is_relative_to(site) for folder in folders.values()), folders
    assert (folders["assets"] / "builtin-model.safetensors").is_file()
    assert (folders["emoji"] / "LICENSES" / "CC-BY-4.0.txt").is_file()
    assert (folders["app"] / "streamlit_app.py").is_file() and (folders["app"] / "favicon.png").is_file()
    title, sections = read_report()
    assert sections and all(block.path.parent == folders["report"].resolve() for section in sections
                            for block in section.blocks if block.path is not None)

    encoder = load_encoder("builtin", device="cpu")
    view = open_emoji_world("heldout")  # checks every shipped emoji file against its manifest
    assert shipped_world_embeddings(encoder.weights_sha256, view.digest) is not None
    world = world_gallery(encoder, split="heldout")
    gallery = world.embeddings
    assert tuple(gallery.shape) == (len(view), encoder.dim) == (5028, encoder.dim), gallery.shape
    rows = [0, 1234, 4321]
    # Images encoded here find their shipped embeddings first: the weights and the data agree.
    similarities, ids = ad.CosineIndex(gallery).search(encoder.encode_images([world.load(i) for i in rows]), k=5)
    assert tuple(ids.shape) == tuple(similarities.shape) == (3, 5) and ids[:, 0].tolist() == rows, ids
    objects = ad.EmpiricalAnchors(scale=10.0).fit(encoder.encode_texts(sorted(set(world.labels["name"]))[:40]))
    divergences, ids = ad.AnchorIndex(objects, gallery).search(gallery[rows], k=5, exclude=rows)
    assert tuple(ids.shape) == tuple(divergences.shape) == (3, 5)
    assert all(row not in found for row, found in zip(rows, ids.tolist()))
    print("installed anchordiv works")
''')


def listed_package_folders() -> dict[str, Path]:
    """Each package pyproject lists and the repository folder it is built from."""
    mapping = PYPROJECT.get("package-dir", {})

    def folder(package: str) -> Path:
        parent, _, leaf = package.rpartition(".")
        if package in mapping:
            return ROOT / mapping[package]
        return folder(parent) / leaf if parent else ROOT / package

    return {package: folder(package) for package in PYPROJECT["packages"]}


def test_pyproject_lists_every_package_of_the_library_and_the_explorer():
    """The package list is kept by hand (setuptools cannot find ``app/`` as ``anchordiv.app``); a
    folder of Python files missing from it would be missing from the wheel."""
    listed = listed_package_folders()
    assert all(folder.is_dir() for folder in listed.values()), listed
    python_folders = {path.parent for top in ("anchordiv", "app") for path in (ROOT / top).rglob("*.py")
                      if "__pycache__" not in path.parts}
    missing = sorted(str(folder.relative_to(ROOT)) for folder in python_folders - set(listed.values()))
    assert not missing, f"add these folders to [tool.setuptools] packages in pyproject.toml: {missing}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """A fresh venv with the wheel installed: its ``python``, ``bin``, ``site`` and the ``env`` and
    ``cwd`` (outside the repository) to run it with."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():  # a tracked file deleted in the working tree is not shipped
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", HF_HUB_OFFLINE="1",
               ANCHORDIV_CACHE=str(work / "cache"))
    pip = [sys.executable, "-m", "pip"]
    subprocess.run([*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(work / "dist"),
                    str(source)], check=True, env=env, cwd=work, timeout=300)
    (wheel,) = (work / "dist").glob("anchordiv-*.whl")

    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    dependencies = dict.fromkeys(sysconfig.get_paths()[kind] for kind in ("purelib", "platlib"))
    (site / "repo_venv_dependencies.pth").write_text("".join(f"{path}\n" for path in dependencies))
    subprocess.run([*pip, "--python", str(python), "install", "--quiet", "--no-deps", str(wheel)],
                   check=True, env=env, cwd=work, timeout=300)
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    return {"python": python, "bin": venv / "bin", "site": site, "env": env, "cwd": elsewhere}


@pytest.mark.slow
def test_the_wheel_gives_a_working_cli_encoder_world_search_and_report(installed):
    run = dict(env=installed["env"], cwd=installed["cwd"], capture_output=True, text=True, timeout=300)
    found = subprocess.run([str(installed["python"]), "-c", "import anchordiv; print(anchordiv.__file__)"], **run)
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).resolve().is_relative_to(installed["site"].resolve()), found.stdout

    helped = subprocess.run([str(installed["bin"] / "anchordiv"), "--help"], **run)
    assert helped.returncode == 0 and "usage" in helped.stdout.lower(), helped.stderr

    used = subprocess.run([str(installed["python"]), "-c", INSTALLED_USE, str(installed["site"])], **run)
    assert used.returncode == 0, used.stderr[-4000:]
    assert "installed anchordiv works" in used.stdout


# The explorer's first page, run by Streamlit's test driver from the installed package's folder.
INSTALLED_EXPLORER = textwrap.dedent('''
    from streamlit.testing.v1 import AppTest

    from anchordiv.resources import app_dir

    app = AppTest.from_file(str(app_dir() / "streamlit_app.py"), default_timeout=240)
    app.session_state["neighbour_table_open"] = True  # its expander opened (closed, it draws nothing)
    app.run()
    assert not app.exception, app.exception
    assert app.title and app.dataframe, "the first page shows no title or no neighbour table"
    print("installed explorer works")
''')


@pytest.mark.slow
def test_the_installed_explorer_draws_its_first_page(installed):
    drawn = subprocess.run([str(installed["python"]), "-c", INSTALLED_EXPLORER], env=installed["env"],
                           cwd=installed["cwd"], capture_output=True, text=True, timeout=300)
    assert drawn.returncode == 0 and "installed explorer works" in drawn.stdout, drawn.stderr[-4000:]


def health(port: int) -> str | None:
    """What the Streamlit server's health endpoint answers, ``None`` while nothing listens."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as response:
            return response.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


@pytest.mark.slow
def test_anchordiv_demo_serves_the_explorer_from_the_wheel(installed):
    port = free_port()
    log = installed["cwd"] / "demo.log"
    with log.open("w") as output:
        # Its own process group, so stopping it stops the Streamlit server it starts too.
        server = subprocess.Popen([str(installed["bin"] / "anchordiv"), "demo", "--port", str(port)],
                                  env=installed["env"], cwd=installed["cwd"], stdout=output,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        with contextlib.suppress(ValueError):  # it exited or never answered: the assertion says so, with the log
            wait_healthy(f"http://127.0.0.1:{port}", server, log, seconds=60)
        answer = health(port)
        assert answer == "ok", f"no health answer on port {port} (exit {server.poll()}):\n{log.read_text()[-4000:]}"
    finally:
        if server.poll() is None:
            stop_process_group(server)
