"""Images that clearly differ, for the tests that open a folder in the explorer: drawings of as many
distinct emoji from the built-in model's held-out world. Anchor sets A and B rank them apart for
every sampled query, so ``p`` calibrates on any machine. Shades of one or two colours leave A and B
with (almost) the same neighbours, and whether calibration then refuses ("nothing to calibrate")
depends on which way a near-tie rounds."""
from __future__ import annotations

import numpy as np
from PIL import Image

from anchordiv.datasets import open_emoji_world

# Well over the explorer's 10 neighbours: with 12 images a query ranks 11 others, so its A and B
# top-10 differ by one image at most, whatever the images are.
DRAWINGS = 24


def distinct_drawings(count: int = DRAWINGS) -> list[Image.Image]:
    """``count`` drawings of as many emoji, spread evenly over the held-out world (so over its styles).

    Parameters
    ----------
    count : int, default DRAWINGS
        How many drawings, at most one per emoji of the held-out world.

    Returns
    -------
    list of PIL.Image.Image
        The drawings, 64 x 64 RGB, in a fixed order.
    """
    world = open_emoji_world("heldout")
    items = np.linspace(0, len(world) - 1, count).round().astype(int)
    return [Image.fromarray(world.image(int(item))) for item in items]
