"""The notice that an image lies outside the built-in model's emoji world (a photo under an emoji
model), with the way to a CLIP model instead (:mod:`anchordiv.builtin.familiarity` decides)."""
from __future__ import annotations

import numpy as np
import streamlit as st

from anchordiv.app.cached import BY_IDENTITY
from anchordiv.builtin.familiarity import images_outside_world
from anchordiv.explorer import query_image_from_upload

# A folder's check reads this many of its images, evenly spread: enough to say "most".
FOLDER_SAMPLE = 48
CLIP_WAY = ("For photos, choose an open_clip model under Model in the sidebar, or start the demo with "
            "`make demo ENCODER=open_clip:ViT-B-32 PRETRAINED=laion2b_s34b_b79k` (README: \"Your own photos "
            "with CLIP\").")
UPLOAD_NOTICE = ("This image looks unlike anything the built-in model was trained on: it knows emoji drawings "
                 "only, so these neighbours mean little for a photo. " + CLIP_WAY)
FOLDER_NOTICE = ("Most images in this folder look unlike anything the built-in model was trained on: it knows "
                 "emoji drawings only, so their neighbours mean little. " + CLIP_WAY)


@st.cache_data(show_spinner=False, max_entries=32, hash_funcs=BY_IDENTITY)
def upload_outside_world(encoder, data: bytes, name: str) -> bool:
    """Whether an uploaded image lies outside ``encoder``'s world (False for models without the check)."""
    mask = images_outside_world(encoder, [query_image_from_upload(data, name)])
    return bool(mask is not None and mask[0])


@st.cache_data(show_spinner=False, max_entries=8, hash_funcs=BY_IDENTITY)
def folder_outside_world(encoder, gallery) -> bool:
    """Whether most of a folder gallery's images (a sample of :data:`FOLDER_SAMPLE`) lie outside the world."""
    if not hasattr(encoder, "weights_sha256") or len(gallery) == 0:
        return False
    items = np.unique(np.linspace(0, len(gallery) - 1, min(FOLDER_SAMPLE, len(gallery))).round().astype(int))
    mask = images_outside_world(encoder, [gallery.image(int(item)) for item in items])
    return bool(mask is not None and mask.mean() > 0.5)


def upload_notice(encoder, data: bytes, name: str) -> None:
    """A warning by the query when the upload lies outside the built-in model's world."""
    if upload_outside_world(encoder, data, name):
        st.warning(UPLOAD_NOTICE, icon=":material/photo_camera:")


def folder_notice(encoder, gallery) -> None:
    """One warning in the sidebar when most of a folder gallery lies outside the built-in model's world."""
    if folder_outside_world(encoder, gallery):
        st.sidebar.warning(FOLDER_NOTICE, icon=":material/photo_camera:")
