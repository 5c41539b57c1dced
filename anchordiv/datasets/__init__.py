"""Datasets for anchordiv experiments; kept apart from the math core, which never imports them.

* :func:`load_emoji_world`: emoji from two vendors in several styles, labelled by object and style;
  :func:`open_emoji_world`: the same, each image rendered when asked for.
"""
from ..cache import cache_dir
from .emoji import EmojiWorld, EmojiWorldView, load_emoji_world, open_emoji_world
from .layouts import LAYOUTS, ImageLayout, load_layout
from .shipped import ShippedDataError
from .styles import STYLES

__all__ = ["LAYOUTS", "STYLES", "EmojiWorld", "EmojiWorldView", "ImageLayout", "ShippedDataError", "cache_dir",
           "load_emoji_world", "load_layout", "open_emoji_world"]
