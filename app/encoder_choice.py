"""The sidebar's encoder: the built-in model, an open_clip pretrained tag, an open_clip model on the
Hugging Face hub, or a checkpoint file under the data roots; the download of its weights where the
server allows one, watched by every visitor who waits for it; and the encoder, on the server's device.

The choice is one spec string (:mod:`anchordiv.encoders.specs`), the same as the command line's
``--encoder`` / ``--pretrained``, and links carry it (a checkpoint file's path travels in none)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from anchordiv.app import cached
from anchordiv.app.errors import ERROR_CHARS, attempt
from anchordiv.app.session_keys import ENCODER_FOLLOWED
from anchordiv.app.setting_widgets import setting_widget
from anchordiv.app.widget_state import current_value, replace_value, write_values
from anchordiv.device import describe_device
from anchordiv.encoders import CatalogEntry, ModelSpec, fetch_model, missing_files, parse_model_spec
from anchordiv.encoders.folders import checkpoints_root
from anchordiv.explorer.launch import LaunchOptions
from anchordiv.explorer.literal import markdown_literal, shown
from anchordiv.explorer.settings import BUILTIN, CHECKPOINT, HUB, PRETRAINED
from anchordiv.explorer.sidebar_state import EncoderChoice
from anchordiv.images import display_name

WATCH_SECONDS = 0.25  # how often a visitor's progress bar of a download is redrawn
# How the library's refusals to fetch a model's files advise its callers (the argument, the command
# line's option): words a visitor cannot act on, which :func:`page_encoder` says in the page's.
LIBRARY_DOWNLOAD_ADVICE = ("allow_download=True", "--allow-download")
# What a visitor can do instead, on the page where a model's files are missing.
SIDEBAR_MODELS = "Choose another model under Model in the sidebar"


def catalog() -> dict[str, CatalogEntry]:
    """The catalog's pretrained tags by menu token ``ARCH/TAG`` (:func:`~anchordiv.app.cached.encoder_menu`)."""
    return {entry_token(entry): entry for entry in cached.encoder_menu() if entry.pretrained}


def entry_token(entry: CatalogEntry) -> str:
    return f"{entry.model.removeprefix('open_clip:')}/{entry.pretrained}"


def apply_spec(spec: ModelSpec, trusted: bool) -> None:
    """Set the model widgets to show ``spec``: from a launch option (``trusted``), or from a link,
    whose checkpoint path is never taken (a link names no file on the server)."""
    if spec.family == "builtin":
        write_values({"encoder_kind": BUILTIN})
    elif spec.hub_repo:
        write_values({"encoder_kind": HUB, "hub_repo": spec.hub_repo})
    elif spec.pretrained and f"{spec.arch}/{spec.pretrained}" in catalog():
        write_values({"encoder_kind": PRETRAINED, "openclip_pretrained": f"{spec.arch}/{spec.pretrained}"})
    else:
        write_values({"encoder_kind": CHECKPOINT, "openclip_arch": spec.arch})
        roots = cached.launch_options().roots
        if trusted and spec.pretrained and roots.allow_any_path:
            write_values({"openclip_checkpoint": spec.pretrained})
        elif trusted and spec.pretrained:  # the menu offers the data roots' checkpoints only
            offered = [str(path) for path in roots.checkpoints()]
            path = str(Path(spec.pretrained).expanduser().resolve())
            write_values({"checkpoint_choice": path if path in offered else None})


def follow_encoder(linked: dict[str, Any], launch: LaunchOptions) -> None:
    """On a session's first run: the encoder a link names, else the one the server was launched with."""
    state = st.session_state
    if ENCODER_FOLLOWED in state:
        return
    state[ENCODER_FOLLOWED] = True
    from_link = "encoder" in linked
    wanted = ((linked["encoder"], linked.get("encoder_pretrained") or None) if from_link
              else (launch.encoder, launch.pretrained))
    if wanted[0]:
        spec = attempt(lambda: linked_spec(*wanted) if from_link else parse_model_spec(*wanted),
                       "The link's encoder cannot be used" if from_link else "The server's --encoder cannot be used")
        if spec is not None:
            apply_spec(spec, trusted=not from_link)
        if spec is not None and from_link and wanted[1] and spec.pretrained is None:
            st.warning(markdown_literal(
                f"The link's pretrained {wanted[1]!r} is not a tag of this server's model list and was not taken "
                f"(a link never names a file on the server): choose a checkpoint for {spec.arch} under Model in "
                "the sidebar.", ERROR_CHARS))


