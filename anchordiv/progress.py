"""How long work reports its progress: one type, shared by every part of the library that reports."""
from __future__ import annotations

from typing import Callable

# Called with the fraction done, in [0, 1], and a line saying what is being done ("embedding 3/40").
ProgressCallback = Callable[[float, str], None]
