"""A zip's entry count is bounded before zipfile reads its listing: zipfile builds an object per
entry, so a small upload listing a million names cost seconds and hundreds of MB first."""

from __future__ import annotations

import io
import struct
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from benchgen.bundles.archive import DEFAULT_LIMITS, extract_zip, require_few_entries
from benchgen.core.errors import InvalidInput

LIMITS = replace(DEFAULT_LIMITS, max_files=50)


def listing_only(count: int, *, zip64: bool = False) -> bytes:
    """One local header, then `count` directory entries naming distinct files that all point
    at it: about 50 bytes an entry, so 64 MiB lists over a million."""
    local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, 1, 0) + b"a"
    entries = bytearray()
    for i in range(count):
        name = b"%x" % i
        entries += struct.pack(
            "<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0, 0, 0, 0, 0, 0
        )
        entries += name
    if not zip64:
        end = struct.pack(
            "<4s4H2IH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, len(entries), len(local), 0
        )
        return bytes(local + entries + end)
    # The end record says "see zip64"; the zip64 record before its locator has the sizes.
    record = struct.pack(
        "<4sQ2H2I4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, len(entries), len(local)
    )
    locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, len(local) + len(entries), 1)
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return bytes(local + entries + record + locator + end)


@pytest.mark.parametrize("zip64", [False, True])
def test_a_huge_listing_is_refused_before_zipfile_reads_it(tmp_path: Path, zip64: bool) -> None:
    data = listing_only(200_000, zip64=zip64)
    started = time.monotonic()
    with pytest.raises(InvalidInput, match="more than 20000 entries") as caught:
        extract_zip(data, tmp_path, loc="submission")
    # zipfile alone takes seconds to list 200,000 entries; the walk stops at the limit.
    assert time.monotonic() - started < 1.0
    assert caught.value.errors == [{"loc": ["submission"], "msg": "more than 20000 entries"}]


@pytest.mark.parametrize("zip64", [False, True])
def test_the_walk_counts_what_zipfile_would_list(zip64: bool) -> None:
    data = listing_only(51, zip64=zip64)
    assert len(zipfile.ZipFile(io.BytesIO(data)).infolist()) == 51
    with pytest.raises(InvalidInput, match="more than 50 entries"):
        require_few_entries(io.BytesIO(data), LIMITS, loc="submission")
    require_few_entries(io.BytesIO(listing_only(50, zip64=zip64)), LIMITS, loc="submission")


def test_real_zips_within_the_limit_pass(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    buffer.write(b"#!/bin/sh\nprepended stub\n")  # a self-extracting stub before the zip
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.comment = b"a comment after the end record"
        for i in range(50):
            archive.writestr(f"f{i}.txt", b"x")
    require_few_entries(io.BytesIO(buffer.getvalue()), LIMITS, loc="submission")
    assert len(extract_zip(buffer.getvalue(), tmp_path, LIMITS)) == 50
    for junk in (b"", b"not a zip at all", b"PK\x05\x06"):
        require_few_entries(io.BytesIO(junk), LIMITS, loc="submission")


def test_a_zip64_listing_behind_the_longest_comment_is_still_counted() -> None:
    data = bytearray(listing_only(51, zip64=True))
    comment = b"c" * 0xFFFF
    struct.pack_into("<H", data, len(data) - 2, len(comment))
    data += comment
    assert len(zipfile.ZipFile(io.BytesIO(bytes(data))).infolist()) == 51
    with pytest.raises(InvalidInput, match="more than 50 entries"):
        require_few_entries(io.BytesIO(bytes(data)), LIMITS, loc="submission")
