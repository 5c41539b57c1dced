"""The explorer's model menu for real: a tiny open_clip model served by a loopback hub
(tests/loopback_hub.py), picked by name, downloaded once through the real huggingface_hub and
open_clip code, and ranking an image folder; refused, with what to copy where, on a server that
downloads nothing; named in the page's link."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from huggingface_hub import constants as hub_constants
from PIL import Image

from anchordiv import explorer as ex
from anchordiv.encoders import fetch_model, load_encoder
from anchordiv.explorer.settings import CHECKPOINT, HUB
from anchordiv.gallery import folder_gallery
from loopback_hub import CONFIG_NAME, TINY_REPO, WEIGHTS_NAME
from markup import plain
from streamlit.runtime import Runtime
from streamlit.testing.v1 import app_test
from app_pages import APP, TIMEOUT, messages
from test_app import AppTest, shown_table

SPEC = f"open_clip:hf-hub:{TINY_REPO}"


@pytest.fixture
def hub(hub, tmp_path, monkeypatch, app_env):
    """The loopback hub (conftest.py's), with this process's huggingface_hub cache and anchordiv
    cache private, in the local mode (an image folder is typed)."""
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "anchordiv-cache"))
    monkeypatch.setenv("ANCHORDIV_ALLOW_ANY_PATH", "1")
    return hub


def colour_folder(folder: Path) -> Path:
    for label, colour in (("red", (220, 20, 20)), ("blue", (20, 20, 220)), ("green", (20, 200, 20))):
        (folder / label).mkdir(parents=True)
        for i in range(5):
            Image.new("RGB", (48, 48), tuple(max(0, c - 30 * i) for c in colour)).save(folder / label / f"{i}.png")
    return folder


def open_folder_with_hub_model(folder: Path) -> AppTest:
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    app.radio(key="gallery_kind").set_value("folder").run()
    app.text_input(key="folder_path").set_value(str(folder)).run()
    app.radio(key="encoder_kind").set_value(HUB).run()
    return app.text_input(key="hub_repo").set_value(TINY_REPO).run()


def test_a_hub_model_is_downloaded_once_on_request_and_ranks_a_folder(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("ANCHORDIV_ALLOW_DOWNLOAD", "1")
    folder = colour_folder(tmp_path / "images")
    app = open_folder_with_hub_model(folder)
    assert not app.exception and "its files are not on this server yet" in messages(app)
    assert WEIGHTS_NAME in messages(app) and hub.gets(WEIGHTS_NAME) == []  # nothing fetched before the click
    app.button(key="model_download").click().run()
    assert not app.exception, app.exception
    assert len(hub.gets(WEIGHTS_NAME)) == 1 and len(hub.gets(CONFIG_NAME)) == 1
    assert "Encoding on CPU" in messages(app) and "ranking and maps on CPU" in messages(app)
    assert app.query_params["encoder"] == SPEC

    # The page ranks the folder as the library does with the same model and files.
    encoder = load_encoder(SPEC, device="cpu")
    gallery = folder_gallery(str(folder), encoder)
    query = ex.default_query_id(gallery)
    assert shown_table(app)["gallery_id"].iloc[0] != query and len(shown_table(app)) == 10
    expected = ex.MemorySource(gallery).cosine_top_k(gallery.embeddings[query].numpy(), 10, exclude=query)[1]
    assert shown_table(app, "cosine")["gallery_id"].tolist()[:3] == expected.tolist()[:3]

    # Later visitors, with the hub gone, load it from this machine: no button, no request.
    hub.stop()
    again = open_folder_with_hub_model(folder)
    assert not again.exception and not [button for button in again.button if button.key == "model_download"]
    assert len(shown_table(again)) == 10


@pytest.fixture
def overlapping_runs(monkeypatch):
    """AppTest runs that overlap in threads share one runtime. AppTest sets the global
    ``Runtime._instance`` to a fresh mock when a run starts and clears it when the run ends, so a
    run that ends first would pull the runtime out from under one still running (which then fails
    with "Runtime hasn't been created!" wherever it asks for media files). Here the first run's
    mock stays until the last overlapping run ends; a server has one runtime for every session."""
    lock, running = threading.Lock(), [0]
    INSTANCE = "_instance"  # AppTest's only handle on the runtime: streamlit has no public one

    class Counting(type(Runtime)):
        """What AppTest assigns on its runtime class goes to streamlit's Runtime, except that the
        clearing waits for the last overlapping run."""

        def __setattr__(cls, name, value):
            with lock:
                if name == INSTANCE:
                    running[0] += -1 if value is None else 1
                    if (value is None and running[0] > 0) or (value is not None and getattr(Runtime, name)):
                        return
                type.__setattr__(Runtime, name, value)

    monkeypatch.setattr(app_test, "Runtime", Counting("SharedRuntime", (Runtime,), {}))


def test_visitors_asking_at_once_share_one_download(hub, tmp_path, monkeypatch, overlapping_runs):
    """A second visitor who picks the model while the first's download runs watches that download:
    the files are fetched once (``fetch_model`` called once), and both pages then rank the folder."""
    import anchordiv.app.encoder_choice as encoder_choice

    monkeypatch.setenv("ANCHORDIV_ALLOW_DOWNLOAD", "1")
    fetches = []
    monkeypatch.setattr(encoder_choice, "fetch_model", lambda *args, **kw: fetches.append(args) or fetch_model(*args, **kw))
    folder = colour_folder(tmp_path / "images")
    watching, watch = threading.Semaphore(0), encoder_choice.watch

    def counted_watch(job, spec):  # a visitor's run has reached the download and watches it
        watching.release()
        watch(job, spec)

    monkeypatch.setattr(encoder_choice, "watch", counted_watch)
    first, second = open_folder_with_hub_model(folder), open_folder_with_hub_model(folder)
    hub.hold_gets = threading.Event()  # every transfer waits until the second visitor is watching
    first_run = threading.Thread(target=lambda: first.button(key="model_download").click().run())
    first_run.start()
    assert watching.acquire(timeout=60), "the first visitor's run never watched its download"
    second_run = threading.Thread(target=lambda: second.button(key="model_download").click().run())
    second_run.start()
    assert watching.acquire(timeout=60), "the second visitor's run never watched the download under way"
    hub.hold_gets.set()
    first_run.join(TIMEOUT)
    second_run.join(TIMEOUT)
    assert not first.exception and not second.exception
    assert len(fetches) == 1 and len(hub.gets(WEIGHTS_NAME)) == 1
    assert len(shown_table(first)) == 10 and len(shown_table(second)) == 10


def test_a_server_that_downloads_nothing_says_what_to_copy_where(hub, tmp_path, monkeypatch):
    monkeypatch.delenv("ANCHORDIV_ALLOW_DOWNLOAD", raising=False)
    app = open_folder_with_hub_model(colour_folder(tmp_path / "images"))
    text = messages(app)
    assert not app.exception and "downloads nothing" in text
    assert not [button for button in app.button if button.key == "model_download"]
    assert f"{hub.endpoint}/{TINY_REPO}/resolve/main/{WEIGHTS_NAME}" in text
    assert str(tmp_path / "anchordiv-cache") in text and "fetch-model" in text
    assert hub.requests == []  # the page looked at the disk only


def test_a_link_names_the_model_and_a_bad_one_is_refused_plainly(hub, monkeypatch):
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    app.query_params["encoder"] = SPEC
    app.run()
    assert not app.exception and app.radio(key="encoder_kind").value == HUB
    assert app.text_input(key="hub_repo").value == TINY_REPO
    bad = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    bad.query_params["encoder"] = "open_clip:hf-hub:**evil**/../x"
    bad.run()
    assert not bad.exception and any("not ORG/REPO" in plain(error.value) for error in bad.error)
    assert bad.radio(key="encoder_kind").value != HUB


def test_the_launch_options_open_on_their_model_and_folder(hub, tmp_path, monkeypatch):
    """``anchordiv demo --encoder ... --folder ...`` passes them as the explorer's launch options: the
    first page opens on them (a link's model would win over the launch's)."""
    folder = colour_folder(tmp_path / "images")
    labels = tmp_path / "labels.csv"  # beside the folder, as `make demo FOLDER=... LABELS=...` may give it
    labels.write_text("path,style\n" + "".join(f"{colour}/{i}.png,{'dark' if i > 2 else 'light'}\n"
                                               for colour in ("red", "blue", "green") for i in range(5)))
    monkeypatch.delenv("ANCHORDIV_ALLOW_ANY_PATH")
    monkeypatch.setattr("sys.argv", ["streamlit_app.py", "--encoder", SPEC, "--folder", str(folder),
                                     "--labels", str(labels), "--data-root", str(tmp_path), "--allow-download"])
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not app.exception
    assert app.radio(key="gallery_kind").value == "folder"
    assert app.selectbox(key="folder_choice").value == str(folder.resolve())
    assert app.selectbox(key="folder_labels_choice").value == str(labels.resolve())
    assert app.radio(key="encoder_kind").value == HUB and app.text_input(key="hub_repo").value == TINY_REPO
    assert [button for button in app.button if button.key == "model_download"]  # downloads allowed by the launch


def test_a_link_names_a_checkpoints_architecture_never_its_path(hub, tmp_path):
    from tiny_open_clip import TINY_ARCH, make_tiny_checkpoint

    checkpoint, _ = make_tiny_checkpoint(tmp_path)
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    app.radio(key="encoder_kind").set_value(CHECKPOINT).run()
    app.text_input(key="openclip_arch").set_value(TINY_ARCH).run()
    app.text_input(key="openclip_checkpoint").set_value(str(checkpoint)).run()
    assert not app.exception and not app.error
    assert app.query_params["encoder"] == f"open_clip:{TINY_ARCH}" and "pretrained" not in app.query_params

    opened = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    opened.query_params.update(encoder=f"open_clip:{TINY_ARCH}", pretrained=str(checkpoint))
    opened.run()
    assert not opened.exception and opened.radio(key="encoder_kind").value == CHECKPOINT
    assert "was not taken" in messages(opened)
    assert opened.text_input(key="openclip_arch").value == TINY_ARCH
    assert opened.text_input(key="openclip_checkpoint").value == ""  # a link names no file on the server
