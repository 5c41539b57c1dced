import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import anchordiv as ad

SCALE = 12.0


# -- a run writes nothing outside its own folders ------------------------------------------------------
RUN_FOLDER = pytest.StashKey[Path]()
RANDOM_SEEDS = pytest.StashKey[list]()


def pytest_configure(config):
    """Everything a test run writes outside its tests' ``tmp_path`` goes into one folder of the run's
    own, removed at its end: a home for the caches written there (anchordiv's, matplotlib's,
    Chromium's, Ray's token), Ray's session files and torch's compile cache. Subprocesses (the
    Streamlit server, the command line) inherit it. Short, because Ray's socket paths must fit
    in 107 characters."""
    root = Path(tempfile.mkdtemp(prefix="adt-"))
    config.stash[RUN_FOLDER] = root
    home = root / "home"
    os.environ.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"),
                      MPLCONFIGDIR=str(home / ".config" / "matplotlib"), RAY_TMPDIR=str(root / "ray"),
                      TORCHINDUCTOR_CACHE_DIR=str(root / "torchinductor"))
    for folder in (home / ".cache", home / ".config", root / "ray"):
        folder.mkdir(parents=True)
    os.environ.pop("ANCHORDIV_CACHE", None)  # the default, under the run's home, unless a test sets its own
    # AppTest runs the app in this process: the app then keeps torch's thread count for the tests after it.
    os.environ["ANCHORDIV_APP_THREADS"] = "0"
    scan_installed_components_once()


def scan_installed_components_once() -> None:
    """Before its first run, each new AppTest scans the metadata of every installed distribution for
    Streamlit components, which takes longer than the explorer's own run (docs/benchmarks.md, "The
    test suite"). The installed packages do not change during a run (the wheel test installs into
    a venv of its own), so Streamlit's real scan runs once and its answer serves every AppTest.
    (The explorer's p player is declared inline, not found by this scan.)"""
    import functools

    from streamlit.components.v2 import manifest_scanner

    manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


def pytest_unconfigure(config):
    root = config.stash.get(RUN_FOLDER, None)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


# -- seeds: the route-comparison tests on other worlds -------------------------------------------------
def pytest_addoption(parser):
    parser.addoption("--seeds", type=int, default=0, metavar="N",
                     help="run every test that takes the `seed` fixture (the worlds of the route-comparison "
                          "tests) on N random seeds as well as the fixed one; a failure's id names its seed")
    parser.addoption("--seed", type=int, action="append", default=[], metavar="S",
                     help="run those tests on seed S (repeatable), e.g. to replay a failure seen with --seeds")


@pytest.fixture(scope="session")
def seed() -> int:
    """The seed offset of the worlds that route-comparison tests are built on: 0, the fixed worlds,
    unless ``--seeds N`` or ``--seed S`` parametrise it."""
    return 0


# The devices a route comparison runs on: the CPU always, and CUDA where torch sees one. Without
# one the CUDA run shows as skipped, with this reason, never as passed.
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here: this comparison's CUDA run did not happen"))]


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    """Where the index under test computes (each route comparison runs once per device)."""
    return request.param


def pytest_generate_tests(metafunc):
    config = metafunc.config
    chosen = list(config.getoption("seed"))
    if config.getoption("seeds"):
        if RANDOM_SEEDS not in config.stash:  # drawn once, so every module sees the same seeds
            config.stash[RANDOM_SEEDS] = [random.SystemRandom().randrange(1, 2**31)
                                          for _ in range(config.getoption("seeds"))]
        chosen = [0, *config.stash[RANDOM_SEEDS], *chosen]
    if chosen and "seed" in metafunc.fixturenames:
        metafunc.parametrize("seed", chosen, ids=[f"seed{value}" for value in chosen], scope="session")


def clustered(rng: np.random.Generator, n: int, centres: np.ndarray, spread: float) -> np.ndarray:
    """Unit vectors around random centres: a small stand-in for CLIP embeddings."""
    points = centres[rng.integers(0, len(centres), n)] + spread * rng.standard_normal((n, centres.shape[1]))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


