"""Member names as their archiver meant them: UTF-8 written without the UTF-8 flag (macOS's
Archive Utility) is read as UTF-8, not cp437, and names are kept in NFC form, so that
competition.yaml and the programs find "données/" under that name."""

from __future__ import annotations

import io
import unicodedata
import zipfile
from pathlib import Path

import pytest

from benchgen.bundles.archive import DEFAULT_LIMITS, extract_zip, vetted_names
from benchgen.core.errors import InvalidInput


def unflagged(names: list[str]) -> bytes:
    """A zip whose names are UTF-8 bytes with the UTF-8 flag cleared, as macOS writes them."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(name, b"1")
    data = bytearray(buffer.getvalue())
    for magic, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(magic)
        while at >= 0:
            data[at + flag_at + 1] &= 0xF7  # bit 11: bit 3 of the flags' second byte
            at = data.find(magic, at + 4)
    return bytes(data)


def test_utf8_names_without_the_flag_are_read_as_utf8_in_nfc(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "données/prédictions.json")
    data = unflagged([nfd, "plain.txt"])
    assert zipfile.ZipFile(io.BytesIO(data)).namelist()[0] != nfd  # zipfile alone: cp437
    assert extract_zip(data, tmp_path) == ["données/prédictions.json", "plain.txt"]
    assert (tmp_path / "données" / "prédictions.json").read_bytes() == b"1"
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = vetted_names(archive, DEFAULT_LIMITS, loc="submission")
    assert names == ["données/prédictions.json", "plain.txt"]


def test_names_equal_once_normalised_are_the_same_name(tmp_path: Path) -> None:
    twins = [unicodedata.normalize("NFD", "é.txt"), unicodedata.normalize("NFC", "é.txt")]
    with pytest.raises(InvalidInput, match="the name appears twice"):
        extract_zip(unflagged(twins), tmp_path)


def test_cp437_names_that_are_not_utf8_stay_cp437(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("plain.txt", b"1")
    data = buffer.getvalue().replace(b"plain.txt", b"pl\x82in.txt")  # cp437 e-acute, not UTF-8
    assert extract_zip(data, tmp_path) == ["pléin.txt"]
