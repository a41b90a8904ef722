"""Bounds on an ``.xlsx`` workbook, checked before openpyxl loads anything.

An xlsx file is a zip of XML parts, and the 2 GiB input limit (``gate.MAX_FILE_BYTES``) applies to
the compressed file: a 3 MB workbook can hold one 3 GB cell, which openpyxl and pandas would expand
to several times that in memory. So the zip's directory is read first (each part's declared
uncompressed size: Python's zipfile, and openpyxl through it, never inflates a part beyond it, and a
part whose data disagrees fails its CRC) and the parts in total are bounded; then the cell parts
(shared strings, worksheets) are inflated once in blocks, and a block holding no cell boundary means
one cell's XML is longer than the block: a cell over the field limit, refused before it is loaded.
This costs one extra inflate of the sheet (seconds for a million rows; loading them takes minutes).
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from store.ingest.gate import MAX_FIELD_CHARS, MAX_FILE_BYTES, fail

MAX_XLSX_XML_BYTES = 2 * MAX_FILE_BYTES  # the parts, uncompressed: markup about doubles the text a sheet holds
# One cell's XML: a character takes at most 6 bytes (``&quot;``), so a cell this long holds more than
# MAX_FIELD_CHARS characters and would be refused by the gate anyway; cells are found by their tags.
MAX_XLSX_CELL_BYTES = 8 * MAX_FIELD_CHARS
_CELL_TAG = re.compile(rb"<(?:\w+:)?(?:c|si)[\s>/]")  # a worksheet cell or a shared string (prefix allowed)
_CELL_PARTS = re.compile(r"xl/(?:sharedStrings\.xml|worksheets/[^/]+\.xml)", re.IGNORECASE)


def check_workbook(path: Path) -> None:
    """Refuse a workbook whose parts unpack beyond MAX_XLSX_XML_BYTES or that holds a cell longer
    than MAX_XLSX_CELL_BYTES, naming the part; a file that is not a zip is refused as unreadable."""
    try:
        with zipfile.ZipFile(path) as book:
            parts = book.infolist()
            total = sum(p.file_size for p in parts)
            if total > MAX_XLSX_XML_BYTES:
                raise fail(
                    path,
                    f"the workbook unpacks to {total:,} bytes, above the {MAX_XLSX_XML_BYTES:,}-byte limit for "
                    ".xlsx; export it as TSV or split it",
                )
            for part in parts:
                if _CELL_PARTS.fullmatch(part.filename) and part.file_size > MAX_XLSX_CELL_BYTES:
                    _scan_cells(path, book, part)
    except FileNotFoundError:
        raise fail(path, "no such file") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError, EOFError) as exc:
        raise fail(path, f"not a readable .xlsx workbook ({type(exc).__name__}: {exc})") from None


def _scan_cells(path: Path, book: zipfile.ZipFile, part: zipfile.ZipInfo) -> None:
    """Inflate ``part`` in blocks of MAX_XLSX_CELL_BYTES; a block without a cell tag is inside one
    over-long cell. The last few bytes carry over, so a tag split between blocks is still seen."""
    keep = 16
    with book.open(part) as f:
        tail = b""
        while block := f.read(MAX_XLSX_CELL_BYTES):
            if len(block) == MAX_XLSX_CELL_BYTES and not _CELL_TAG.search(tail + block):
                raise fail(
                    path,
                    f"a cell in {part.filename} holds over {MAX_XLSX_CELL_BYTES:,} bytes of XML, more than "
                    f"the {MAX_FIELD_CHARS:,}-character field limit; truncate it or keep it out of the workbook",
                )
            tail = block[-keep:]