@pytest.fixture(scope="session")
def data(seed):
    """float64 anchors (two sets), queries and gallery in d=24 with shared cluster structure."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((6, 24))
    return {
        "anchors": clustered(rng, 60, centres, 0.8),
        "style": clustered(rng, 8, centres[:2], 0.3),
        "queries": clustered(rng, 9, centres, 0.7),
        "gallery": clustered(rng, 70, centres, 0.7),
    }


MODEL_NAMES = [
    "empirical", "weighted", "gaussian", "gaussian-ridge", "gmm", "gmm-diag", "latent-empirical",
    "latent-gaussian", "mixture", "mixture-balanced", "posterior-empirical", "posterior-gaussian",
]


def all_models(data):
    """One fitted instance of every model kind, on the same anchors."""
    anchors, style = data["anchors"], data["style"]
    weights = np.random.default_rng(1).uniform(0.1, 1.0, len(anchors))
    return {
        "empirical": ad.EmpiricalAnchors(scale=SCALE).fit(anchors),
        "weighted": ad.EmpiricalAnchors(scale=SCALE, weights=weights).fit(anchors),
        "gaussian": ad.GaussianAnchors(scale=SCALE).fit(anchors),
        "gaussian-ridge": ad.GaussianAnchors(scale=SCALE, shrinkage=0.01).fit(anchors),
        "gmm": ad.GaussianMixtureAnchors(n_components=3, scale=SCALE).fit(anchors),
        "gmm-diag": ad.GaussianMixtureAnchors(n_components=2, covariance_type="diag", scale=SCALE).fit(anchors),
        "latent-empirical": ad.LatentEmpiricalAnchors(rank=5, scale=SCALE).fit(anchors),
        "latent-gaussian": ad.LatentGaussianAnchors(rank=5, scale=SCALE).fit(anchors),
        "mixture": ad.MixtureAnchors([ad.EmpiricalAnchors(scale=SCALE), ad.GaussianAnchors(scale=SCALE)],
                                     [0.3, 0.7]).fit([anchors, style]),
        "mixture-balanced": ad.MixtureAnchors([ad.EmpiricalAnchors(scale=SCALE), ad.EmpiricalAnchors(scale=SCALE)],
                                              [0.5, 0.5], weighting="balanced").fit([anchors, style],
                                                                                    reference=data["gallery"]),
        "posterior-empirical": ad.PosteriorEmpiricalAnchors(alpha=2.0, scale=SCALE).fit(style, anchors),
        "posterior-gaussian": ad.PosteriorGaussianAnchors(alpha=2.0, scale=SCALE).fit(style, anchors),
    }


@pytest.fixture(scope="session")
def models(data):
    """Fitted once per session; tests must not refit or reweight them."""
    return all_models(data)


@pytest.fixture
def download_builders(monkeypatch) -> dict:
    """The builders of the page's deferred downloads, by file name, as the browser would run them on a
    click (Streamlit registers a builder that the server calls when the button is pressed)."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    builders: dict[str, object] = {}
    keep = MediaFileManager.add_deferred

    def record(self, data_callable, mimetype, coordinates, file_name=None, **options):
        builders[file_name] = data_callable
        return keep(self, data_callable, mimetype, coordinates, file_name=file_name, **options)

    monkeypatch.setattr(MediaFileManager, "add_deferred", record)
    return builders


