"""Deletion vectors as the Delta protocol stores them, decoded into row indexes.

A deletion vector (DV) names the rows of one data file that are no longer in the table. Its
descriptor (``add.deletionVector``) says where the bitmap is: inline in the log (``'i'``, Z85
text), in a file next to the data named from a UUID (``'u'``), or at an absolute path (``'p'``).
The bitmap is a ``RoaringBitmapArray``: a magic number, then a 64-bit Roaring bitmap in the
portable format (buckets of 32-bit Roaring bitmaps; Delta's older "native" layout is read too).
A DV file holds a version byte and, per DV, a big-endian size, the bitmap and its CRC-32.
Decoding costs memory in proportion to the deleted rows only. Sources: Delta's PROTOCOL.md
("Deletion Vectors", "Deletion Vector Format") and the RoaringFormatSpec.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from openmirror_nb._core.errors import OpenMirrorError

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUE = {c: i for i, c in enumerate(_Z85)}
_PORTABLE, _NATIVE = 1681511377, 1681511376
_COOKIE_RUNS, _COOKIE_NO_RUNS = 12347, 12346


class DeletionVectorError(OpenMirrorError):
    """A deletion vector of a Delta table could not be decoded (damaged or an unknown format)."""


@dataclass(frozen=True)
class DeletionVector:
    """One ``deletionVector`` descriptor of an ``add`` or ``remove`` action."""

    storage: str
    path_or_inline: str
    offset: int
    size: int
    cardinality: int

    @classmethod
    def of(cls, action: Mapping[str, Any]) -> DeletionVector | None:
        dv = action.get("deletionVector")
        if not dv:
            return None
        return cls(
            dv["storageType"],
            dv["pathOrInlineDv"],
            int(dv.get("offset") or 0),
            int(dv["sizeInBytes"]),
            int(dv.get("cardinality", 0)),
        )

    def location(self) -> str | None:
        """Where the DV file is, relative to the table root or absolute; ``None`` if inline."""
        if self.storage == "i":
            return None
        if self.storage == "p":
            return self.path_or_inline
        if self.storage != "u":
            raise DeletionVectorError(f"deletion vector storage type {self.storage!r} is not known")
        prefix, encoded = self.path_or_inline[:-20], self.path_or_inline[-20:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        return f"{prefix}/{name}" if prefix else name

    def rows(self, content: bytes | None) -> np.ndarray:
        """The deleted row indexes (sorted ``int64``); ``content`` is the DV file's bytes."""
        if self.storage == "i":
            return decode_bitmap(z85_decode(self.path_or_inline)[: self.size])
        if content is None:
            raise DeletionVectorError(f"deletion vector file of {self.path_or_inline!r} was not read")
        start = self.offset
        (size,) = struct.unpack_from(">i", content, start)
        data = content[start + 4 : start + 4 + size]
        (checksum,) = struct.unpack_from(">I", content, start + 4 + size)
        if size != self.size or len(data) != size or zlib.crc32(data) != checksum:
            raise DeletionVectorError(
                f"deletion vector {self.path_or_inline!r} at offset {start} is damaged (size or CRC-32)"
            )
        rows = decode_bitmap(data)
        if self.cardinality and len(rows) != self.cardinality:
            raise DeletionVectorError(
                f"deletion vector {self.path_or_inline!r} holds {len(rows)} rows, not {self.cardinality}"
            )
        return rows


def z85_decode(text: str) -> bytes:
    """Z85 (ZeroMQ RFC 32) text to bytes: each 5 characters are 4 big-endian bytes."""
    if len(text) % 5:
        raise DeletionVectorError(f"Z85 text {text[:20]!r}... is not a multiple of 5 characters long")
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for char in text[i : i + 5]:
            value = value * 85 + _Z85_VALUE[char]
        out += value.to_bytes(4, "big")
    return bytes(out)


def decode_bitmap(data: bytes) -> np.ndarray:
    """A ``RoaringBitmapArray`` (magic number, then 32-bit Roaring bitmaps with their high 32
    bits) as sorted row indexes."""
    (magic,) = struct.unpack_from("<I", data, 0)
    if magic == _PORTABLE:  # a count, then (high bits, bitmap) per bucket
        (buckets,) = struct.unpack_from("<Q", data, 4)
        at, parts = 12, []
        for _ in range(buckets):
            (high,) = struct.unpack_from("<I", data, at)
            low, at = _roaring32(data, at + 4)
            parts.append((np.int64(high) << 32) | low)
    elif magic == _NATIVE:  # a count, then (size, bitmap) per bucket; the high bits are its index
        (buckets,) = struct.unpack_from("<I", data, 4)
        at, parts = 8, []
        for high in range(buckets):
            (size,) = struct.unpack_from("<I", data, at)
            parts.append((np.int64(high) << 32) | _roaring32(data, at + 4)[0])
            at += 4 + size
    else:
        raise DeletionVectorError(f"deletion vector has magic number {magic}, not {_PORTABLE}")
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _roaring32(data: bytes, at: int) -> tuple[np.ndarray, int]:
    """One 32-bit Roaring bitmap in the portable format at ``at``: its values and where it ends."""
    (cookie,) = struct.unpack_from("<I", data, at)
    if cookie & 0xFFFF == _COOKIE_RUNS:
        count = (cookie >> 16) + 1
        runs = np.unpackbits(np.frombuffer(data, np.uint8, (count + 7) // 8, at + 4), bitorder="little")
        at += 4 + (count + 7) // 8
        offsets = count >= 4  # the offset header is left out for a few containers with runs
    elif cookie == _COOKIE_NO_RUNS:
        (count,) = struct.unpack_from("<I", data, at + 4)
        runs, at, offsets = np.zeros(count, np.uint8), at + 8, True
    else:
        raise DeletionVectorError(f"deletion vector holds a Roaring bitmap with cookie {cookie}")
    header = np.frombuffer(data, "<u2", 2 * count, at).reshape(count, 2)
    at += 4 * count + (4 * count if offsets else 0)
    values = []
    for (key, card_minus_one), run in zip(header.tolist(), runs[:count].tolist(), strict=True):
        low, at = _container(data, at, card_minus_one + 1, bool(run))
        values.append((np.int64(key) << 16) | low)
    return (np.concatenate(values) if values else np.zeros(0, np.int64)), at


def _container(data: bytes, at: int, cardinality: int, run: bool) -> tuple[np.ndarray, int]:
    if run:
        (n,) = struct.unpack_from("<H", data, at)
        pairs = np.frombuffer(data, "<u2", 2 * n, at + 2).reshape(n, 2).astype(np.int64)
        low = np.concatenate([np.arange(s, s + length + 1) for s, length in pairs]) if n else pairs[:0, 0]
        return low.astype(np.int64), at + 2 + 4 * n
    if cardinality <= 4096:  # an array container: the sorted 16-bit values
        return np.frombuffer(data, "<u2", cardinality, at).astype(np.int64), at + 2 * cardinality
    bits = np.unpackbits(np.frombuffer(data, np.uint8, 8192, at), bitorder="little")
    return np.flatnonzero(bits).astype(np.int64), at + 8192