def linked_spec(encoder: str, pretrained: str | None) -> ModelSpec:
    """The spec a link names (its ``encoder=`` and ``encoder_pretrained=``), as far as this server can show it: the built-in model, a hub repository,
    a pretrained tag of the model list, or an open_clip architecture (its checkpoint file then chosen
    from the server's menu: a ``pretrained`` that is not a listed tag is left out, since a link never
    names a file); ``ValueError`` saying what to do for anything else."""
    spec = parse_model_spec(encoder, pretrained)
    if spec.family == "builtin" or spec.hub_repo or f"{spec.arch}/{spec.pretrained}" in catalog():
        return spec
    if spec.arch not in open_clip_architectures():
        raise ValueError(f"open_clip has no architecture {spec.arch!r}; choose a model under Model in the sidebar")
    return parse_model_spec(spec.model)


def open_clip_architectures() -> set[str]:
    import open_clip

    return set(open_clip.list_models())


def encoder_widgets(bar, roots) -> None:
    """The encoder's menu and, by its entry, the pretrained tag, the hub repository or the
    architecture and checkpoint file (read by :func:`~anchordiv.explorer.sidebar_state.read_sidebar`)."""
    kind = setting_widget(bar, "encoder_kind")
    if kind == PRETRAINED:
        entries = catalog()
        setting_widget(bar, "openclip_pretrained", options=list(entries), format_func=lambda token: entries[token].label)
    elif kind == HUB:
        repos = [entry.model.removeprefix("open_clip:hf-hub:") for entry in cached.encoder_menu()
                 if "hf-hub:" in entry.model]

        def suggest() -> None:
            # A callback runs before the page: a value that is none of the repos is the menu's to name.
            suggested = current_value("hub_suggestion")
            if suggested in repos:
                replace_value("hub_repo", suggested)

        setting_widget(bar, "hub_suggestion", options=repos, on_change=suggest)
        setting_widget(bar, "hub_repo")
    elif kind == CHECKPOINT:
        setting_widget(bar, "openclip_arch")
        if roots.allow_any_path:
            setting_widget(bar, "openclip_checkpoint")
        else:
            setting_widget(bar, "checkpoint_choice", options=[str(path) for path in roots.checkpoints()],
                           format_func=display_name)


def load_encoder_for(choice: EncoderChoice):
    """The chosen encoder, on the server's device (named in the sidebar); its weights downloaded
    first where they are missing and the server allows it (an info box naming the files and where
    to put them where it does not); a stop while nothing loadable is chosen."""
    launch = cached.launch_options()
    encoder = load_checkpoint(choice, launch) if choice.kind == CHECKPOINT else load_named(choice, launch)
    st.sidebar.caption(f"Encoding on {describe_device(encoder.device)}; ranking and maps on "
                       f"{describe_device(cached.server_device())}.")
    return encoder


def load_named(choice: EncoderChoice, launch):
    """The built-in model, an open_clip pretrained tag or a hub model, by its spec."""
    spec = choice.spec
    if spec is None:
        st.info("Choose or type a Hugging Face repo (ORG/REPO) of an open_clip model in the sidebar."
                if choice.kind == HUB else "Choose a model in the sidebar.")
        st.stop()
    if spec.family != "builtin":
        ensure_files(spec, launch.allow_download)
    return attempt(lambda: page_encoder(spec, spec.pretrained, SIDEBAR_MODELS), f"Could not load {shown(spec.label)}",
                   stop=True)


def load_checkpoint(choice: EncoderChoice, launch):
    """An open_clip architecture with a checkpoint file from the data roots (or typed, in local mode)."""
    roots = launch.roots
    if roots.opens_nothing:
        st.info("This server offers no checkpoint files: start it with `--data-root DIR` to offer those under "
                "DIR, or choose an open_clip pretrained model or a Hugging Face repo.")
        st.stop()
    if not choice.checkpoint:
        st.info("Choose an open_clip checkpoint file in the sidebar.")
        st.stop()

    def load():
        checkpoint = str(roots.confine(choice.checkpoint, "checkpoint"))
        # The same three arguments as every other call (a Compare column's too): one cached encoder.
        return page_encoder(parse_model_spec(f"open_clip:{choice.name}"), checkpoint, SIDEBAR_MODELS)

    return attempt(load, f"Could not load the open_clip model {shown(choice.name)}", stop=True)


