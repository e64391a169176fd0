"""Checks made before a parser touches a file: containers that expand beyond reason (zip and
Flate bombs) and files whose bytes say they are something other than their name says.

- A zip (EPUB, DOCX) is refused when an entry's declared uncompressed size exceeds
  `max_entry` or all entries together exceed `max_total`. Python's zipfile never reads past an
  entry's declared size, so the declared sizes bound what is decompressed.
- A PDF is refused when one of its Flate streams inflates beyond `max_stream` bytes: each
  stream is inflated incrementally and given up at the limit, so the check itself stays
  bounded. (A PDF parser inflates a page's content stream whole, in memory.)
"""

from __future__ import annotations

import re
import zipfile
import zlib
from pathlib import Path

from ingest.loaders.base import LoadError

MAX_ENTRY_BYTES = 50 * 1024 * 1024
MAX_TOTAL_BYTES = 500 * 1024 * 1024
MAX_STREAM_BYTES = 256 * 1024 * 1024

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Compound File: .doc, encrypted .docx


def check_zip(path: Path, kind: str, max_entry: int, max_total: int) -> None:
    """`kind` names the format in the messages ("EPUB", "Word 文档" …)."""
    if not zipfile.is_zipfile(path):
        raise LoadError(
            f"不是有效的 {kind}（不是 zip 文件）", f"not a valid {kind} (not a zip file)"
        )
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError) as err:
        raise LoadError(f"{kind} 已损坏", f"damaged {kind}: {err}") from None
    total = 0
    for info in infos:
        total += info.file_size
        if info.file_size > max_entry:
            raise LoadError(
                f"{kind} 内文件过大（{info.filename}，解压后 {info.file_size / 1048576:.0f} MB），疑似 zip 炸弹",
                f"{kind} entry too large when decompressed ({info.filename}: {info.file_size} bytes)",
            )
    if total > max_total:
        raise LoadError(
            f"{kind} 解压后总体积过大，疑似 zip 炸弹",
            f"{kind} too large when decompressed ({total})",
        )


_STREAM = re.compile(rb">>\s*stream\r?\n")
_FLATE = re.compile(rb"/(?:FlateDecode|Fl)(?![A-Za-z])")
_ENDSTREAM = b"endstream"


def check_pdf_streams(data: bytes, max_stream: int = MAX_STREAM_BYTES) -> None:
    """Refuse a PDF with a Flate stream that inflates beyond `max_stream` (module docstring).
    A stream is Flate when its dictionary (from its `obj` keyword, within 2 KB) names the
    filter; nested dictionaries (`/DecodeParms << … >>`) are fine."""
    for match in _STREAM.finditer(data):
        head = data[max(0, match.start() - 2048) : match.start()]
        opened = head.rfind(b" obj")
        if not _FLATE.search(head[opened if opened >= 0 else 0 :]):
            continue
        start = match.end()
        end = data.find(_ENDSTREAM, start)
        if end < 0:
            end = len(data)
        if _inflates_beyond(data, start, end, max_stream):
            raise LoadError(
                f"PDF 中的数据流解压后超过 {max_stream // 1048576} MB，疑似压缩炸弹",
                f"a PDF stream inflates beyond {max_stream} bytes (compression bomb?)",
            )


def _inflates_beyond(data: bytes, start: int, end: int, limit: int) -> bool:
    inflater = zlib.decompressobj()
    out = 0
    step = 1 << 20
    pos = start
    try:
        while pos < end:
            chunk = data[pos : min(pos + step, end)]
            pos += len(chunk)
            out += len(inflater.decompress(chunk, limit - out + 1))
            while inflater.unconsumed_tail and out <= limit:
                out += len(inflater.decompress(inflater.unconsumed_tail, limit - out + 1))
            if out > limit:
                return True
            if inflater.eof:
                return False
    except zlib.error:
        return False  # not our concern here: the parser reports damaged streams
    return out > limit


def sniff(head: bytes) -> str | None:
    """What the first bytes say the file is: "pdf", "zip", "ole" or None."""
    if b"%PDF-" in head[:1024]:
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    if head.startswith(OLE_MAGIC):
        return "ole"
    return None
