"""Datasets for anchordiv experiments; kept apart from the math core, which never imports them.

* :func:`load_emoji_world`: emoji from two vendors in several styles, labelled by object and style.
"""
from ..cache import cache_dir
from .emoji import EmojiWorld, load_emoji_world
from .layouts import LAYOUTS, ImageLayout, load_layout
from .shipped import ShippedDataError
from .styles import STYLES

__all__ = ["LAYOUTS", "STYLES", "EmojiWorld", "ImageLayout", "ShippedDataError", "cache_dir", "load_emoji_world", "load_layout"]
