"""Zips whose listing is sound but whose members' own headers are not, or whose names no file
system takes: refused, never an uncaught error, by the listing check as by extraction."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pytest

from benchgen.bundles.archive import DEFAULT_LIMITS, extract_zip, vetted_names
from benchgen.core.errors import InvalidInput
from tests.bundle_factory import zip_of


def offset_before_start() -> bytes:
    """The end record places the listing 5 bytes later than it is: the first member's header
    offset becomes -5 (zipfile then seeks before the start, a ValueError)."""
    data = bytearray(zip_of({"a.txt": b"x" * 10, "b.txt": b"y"}))
    end = data.rfind(b"PK\x05\x06")
    (offset,) = struct.unpack_from("<I", data, end + 16)
    struct.pack_into("<I", data, end + 16, offset + 5)
    return bytes(data)


def bad_local_magic() -> bytes:
    """The first member's local header has no signature; the listing is intact."""
    data = bytearray(zip_of({"a.txt": b"x"}))
    data[0:4] = b"XXXX"
    return bytes(data)


def unknown_method() -> bytes:
    """The first member says it is compressed with a method nobody implements (99, AES)."""
    data = bytearray(zip_of({"a.txt": b"x"}))
    central = data.rfind(b"PK\x01\x02")
    struct.pack_into("<H", data, central + 10, 99)
    struct.pack_into("<H", data, 8, 99)
    return bytes(data)


def test_a_header_offset_before_the_start_is_refused_as_corrupt(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="the zip is corrupt") as caught:
        extract_zip(offset_before_start(), tmp_path, loc="submission")
    assert caught.value.errors[0]["loc"] == ["submission"]
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        (offset_before_start(), "the zip is corrupt"),
        (bad_local_magic(), "the zip is corrupt"),
        (unknown_method(), "unsupported zip feature"),
    ],
)
def test_the_listing_check_refuses_what_extraction_would(
    tmp_path: Path, data: bytes, msg: str
) -> None:
    with pytest.raises(InvalidInput, match=msg):
        extract_zip(data, tmp_path, loc="submission")
    with zipfile.ZipFile(io.BytesIO(data)) as archive, pytest.raises(InvalidInput) as caught:
        vetted_names(archive, DEFAULT_LIMITS, loc="submission")
    assert msg in str(caught.value)
    assert caught.value.errors[0]["loc"] == ["submission", "a.txt"]


def test_a_sound_zip_still_lists_its_names() -> None:
    data = zip_of({"a/b.txt": b"1", "c.py": b"print(1)\n"})
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert vetted_names(archive, DEFAULT_LIMITS, loc="submission") == ["a/b.txt", "c.py"]


@pytest.mark.parametrize("name", ["a" * 256 + ".txt", "d/" + "é" * 128])
def test_a_name_no_file_system_takes_is_refused_from_the_listing(tmp_path: Path, name: str) -> None:
    data = zip_of({name: b"1"})
    with zipfile.ZipFile(io.BytesIO(data)) as archive, pytest.raises(InvalidInput) as caught:
        vetted_names(archive, DEFAULT_LIMITS, loc="submission")
    assert caught.value.errors[0]["msg"] == "a file or folder name longer than 255 bytes"
    with pytest.raises(InvalidInput, match="longer than 255 bytes"):
        extract_zip(data, tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_name_of_255_bytes_is_kept(tmp_path: Path) -> None:
    assert extract_zip(zip_of({"é" * 127 + "x": b"1"}), tmp_path) == ["é" * 127 + "x"]
