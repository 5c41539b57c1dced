"""Embedding a folder of images: in memory with a cache that is reused only when it provably fits
(:func:`embed_folder`, giving :class:`FolderEmbeddings`), or into a resumable
:class:`~anchordiv.store.GalleryStore` (:func:`embed_folder_to_store`).

Only regular files are read: pipes, sockets, devices, link loops and broken links in the folder
are listed in ``skipped`` with the reason, and /proc, /sys and /dev are refused as folders.

The modules: :mod:`.scan` (what a folder holds), :mod:`.csv_files` (strict CSV reading),
:mod:`.labels` (labels from folders or a CSV), :mod:`.encode` (checked batches of images),
:mod:`.vector_cache` (the cache, its partial batches and its lock), :mod:`.folder`
(:func:`embed_folder`) and :mod:`.to_store` (the folder's store plan and the local engine).
"""
from .csv_files import MAX_CSV_BYTES, read_csv_file
from .encode import embed_files
from .folder import FolderEmbeddings, embed_folder, export_npz
from .labels import read_labels_table, unlabelled_paths
from .scan import list_files, scan_folder
from .to_store import FolderStorePlan, embed_folder_to_store, plan_folder_store
from .vector_cache import CACHE_FORMAT

__all__ = [
    "CACHE_FORMAT", "MAX_CSV_BYTES", "FolderEmbeddings", "FolderStorePlan", "embed_files", "embed_folder",
    "embed_folder_to_store", "export_npz", "list_files", "plan_folder_store", "read_csv_file", "read_labels_table",
    "scan_folder", "unlabelled_paths",
]
