"""What a resumable build fixes before any shard is embedded, the :class:`StorePlan` (kept in the
store's folder as ``plan.json``, so that every later run of any engine can tell whether it may
resume the build there), and what one run of it did, the :class:`BuildReport`."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._validation import check_positive_int
from ..images import display_name
from .manifest import DTYPES, OVERWRITE, VERSION

PLAN_FILE = "plan.json"
PLAN_FORMAT = "anchordiv-store-plan"


@dataclass(frozen=True)
class StorePlan:
    """What a store built by :class:`~anchordiv.store.StoreWriter` holds, fixed before any shard is embedded.

    ``items`` are ``(key, fingerprint)`` pairs in store order (e.g. a file's relative path and the
    sha256 of its content); shard ``s`` covers items ``s * shard_rows`` up to the next shard, so
    every run of the same plan agrees on which items go to which shard. An item that cannot be
    embedded is skipped with its reason; the kept rows get ids ``0 .. G-1`` in item order.
    ``skipped`` lists ``(name, reason)`` refused before planning (e.g. sockets in a folder);
    ``settings`` anything else the rows or labels depend on (JSON), e.g. the labels file's sha256.
    ``source`` where the items can be read again (an image folder, for thumbnails): recorded in the
    manifest but not part of :attr:`key`, so a moved folder does not void a build.
    """

    items: tuple[tuple[str, str], ...]
    dim: int
    encoder: str | None
    shard_rows: int = 4096
    dtype: str = "float16"
    skipped: tuple[tuple[str, str], ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}; got {self.dtype!r}.")
        check_positive_int(self.shard_rows, "shard_rows")
        check_positive_int(self.dim, "dim")
        if not self.items:
            raise ValueError("the plan has no items, so the store would be empty; give at least one item "
                             "(for a folder: at least one image file).")
        keys = [key for key, _ in self.items]
        if len(set(keys)) != len(keys):
            raise ValueError("the plan's item keys must be distinct; drop the repeated ones.")

    @property
    def n_shards(self) -> int:
        return -(-len(self.items) // self.shard_rows)

    def shard_keys(self, number: int) -> list[str]:
        """The keys of the items of shard ``number``, in order."""
        return [key for key, _ in self.items[number * self.shard_rows:(number + 1) * self.shard_rows]]

    def to_json(self) -> dict[str, Any]:
        return {"format": PLAN_FORMAT, "version": VERSION, "dim": self.dim, "encoder": self.encoder,
                "shard_rows": self.shard_rows, "dtype": self.dtype, "settings": self.settings,
                "skipped": [list(entry) for entry in self.skipped], "items": [list(item) for item in self.items]}

    @property
    def key(self) -> str:
        """sha256 of everything in the plan: two runs may share a folder only when their keys are equal."""
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()

    def difference(self, other: "StorePlan") -> str:
        """The first thing that differs from ``other``, in words (for refusal messages)."""
        for name in ("encoder", "dim", "dtype", "shard_rows", "settings", "skipped"):
            if getattr(self, name) != getattr(other, name):
                return f"{name} {getattr(other, name)!r} there, {getattr(self, name)!r} now"
        mine, theirs = dict(self.items), dict(other.items)
        kinds = {"new": [key for key in mine if key not in theirs], "gone": [key for key in theirs if key not in mine],
                 "changed": [key for key in mine if key in theirs and mine[key] != theirs[key]]}
        words = [f"{len(keys)} item(s) {kind} (first: {display_name(keys[0])!r})"
                 for kind, keys in kinds.items() if keys]
        return ", ".join(words) or "the items are in another order"


@dataclass
class BuildReport:
    """What one build did: shard numbers it embedded, how many finished shards of an earlier run it
    reused, and the files of the damaged ones it embedded again."""

    embedded: list[int]
    reused: int
    rebuilt: list[str]


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; ``None`` when it is missing or not a JSON object."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_plan(directory: Path) -> StorePlan | None:
    """The plan of the build in ``directory``; ``None`` when there is none. A plan file that cannot
    be read is a ``ValueError`` naming it (it is written atomically, so it was changed by hand)."""
    path = directory / PLAN_FILE
    if not path.exists():
        return None
    data = read_json(path)
    try:
        if data is None or data.get("format") != PLAN_FORMAT or data.get("version") != VERSION:
            raise ValueError("not a version-1 store plan")
        return StorePlan(items=tuple((str(key), str(print_)) for key, print_ in data["items"]), dim=data["dim"],
                         encoder=data["encoder"], shard_rows=data["shard_rows"], dtype=data["dtype"],
                         skipped=tuple((str(name), str(reason)) for name, reason in data["skipped"]),
                         settings=data["settings"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is damaged ({error}); {OVERWRITE} to build the store afresh, or "
                         "choose another folder.") from error
