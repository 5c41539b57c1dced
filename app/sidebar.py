"""The sidebar: the data (built-in world, image folder or gallery store), the encoder and the
geometry, drawn once per run and read as one :class:`~anchordiv.explorer.sidebar_state.SidebarState`;
and the gallery source it names, opened through the caches (an error box naming the fix, and a
stop, when it cannot be)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from anchordiv import explorer as ex
from anchordiv.app import cached
from anchordiv.app.encoder_choice import encoder_widgets, follow_encoder
from anchordiv.app.errors import ERROR_CHARS, attempt
from anchordiv.app.photo_notice import folder_notice
from anchordiv.app.session_keys import LAUNCH_FOLLOWED, PAGE_SIDEBAR, SIDEBAR_STATE
from anchordiv.app.setting_widgets import draw_part, setting_widget
from anchordiv.app.url_state import follow_link, sidebar_fields
from anchordiv.app.widget_state import current_value, write_values
from anchordiv.explorer.literal import markdown_literal
from anchordiv.explorer.settings import FOLDER, SIDEBAR, STORE
from anchordiv.explorer.sidebar_state import MODEL_SETTINGS, GalleryChoice, SidebarState, model_settings, read_sidebar
from anchordiv.gallery import Gallery
from anchordiv.explorer.launch import LaunchOptions
from anchordiv.images import display_name


def data_widgets(bar, roots: ex.DataRoots) -> None:
    """The gallery: a menu of what the data roots offer, or typed paths in local mode."""
    kind = setting_widget(bar, "gallery_kind")
    if kind == STORE:
        if roots.allow_any_path:
            setting_widget(bar, "store_path")
        else:
            setting_widget(bar, "store_choice", options=[str(path) for path in roots.stores()],
                           format_func=display_name)
    if kind == FOLDER:
        if roots.allow_any_path:
            setting_widget(bar, "folder_path")
            setting_widget(bar, "folder_labels")
        else:
            folder_menus(bar, roots)


def with_launched(options: list[str], key: str) -> list[str]:
    """A data menu's ``options`` with what the launch put in menu ``key`` (its --folder or
    --labels, confined then) where the menu's look missed it; a value of another kind is the
    menu's to name."""
    launched = current_value(key)
    return options + [launched] if isinstance(launched, str) and launched and launched not in options else options


def folder_menus(bar, roots: ex.DataRoots) -> None:
    """The image folders of the data roots, and the labels CSVs beside the one chosen."""
    folders = with_launched([str(path) for path in roots.folders_with_images()], "folder_choice")
    folder = setting_widget(bar, "folder_choice", options=folders, format_func=display_name)
    csvs = [str(path) for path in (attempt(lambda: roots.labels_csvs(roots.confine(folder, "image folder")),
                                           "Could not use that image folder") or [])] if folder else []
    setting_widget(bar, "folder_labels_choice", options=with_launched(csvs, "folder_labels_choice"),
                   format_func=display_name)


def geometry_widgets(bar) -> None:
    """Every geometry setting of the sidebar (the anchor model, the settings it takes, the
    direction, top-k and ITI), in the table's order. The linked widgets take their values from
    the session state (:func:`~anchordiv.app.url_state.follow_link`)."""
    taken = model_settings(setting_widget(bar, "anchor_model"))
    draw_part(bar, SIDEBAR, skipped=("anchor_model", *(key for key in MODEL_SETTINGS if key not in taken)))


def draw_sidebar() -> SidebarState:
    """The sidebar, drawn once per run by the entry file for the pages that use it, and what it
    sets; kept for the page (:func:`sidebar_state`). The geometry settings follow the page's link."""
    linked = follow_link(sidebar_fields(), SIDEBAR)
    bar = st.sidebar
    bar.title("anchordiv explorer")
    st.session_state[PAGE_SIDEBAR] = bar.container()
    bar.subheader("Data and model")
    launch = attempt(cached.launch_options, "This server's launch options are misconfigured", stop=True)
    follow_launch(launch)
    follow_encoder(linked, launch)
    data_widgets(bar, launch.roots)
    encoder_widgets(bar, launch.roots)
    bar.subheader("Geometry")
    geometry_widgets(bar)
    state = attempt(lambda: read_sidebar(st.session_state, launch.roots.allow_any_path), "Invalid geometry", stop=True)
    if state.encoder.problem:
        st.error(markdown_literal(f"That model name cannot be used: {state.encoder.problem}", ERROR_CHARS))
    # A checkpoint file's architecture travels in the page's link, its path does not.
    write_values(dict(zip(("encoder", "encoder_pretrained"), state.encoder.link_values())))
    st.session_state[SIDEBAR_STATE] = state
    return state


