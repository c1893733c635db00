"""Safe zip extraction: hostile archives are refused and nothing is written outside `dest`."""

from __future__ import annotations

import io
import os
import stat
import struct
import warnings
import zipfile
from pathlib import Path

import pytest

from benchgen.bundles.archive import (
    DEFAULT_LIMITS,
    ArchiveLimits,
    extract_zip,
    is_zip,
    zip_plain_files,
)
from benchgen.core.errors import InvalidInput


def make_zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buf.getvalue()


def zip_with_mode(name: str, mode: int, data: bytes = b"x") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        info = zipfile.ZipInfo(name)
        info.create_system = 3  # Unix, so external_attr carries st_mode
        info.external_attr = mode << 16
        archive.writestr(info, data)
    return buf.getvalue()


@pytest.fixture
def dest(tmp_path: Path) -> Path:
    # dest two levels below tmp_path: an escape to ../x or ../../x would land inside tmp_path.
    path = tmp_path / "work" / "dest"
    path.mkdir(parents=True)
    return path


def assert_refused(
    source: bytes | Path, dest: Path, limits: ArchiveLimits = DEFAULT_LIMITS, **kw: int
) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        extract_zip(source, dest, limits, **kw)
    assert list(dest.iterdir()) == []
    assert sorted(os.listdir(dest.parent)) == ["dest"]
    assert sorted(os.listdir(dest.parent.parent)) == ["work"]
    assert caught.value.errors and caught.value.errors[0]["loc"][0] == "bundle"
    return caught.value


def test_extracts_files_and_folders(dest: Path) -> None:
    data = make_zip({"a.txt": b"hello", "sub/": b"", "sub/b.csv": b"1,2\n", "deep/er/c": b"c"})
    names = extract_zip(data, dest)
    assert names == ["a.txt", "sub/b.csv", "deep/er/c"]
    assert (dest / "a.txt").read_bytes() == b"hello"
    assert (dest / "sub" / "b.csv").read_text() == "1,2\n"
    assert (dest / "deep" / "er" / "c").is_file()


def test_extracts_from_a_path_and_keeps_only_the_owner_executable_bit(
    dest: Path, tmp_path: Path
) -> None:
    source = tmp_path / "in.zip"
    source.write_bytes(zip_with_mode("run.sh", stat.S_IFREG | 0o4777))
    extract_zip(source, dest)
    assert stat.S_IMODE((dest / "run.sh").stat().st_mode) == 0o755


@pytest.mark.parametrize(
    "name",
    [
        "../x",
        "a/../../x",
        "/abs",
        "C:/windows",
        "a\\..\\x",
        "ok/./x",
        "a//b",
        "bad\x01name",
        "nul\x00.txt",
    ],
)
def test_refuses_unsafe_member_names(dest: Path, name: str) -> None:
    # zipfile cuts names at NUL when writing, so the NUL goes into the bytes afterwards.
    data = zip_with_mode(name.replace("\x00", "#"), stat.S_IFREG | 0o644)
    data = data.replace(name.replace("\x00", "#").encode(), name.encode())
    error = assert_refused(data, dest)
    assert error.errors[0]["loc"] == ["bundle", name]


def test_refuses_a_symlink_member(dest: Path) -> None:
    error = assert_refused(zip_with_mode("link", stat.S_IFLNK | 0o777, b"/etc/passwd"), dest)
    assert "symbolic link" in error.errors[0]["msg"]


@pytest.mark.parametrize("kind", [stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO, stat.S_IFSOCK])
def test_refuses_device_fifo_and_socket_members(dest: Path, kind: int) -> None:
    error = assert_refused(zip_with_mode("dev", kind | 0o666), dest)
    assert error.errors[0]["loc"] == ["bundle", "dev"]


def test_refuses_too_many_files(dest: Path) -> None:
    data = make_zip({f"f{i}": b"x" for i in range(4)})
    assert_refused(data, dest, ArchiveLimits(max_files=3))


def test_refuses_a_zip_bomb_by_ratio(dest: Path) -> None:
    data = make_zip({"zeros.bin": bytes(4 << 20)})
    error = assert_refused(data, dest)
    assert "ratio" in error.errors[0]["msg"]


def test_small_very_compressible_files_are_fine(dest: Path) -> None:
    assert extract_zip(make_zip({"blank.csv": bytes(100_000)}), dest) == ["blank.csv"]


