"""Reading a CSV file strictly: refusing what ``pandas.read_csv`` would read without a word but
wrongly, each refusal naming the file, the line and the fix."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from ..images import read_regular_file

MAX_CSV_BYTES = 50_000_000


def read_csv_file(path: Path, name: str, **options) -> pd.DataFrame:
    """The comma-separated file at ``path``, checked strictly (:func:`_check_csv_structure`), then
    read by ``pandas.read_csv(..., **options)``; at most :data:`MAX_CSV_BYTES`.

    ``name`` is how messages refer to the file. An empty, binary or non-UTF-8 file, and one that
    pandas would read quietly wrong (a quote never closed or closed on a later line, a stray
    quote, a row with more or fewer cells than the header, a blank or repeated column name),
    raises ``ValueError`` that names the file, the line and the fix; so does anything
    :func:`~anchordiv.images.read_regular_file` refuses (pipes, devices, /proc, too large).
    """
    data = read_regular_file(path, name, MAX_CSV_BYTES, "for CSV files; split it or drop unused columns")
    if b"\0" in data:
        line = data[:data.index(b"\0")].count(b"\n") + 1
        raise ValueError(f"{name}: line {line} holds binary data (a NUL byte), so this is not a CSV text file; "
                         "export the table as CSV (UTF-8)")
    try:
        text = data.decode("utf-8-sig")  # Excel's "CSV UTF-8" starts with a byte order mark
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise ValueError(f"{name}: line {line} is not UTF-8 text (byte 0x{data[error.start]:02x}); save the file "
                         "as UTF-8 (e.g. 'CSV UTF-8' in Excel, or iconv -f latin1 -t utf-8)") from None
    if not text.strip():
        raise ValueError(f"{name}: the file is empty; write a header row naming the columns, then one row per image")
    _check_csv_structure(text, name)
    try:
        return pd.read_csv(io.StringIO(text), **options)
    except pd.errors.ParserError as error:  # what the check above lets through and pandas still refuses
        detail = " ".join(str(error).split()).removeprefix("Error tokenizing data. C error: ")
        raise ValueError(f"{name}: cannot be read as CSV ({detail}); check the quoting and that every row has as "
                         "many cells as the header") from None


_QUOTE_FIX = 'close the quote on the line it opens, or double a quote that is part of the text ("")'


def _check_csv_structure(text: str, name: str) -> None:
    """Refuse what ``pandas.read_csv`` would read without a word but wrongly: a quote left open
    (the rest of the file becomes one cell), a quoted cell over several lines (labels and paths are
    one line each, so this is a quote closed too late), a stray or unbalanced quote, a row with
    more cells than the header (pandas would shift the columns) or fewer (it would fill in blanks),
    and a header with a blank or repeated column name. Blank lines are skipped, as pandas does.

    Raises ``ValueError`` naming ``name``, the line and the fix.
    """
    lines = list(io.StringIO(text, newline=""))  # split at \n, \r and \r\n only, as the csv module and pandas do
    reader = csv.reader(lines, strict=True)
    header: list[str] | None = None
    end = 0
    while True:
        start = end + 1
        try:
            cells = next(reader, None)
        except csv.Error as error:
            where = ("opens a quoted cell (\") that is never closed" if "end of data" in str(error)
                     else f"has a stray quote (\") inside a cell ({error})")
            raise ValueError(f"{name}: line {start} {where}; {_QUOTE_FIX}") from None
        if cells is None:
            return
        end = reader.line_num
        if end > start:
            raise ValueError(f"{name}: line {start} opens a quoted cell (\") that closes only on line {end}; "
                             f"{_QUOTE_FIX}")
        if not cells:
            continue
        if lines[start - 1].count('"') % 2:
            raise ValueError(f"{name}: line {start} has an unbalanced quote (\") inside a cell; put a cell that holds "
                             'a quote in quotes, the quote doubled ("12"" vinyl"), or close the quote it opens')
        if header is None:
            header = _check_header(cells, f"{name}: line {start}, the header,")
        elif len(cells) != len(header):
            raise ValueError(f"{name}: line {start} has {len(cells)} cell{'s' * (len(cells) != 1)} but the header "
                             f'has {len(header)}; quote cells that contain commas ("a, b"), and give every row one '
                             "cell per column")


def _check_header(cells: list[str], where: str) -> list[str]:
    """The header's column names, refusing a blank one (pandas would call it "Unnamed: N") and a
    repeated one (pandas would rename the second "label.1"); ``where`` starts the message."""
    names = [cell.strip() for cell in cells]
    if "" in names:
        raise ValueError(f"{where} has no name for column {names.index('') + 1}; name every column (e.g. "
                         "path,label,style) or remove the empty one")
    repeated = [column for column in dict.fromkeys(names) if names.count(column) > 1]
    if repeated:
        raise ValueError(f"{where} names column {repeated[0]!r} more than once; keep one column of each name")
    return names