@pytest.fixture
def no_network(monkeypatch):
    """Records (and refuses) every attempt to open a connection; tests assert it stays empty."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network disabled in tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


def unit_vectors(rng: np.random.Generator, n: int, d: int) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.as_tensor(rng.standard_normal((n, d)), dtype=torch.float32), dim=1)


def object_style_world(seed: int, n_objects: int, n_styles: int, copies: int, d: int, style_weight: float,
                       noise: float):
    """Images whose object and style are known: ``object_o + style_weight * style_s`` plus noise,
    unit rows ``(n, d)``; with the ``(o, s)`` of each row and anchors near each object and style
    (``(n_objects, d)``, ``(n_styles, d)``)."""
    rng = np.random.default_rng(seed)
    objects, styles = unit_vectors(rng, n_objects, d), unit_vectors(rng, n_styles, d)
    rows = [(o, s) for o in range(n_objects) for s in range(n_styles) for _ in range(copies)]
    images = torch.stack([objects[o] + style_weight * styles[s] for o, s in rows]) + noise * unit_vectors(rng, len(rows), d)
    object_anchors = torch.nn.functional.normalize(objects + 0.05 * unit_vectors(rng, n_objects, d), dim=1)
    style_anchors = torch.nn.functional.normalize(styles + 0.05 * unit_vectors(rng, n_styles, d), dim=1)
    return torch.nn.functional.normalize(images, dim=1), rows, object_anchors, style_anchors


def labelled_world(seed: int, copies: int, key: str, description: str, coloured: bool = False):
    """A labelled gallery of :func:`object_style_world` (6 objects x 5 styles x ``copies``, d = 16):
    ``(gallery, (object anchors, style anchors), (object texts, style texts))``, its labels
    "object o" (column ``obj``) and "style s" (``sty``). Its 8 x 8 images are blank, or ``coloured``
    by object and style."""
    import pandas as pd

    from anchordiv.gallery import Gallery

    embeddings, rows, object_anchors, style_anchors = object_style_world(seed, 6, 5, copies, 16, 0.8, 0.15)
    labels = pd.DataFrame({"obj": [f"object {o}" for o, _ in rows], "sty": [f"style {s}" for _, s in rows]})
    images = [Image.new("RGB", (8, 8), (o * 40, s * 50, 0) if coloured else 0) for o, s in rows]
    gallery = Gallery(embeddings=embeddings, labels=labels, load=lambda i: images[i], object_column="obj",
                      name_column="obj", style_column="sty", key=key, description=description)
    texts = ([f"object {i}" for i in range(6)], [f"style {i}" for i in range(5)])
    return gallery, (object_anchors, style_anchors), texts


# -- a private cache and the built-in encoder, for the modules that need them --------------------------
@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """The test's own, empty anchordiv cache: ``ANCHORDIV_CACHE`` at ``tmp_path / "cache"`` (this
    suite's ``cache``, in place of pytest's own fixture of that name, which no test uses)."""
    path = tmp_path / "cache"
    monkeypatch.setenv("ANCHORDIV_CACHE", str(path))
    return path


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """The loopback hub (tests/loopback_hub.py) serving the tiny open_clip model, this process's
    huggingface_hub pointed at it."""
    from loopback_hub import serve_tiny_hub

    with serve_tiny_hub(tmp_path) as served:
        served.patch_endpoint(monkeypatch)
        yield served


@pytest.fixture(scope="module")
def encoder():
    """The built-in encoder on the CPU, one per module: a test that changes it does so with
    ``monkeypatch``, which puts it back."""
    from anchordiv.encoders import load_encoder

    return load_encoder("builtin", device="cpu")


# -- the Streamlit app's tests: a small slice of the built-in world, a private cache ----------------
APP_SPLIT, APP_LIMIT = "heldout", 96  # 8 emoji x 12 renditions: enough to rank, quick to draw
# The command line's options for that slice.
APP_SLICE_ARGS = ["--split", APP_SPLIT, "--limit", str(APP_LIMIT)]


@pytest.fixture(scope="module")
def app_env(tmp_path_factory):
    """A private, empty anchordiv cache (the world's embeddings ship and its images are drawn when
    shown) and a small gallery."""
    cache = tmp_path_factory.mktemp("anchordiv-cache")
    saved = {name: os.environ.get(name) for name in ("ANCHORDIV_CACHE", "ANCHORDIV_APP_GALLERY_SPLIT",
                                                     "ANCHORDIV_APP_GALLERY_LIMIT")}
    os.environ.update(ANCHORDIV_CACHE=str(cache), ANCHORDIV_APP_GALLERY_SPLIT=APP_SPLIT,
                      ANCHORDIV_APP_GALLERY_LIMIT=str(APP_LIMIT))
    yield cache
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="module")
def library(app_env):
    """The same encoder and gallery the app uses, for computing the expected neighbours."""
    from anchordiv import explorer as ex
    from anchordiv.encoders import load_encoder
    from anchordiv.gallery import world_gallery

    encoder = load_encoder("builtin", device="cpu")
    gallery = world_gallery(encoder, split=APP_SPLIT, limit=APP_LIMIT)
    presets = ex.anchor_presets(gallery)
    return {"encoder": encoder, "gallery": gallery, "presets": presets}


@pytest.fixture(scope="module")
def preset_texts(library) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The slice's default anchor sets: its object names (A) and styles (B)."""
    return library["presets"]["Gallery object names"], library["presets"]["Gallery styles"]


