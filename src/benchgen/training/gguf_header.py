"""A GGUF file's metadata and tensor list, read with every length checked against the file."""

from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

_MAGIC = b"GGUF"
_VERSIONS = (2, 3)
_STRING, _ARRAY = 8, 9
# The fixed-size value types by their GGUF numbers, as struct formats (little-endian).
_SCALARS = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
    10: "<Q", 11: "<q", 12: "<d",
}  # fmt: skip
_MAX_DIMS = 4  # ggml's GGML_MAX_DIMS
_MAX_NESTING = 8  # arrays of arrays: real files nest none


class GGUFHeaderError(ValueError):
    """The file is not GGUF, or its header claims more than the file holds."""


@dataclass(frozen=True)
class ArrayValue:
    """An array in the metadata, kept as its length: only the vocabulary's size is wanted."""

    length: int


@dataclass(frozen=True)
class TensorInfo:
    """One tensor's name and number of values, as the header lists it."""

    name: str
    n_elements: int


@dataclass(frozen=True)
class GGUFHeader:
    """The metadata (strings, numbers, or arrays as their length) and the tensors."""

    fields: dict[str, object]
    tensors: tuple[TensorInfo, ...]


def read_header(path: Path) -> GGUFHeader:
    """Parse the metadata and tensor infos of a GGUF file, never its tensors.

    Each count and length the file states is checked against the bytes left before it is
    trusted: gguf-py's reader loops over an array's claimed length whatever the file holds, so
    seventy bytes claiming 2^40 elements kept it running, gigabytes deep, until it was killed.

    Raises:
        GGUFHeaderError: not GGUF, a version other than 2 or 3, or a count, length, type or
            key the file cannot hold.
        OSError: the file cannot be read.
    """
    with path.open("rb") as stream:
        if stream.seek(0, 2) < 24:
            raise GGUFHeaderError("too short for a GGUF header")
        with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _Cursor(data).header()


class _Cursor:
    def __init__(self, data: mmap.mmap) -> None:
        self._data = data
        self._offset = 0

    def header(self) -> GGUFHeader:
        if self._take(4) != _MAGIC:
            raise GGUFHeaderError("not a GGUF file (no GGUF magic)")
        version = self._count("<I")
        if version not in _VERSIONS:
            raise GGUFHeaderError(f"GGUF version {version} is not one of 2 or 3")
        tensor_count, kv_count = self._count("<Q"), self._count("<Q")
        # A key-value pair takes at least 12 bytes (key length, type) and a tensor info 24.
        self._require_room(kv_count, 12, "metadata entries")
        fields: dict[str, object] = {}
        for _ in range(kv_count):
            key = self._string()
            if key in fields:
                raise GGUFHeaderError(f"the metadata key {key!r} is given twice")
            fields[key] = self._value(self._count("<I"), 0)
        self._require_room(tensor_count, 24, "tensors")
        tensors = tuple(self._tensor() for _ in range(tensor_count))
        return GGUFHeader(fields, tensors)

    def _tensor(self) -> TensorInfo:
        name = self._string()
        n_dims = self._count("<I")
        if n_dims > _MAX_DIMS:
            raise GGUFHeaderError(f"tensor {name!r} claims {n_dims} dimensions")
        dims = [self._count("<Q") for _ in range(n_dims)]
        self._skip(12)  # its type and data offset
        return TensorInfo(name, math.prod(dims))

    def _value(self, kind: int, depth: int) -> object:
        if kind in _SCALARS:
            (value,) = struct.unpack(_SCALARS[kind], self._take(struct.calcsize(_SCALARS[kind])))
            return value
        if kind == _STRING:
            return self._string()
        if kind != _ARRAY or depth >= _MAX_NESTING:
            raise GGUFHeaderError(f"unknown metadata value type {kind} at byte {self._offset}")
        item, length = self._count("<I"), self._count("<Q")
        if item in _SCALARS:
            self._skip(length * struct.calcsize(_SCALARS[item]))
        else:
            self._require_room(length, 8, "array items")
            for _ in range(length):
                self._value(item, depth + 1)
        return ArrayValue(length)

    def _string(self) -> str:
        raw = self._take(self._count("<Q"))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise GGUFHeaderError(f"a string before byte {self._offset} is not UTF-8") from None

    def _count(self, fmt: str) -> int:
        (value,) = struct.unpack(fmt, self._take(struct.calcsize(fmt)))
        return int(value)

    def _require_room(self, count: int, least: int, what: str) -> None:
        if count * least > len(self._data) - self._offset:
            raise GGUFHeaderError(f"the header claims {count} {what}, more than the file holds")

    def _take(self, size: int) -> bytes:
        start = self._offset
        self._skip(size)
        return self._data[start : self._offset]

    def _skip(self, size: int) -> None:
        end = self._offset + size
        if end > len(self._data):
            raise GGUFHeaderError(f"the header runs past the end of the file at byte {end}")
        self._offset = end