def sidebar_state() -> SidebarState:
    """What the sidebar this run drew sets (:func:`draw_sidebar`)."""
    return st.session_state[SIDEBAR_STATE]


def page_sidebar():
    """The sidebar's container for the page's own controls, above the shared settings (drawn
    empty by :func:`draw_sidebar`: a page that uses it fills it on each run)."""
    return st.session_state[PAGE_SIDEBAR]


def follow_launch(launch: LaunchOptions) -> None:
    """On a session's first run, the image folder the server was launched with (``--folder``)."""
    state = st.session_state
    if LAUNCH_FOLLOWED in state or not launch.folder:
        state[LAUNCH_FOLLOWED] = True
        return
    state[LAUNCH_FOLLOWED] = True
    folder = attempt(lambda: launch.roots.confine(launch.folder, "launch folder"), "The server's --folder cannot be used")
    labels = launch.labels_csv and attempt(lambda: str(launch.roots.confine(launch.labels_csv, "launch labels CSV")),
                                           "The server's --labels cannot be used")
    if folder is None:
        return
    if launch.roots.allow_any_path:
        write_values({"gallery_kind": FOLDER, "folder_path": str(folder), "folder_labels": labels or ""})
    else:
        write_values({"gallery_kind": FOLDER, "folder_choice": str(folder), "folder_labels_choice": labels or None})


def no_data_folders() -> None:
    st.info("This server offers no data folders. Start it with `--data-root DIR` (after `--` on the "
            "`streamlit run` line) or `ANCHORDIV_DATA_ROOTS=DIR` to offer them, or `--allow-any-path` "
            "for a local session that may open any path.")
    st.stop()


def load_source_for(choice: GalleryChoice, encoder) -> ex.GallerySource:
    """The chosen gallery as a source: a gallery store, or the world or an image folder in memory."""
    return load_store_for(choice, encoder) if choice.kind == STORE else cached.memory_source(
        load_gallery_for(choice, encoder))


def load_store_for(choice: GalleryChoice, encoder) -> ex.StoreSource:
    """The chosen gallery store, opened for ``encoder`` (cached per store); an error box naming the
    fix and a stop when it is not a store, is damaged, or was embedded by another model."""
    roots = cached.data_roots()
    if roots.opens_nothing:
        no_data_folders()
    if not choice.path:
        st.info(("Type the folder of" if roots.allow_any_path else "Choose") + " a gallery store in the sidebar "
                "(a folder with a manifest.json, made by `python -m anchordiv embed FOLDER --out STORE`).")
        st.stop()

    def load() -> ex.StoreSource:
        folder = roots.confine(choice.path, "gallery store")
        return cached.get_store_source(str(folder), ex.store_stamp(folder), encoder.name, encoder.dim, roots)

    return attempt(load, "Could not open that gallery store", stop=True)


def load_gallery_for(choice: GalleryChoice, encoder) -> Gallery:
    """The built-in world or the chosen image folder, in memory (the pages that need one say so on a store)."""
    if choice.kind == STORE:
        st.info("This page works on galleries held in memory, not on a gallery store: choose the built-in "
                "emoji world or an image folder in the sidebar (the Explore page opens stores).")
        st.stop()
    if choice.kind == FOLDER:
        return load_folder_for(choice, encoder)
    progress = st.empty()
    # Shown only while the first start embeds the world; later starts read the disk cache.
    gallery = attempt(lambda: cached.get_world_gallery(encoder, *cached.world_slice(),
                                                       lambda fraction, text: progress.progress(fraction, text)),
                      "Could not load the built-in emoji world", stop=True)
    progress.empty()
    return gallery


def load_folder_for(choice: GalleryChoice, encoder) -> Gallery:
    roots = cached.data_roots()
    if roots.opens_nothing:
        no_data_folders()
    if not choice.path:
        st.info(("Type the path of" if roots.allow_any_path else "Choose") + " an image folder in the sidebar.")
        st.stop()

    def load() -> Gallery:
        folder = str(roots.confine(choice.path, "image folder"))
        labels = str(roots.confine(choice.labels_csv, "labels CSV")) if choice.labels_csv else None
        return cached.get_folder_gallery(encoder, folder, labels)

    gallery = attempt(load, "Could not use that image folder", stop=True)
    folder_notice(encoder, gallery)
    if gallery.skipped:
        with st.sidebar.expander(f"⚠️ {len(gallery.skipped)} file(s) skipped"):
            st.dataframe(pd.DataFrame(gallery.skipped, columns=["file", "reason"]), hide_index=True)
    if gallery.unlabelled:
        with st.sidebar.expander(f"⚠️ {len(gallery.unlabelled)} image(s) not in the labels CSV"):
            st.caption("They keep their folder's label.")
            st.dataframe(pd.DataFrame({"file": gallery.unlabelled}), hide_index=True)
    return gallery
