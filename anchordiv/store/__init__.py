"""A gallery of embeddings on disk: ``.npy`` shards plus a manifest.

Layout of a store folder::

    manifest.json          format version, dim, dtype, rows, encoder, per-file sha256 (written last)
    shard-00000.npy ...    (rows_s, d) float16 (default) or float32, unit-norm rows
    ids.npy                (G,) int64 external ids of the rows (default 0 .. G-1)
    labels.csv             optional, G rows (a pandas DataFrame written with to_csv)
    writer.lock            held by the one writer at work (see below)
    plan.json              only in a store made by a build: the fixed list of items and settings
    shard-00000.json ...   only in a store made by a build: the record of a finished shard (its sha256,
                           the items it skipped and why), written after the shard

A store made by :func:`build_store` (e.g. a folder of images embedded by
:func:`anchordiv.embeddings.embed_folder_to_store`) is resumable: see :class:`StoreWriter`.

Three rules keep a store honest when its folder is not trusted or not quiet:

* every file a store uses lies inside its folder once symlinks are followed (``open`` refuses a
  link out, and a manifest naming ``..`` or an absolute path), so a hostile folder cannot make a
  store serve another file's bytes;
* one writer at a time: a writer holds an exclusive lock on ``writer.lock`` in the folder for its
  life, and a second one is refused before it touches anything;
* what keeps per-row terms of a store (an index) records each shard's :class:`ShardFingerprint`
  and calls :meth:`GalleryStore.check_unchanged` before it reads the shard again, so a shard
  changed on disk is refused by name instead of being scanned with stale terms.

The modules: :mod:`.manifest` (the manifest and the confinement rule), :mod:`.reader`
(:class:`GalleryStore`), :mod:`.fingerprint` (:class:`ShardFingerprint`), :mod:`.folder` (writing
a store's files, and a store from one array), :mod:`.lock` (one writer at a time), :mod:`.plan`
(:class:`StorePlan`, :class:`BuildReport`) and :mod:`.writer` (:class:`StoreWriter`,
:func:`build_store`).
"""
from .fingerprint import ShardFingerprint
from .manifest import DTYPES, FORMAT, IDS_FILE, LABELS_FILE, LOCK_FILE, MANIFEST, VERSION
from .plan import PLAN_FILE, PLAN_FORMAT, BuildReport, StorePlan
from .reader import GalleryStore
from .writer import StoreWriter, build_store

__all__ = [
    "DTYPES", "FORMAT", "IDS_FILE", "LABELS_FILE", "LOCK_FILE", "MANIFEST", "PLAN_FILE", "PLAN_FORMAT", "VERSION",
    "BuildReport", "GalleryStore", "ShardFingerprint", "StorePlan", "StoreWriter", "build_store",
]