def ensure_files(spec: ModelSpec, allow_download: bool) -> None:
    """Nothing when the model's files are on this machine and no download of it is under way.
    Else, where the server allows it, its download (started by a visitor's click; one per model for
    the whole server, which every visitor who picks it meanwhile watches); or an info box saying
    which files to put where. Then a stop, or a rerun once the download is done."""
    key, downloads = spec.model + "|" + (spec.pretrained or ""), cached.encoder_downloads()
    job = downloads.get(key)
    missing = [] if job else attempt(lambda: missing_files(spec), f"Could not look up {shown(spec.label)}", stop=True)
    if job is None and not missing:
        return
    if job is None and not allow_download:
        st.info(markdown_literal(offline_text(spec, missing, SIDEBAR_MODELS), ERROR_CHARS))
        st.stop()
    if job is None:
        offer = st.empty()  # cleared once the download starts: its progress bar takes the place
        with offer.container():
            st.info(markdown_literal(f"{spec.label}: its files are not on this server yet: "
                                     + "; ".join(file.text() for file in missing) + ".", ERROR_CHARS))
            asked = st.button("Download and load", key="model_download", type="primary")
        if not asked:
            st.stop()
        offer.empty()
        job = downloads.start(key, lambda report: fetch_model(
            spec, progress=lambda status: report(status.fraction or 0.0, status.text())))
    watch(job, spec)
    downloads.forget(key, job)  # the files are its result: a later visit finds them, or fetches them if removed
    attempt(job.result, f"Could not download {shown(spec.label)}", stop=True)
    st.rerun()


def watch(job, spec: ModelSpec) -> None:
    """A progress bar of ``job`` (bytes, speed, time left) until it ends. A visitor who reruns the
    page meanwhile stops only this watching: the download goes on, and the next run watches again."""
    bar = st.progress(0.0, text=f"Downloading {shown(spec.label)}…")
    while not job.done.wait(WATCH_SECONDS):
        fraction, text = job.progress
        bar.progress(min(max(fraction, 0.0), 1.0), text=shown(text))


def page_encoder(spec: ModelSpec, pretrained: str | None, instead: str):
    """The encoder of ``spec`` with ``pretrained`` (its tag, or a checkpoint file the server
    opens), through the app's cached loader, on the server's device.

    Parameters
    ----------
    spec : ModelSpec
        The model.
    pretrained : str or None
        Its tag or checkpoint file, as :func:`~anchordiv.app.cached.get_encoder` takes it.
    instead : str
        What a visitor can do on this page instead (e.g. :data:`SIDEBAR_MODELS`).

    Raises
    ------
    ValueError
        As the loader does; where it refuses to fetch files this server lacks (its advice,
        ``allow_download=True``, is for code), in the page's words: :func:`fetch_refused_text`.
    """
    launch = cached.launch_options()
    try:
        return cached.get_encoder(spec.model, pretrained, launch.allow_download)
    except ValueError as error:
        if not any(advice in str(error) for advice in LIBRARY_DOWNLOAD_ADVICE):
            raise
        raise ValueError(fetch_refused_text(instead)) from error


def fetch_refused_text(instead: str) -> str:
    """What a visitor can do about a model that loads only with files fetched while it is built
    (a tokenizer, a text model's config), on a server that downloads nothing: ``instead``, or ask
    for downloads (no file to copy names them: open_clip fetches them by name)."""
    return ("it needs files from the internet that are not on this server (open_clip fetches them while it "
            f"builds the model), and this server downloads nothing. {instead}, or ask whoever runs this server "
            "to start it with `anchordiv demo --allow-download`.")


def offline_text(spec: ModelSpec, missing, instead: str) -> str:
    """What a visitor can do about a model whose files (``missing``) are not on a server that
    downloads nothing: ``instead``, or ask whoever runs the server to allow downloads or to copy
    the files (each named with its URL and folder, and the command that fetches them)."""
    files = "; ".join(f"{file.text()} into {file.folder}" for file in missing)
    fetch = (f"python -m anchordiv fetch-model {spec.model}" + (f" --pretrained {spec.pretrained}" if spec.pretrained
                                                                else "") + " --to DIR")
    return (f"{spec.label}: its weights are not on this server, and this server downloads nothing. {instead}, or "
            f"ask whoever runs this server to start it with `anchordiv demo --allow-download`, or to copy {files} "
            f"(on a machine with internet, `{fetch}` fetches them; then copy the contents of DIR into "
            f"{checkpoints_root()}).")