# -- a folder for the store builders (local and Ray engines): images, and files that are not -------
STORE_SHARD_ROWS = 4
# Sorted: a/ (items 0-5), b/ (6-11), bad/ (12-15: all of shard 3, which then has no rows), c/ (16-21), notes.txt (22).
STORE_IMAGES = [f"{label}/{index}.png" for label in "abc" for index in range(6)]
STORE_NOT_IMAGES = ["bad/0.png", "bad/1.png", "bad/2.png", "bad/3.png", "notes.txt"]


def make_store_folder(root: Path) -> Path:
    """``root`` filled with :data:`STORE_IMAGES` (small random PNGs of a few sizes) and
    :data:`STORE_NOT_IMAGES` (text named like images)."""
    for seed, rel in enumerate(STORE_IMAGES):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        pixels = np.random.default_rng(seed).integers(0, 256, (18 + seed % 5, 22, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(root / rel)
    for rel in STORE_NOT_IMAGES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"not an image at all")
    return root


@pytest.fixture(scope="session")
def ray_for_the_run():
    """Stops, at the end of the run, the local Ray instance that :func:`ray_instance` started: once
    per run, as its start and stop take seconds."""
    from anchordiv.ray_runtime import import_ray

    already = import_ray().is_initialized()
    yield
    if not already and import_ray().is_initialized():
        import_ray().shutdown()


@pytest.fixture
def ray_instance(ray_for_the_run):
    """This process connected to a two-CPU local Ray instance, started by the first test that asks
    (or again after :func:`no_ray`) and kept for the rest of the run."""
    from anchordiv.ray_runtime import connect

    return connect(num_cpus=2)


@pytest.fixture
def no_ray():
    """This process not connected to Ray: the instance :func:`ray_instance` keeps is stopped (the
    next test that asks for one starts it again)."""
    from anchordiv.ray_runtime import import_ray

    if import_ray().is_initialized():
        import_ray().shutdown()


# -- the explorer in a real browser: one server for every browser test, one Chromium per module ------
def skip_without_chromium():
    """Skips the test, naming what to install, without the system Chromium or the playwright package
    (the library's own check, :func:`anchordiv.benchmarks.browser.check_browser`)."""
    from anchordiv.benchmarks.browser import check_browser

    try:
        check_browser()
    except ValueError as error:
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def chromium_and_weights():
    """Skips, with the reason, without Chromium, the playwright package or the built-in weights:
    what a test of the explorer in a real browser needs."""
    from anchordiv.builtin.weights import ASSETS_DIR, WEIGHTS_NAME

    skip_without_chromium()
    if not (ASSETS_DIR / WEIGHTS_NAME).is_file():
        pytest.skip("the built-in model weights are not there yet")


@pytest.fixture(scope="session")
def app_url(tmp_path_factory, chromium_and_weights):
    """``(url, log path)`` of one explorer server (``streamlit run app/streamlit_app.py``) on a small
    held-out gallery with a private cache, empty when it starts, shared by every browser test of
    the run: each drives its own browser contexts, so sessions never mix, and the server's start
    and its first page's work are paid once. Skipped, with the reason, without Chromium, the
    playwright package or the built-in weights."""
    from anchordiv.benchmarks.browser import explorer_env, streamlit_server, wait_healthy

    workdir = tmp_path_factory.mktemp("browser")
    env = explorer_env(workdir, split="heldout", limit=96)
    app = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"
    with streamlit_server(app, env, workdir / "streamlit.log") as (url, process, log):
        wait_healthy(url, process, log, seconds=60)
        yield url, log


@pytest.fixture(scope="module")
def module_browser():
    """The system Chromium, headless, driven by Playwright's sync API: one for the tests of a module
    (closed at its end, so that a later module may run Playwright's async API)."""
    from playwright.sync_api import sync_playwright

    from anchordiv.benchmarks.browser import CHROMIUM, CHROMIUM_ARGS

    skip_without_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def browser(module_browser):
    """The module's Chromium (:func:`module_browser`); every browser context the test opened is
    closed when it ends, so that no page of one test lives on into the next."""
    yield module_browser
    for context in module_browser.contexts:
        context.close()


def stop_process_group(process: subprocess.Popen) -> None:
    """End a server started in a process group of its own (``start_new_session=True``): SIGTERM to
    the group, SIGKILL when it has not gone after 15 s."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)