def test_refuses_declared_sizes_over_the_limits(dest: Path) -> None:
    data = make_zip({"a": b"x" * 600, "b": b"y" * 600}, zipfile.ZIP_STORED)
    assert_refused(data, dest, ArchiveLimits(max_total_bytes=1000))
    assert_refused(data, dest, ArchiveLimits(max_member_bytes=500))


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_refuses_a_member_that_lies_about_its_size(dest: Path, method: int) -> None:
    data = bytearray(make_zip({"first": b"ok", "big.txt": b"A" * 100_000}, method))
    # Declare 10 bytes in both the central directory and the local header of the second member.
    central = data.find(b"PK\x01\x02", data.find(b"PK\x01\x02") + 1)
    local = data.find(b"PK\x03\x04", data.find(b"PK\x03\x04") + 1)
    struct.pack_into("<I", data, central + 24, 10)
    struct.pack_into("<I", data, local + 22, 10)
    assert_refused(bytes(data), dest)


def test_refuses_zips_nested_past_the_depth_limit(dest: Path) -> None:
    data = make_zip({"a": b"x"})
    error = assert_refused(data, dest, ArchiveLimits(max_depth=2), depth=3)
    assert "nested" in error.errors[0]["msg"]
    assert extract_zip(data, dest, ArchiveLimits(max_depth=2), depth=2) == ["a"]


def test_refuses_duplicate_names_and_file_folder_clashes(dest: Path) -> None:
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w") as archive:
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate we write on purpose
        archive.writestr("same", b"1")
        archive.writestr("same", b"2")
    assert_refused(buf.getvalue(), dest)
    assert_refused(make_zip({"a": b"file", "a/b": b"inside"}), dest)


# Named: the cut zip's bytes hold the time it was made, and an id made from them could differ
# between the xdist workers that collect it, which then refuse to run.
@pytest.mark.parametrize(
    "data",
    [b"", b"not a zip at all", make_zip({"a": b"x" * 100})[:60]],
    ids=["empty", "not a zip", "cut short"],
)
def test_refuses_corrupt_input_with_a_clear_message(dest: Path, data: bytes) -> None:
    error = assert_refused(data, dest)
    assert "zip" in error.errors[0]["msg"]


def test_refuses_a_non_empty_destination(dest: Path) -> None:
    (dest / "old").write_text("x")
    with pytest.raises(InvalidInput, match="empty folder"):
        extract_zip(make_zip({"a": b"x"}), dest)


def test_refuses_encrypted_members(dest: Path) -> None:
    data = bytearray(make_zip({"secret": b"x"}))
    for signature, flag_offset in ((b"PK\x01\x02", 8), (b"PK\x03\x04", 6)):
        at = data.find(signature) + flag_offset
        struct.pack_into("<H", data, at, struct.unpack_from("<H", data, at)[0] | 1)
    assert "encrypted" in assert_refused(bytes(data), dest).errors[0]["msg"]


def test_is_zip(tmp_path: Path) -> None:
    real = tmp_path / "a.zip"
    real.write_bytes(make_zip({"a": b"x"}))
    fake = tmp_path / "b.zip"
    fake.write_text("no")
    link = tmp_path / "c.zip"
    link.symlink_to(real)
    assert is_zip(real)
    assert not is_zip(fake)
    assert not is_zip(link)
    assert not is_zip(tmp_path / "missing.zip")
    assert not is_zip(tmp_path)


def test_packing_a_programs_folder_takes_its_files_and_no_link_pipe_or_linked_folder(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("HOST-SECRET")
    written = tmp_path / "written"
    (written / "sub").mkdir(parents=True)
    (written / "predictions.json").write_text("{}")
    (written / "sub" / "more.txt").write_text("kept")
    (written / "leak.txt").symlink_to(outside / "secret.txt")
    (written / "linked").symlink_to(outside)
    os.mkfifo(written / "pipe")  # opened for reading, it would wait for a writer forever
    target = tmp_path / "packed.zip"
    zip_plain_files(written, target)
    with zipfile.ZipFile(target) as packed:
        assert sorted(packed.namelist()) == ["predictions.json", "sub/more.txt"]
        assert packed.read("sub/more.txt") == b"kept"
