"""Safe zips: extraction vets every member before anything is written, so no write can escape;
packing a folder a program wrote reads no file through a link."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import stat
import struct
import unicodedata
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from benchgen.bundles.trees import MAX_DEPTH, remove_tree, visit
from benchgen.core.errors import InvalidInput


@dataclass(frozen=True)
class ArchiveLimits:
    """Bounds on what one upload may unpack to; nested zips share the totals (see layout.py)."""

    max_total_bytes: int = 1 << 30  # uncompressed, whole archive (incl. nested)
    max_member_bytes: int = 512 << 20
    max_files: int = 20_000
    max_ratio: int = 200  # uncompressed/compressed, per member
    max_depth: int = 2  # nested zips unpacked by layout.py count one level each
    max_path_parts: int = MAX_DEPTH  # folders nested in one archive
    # Small files that compress very well (a CSV of zeros, a blank page) are common and harmless;
    # a zip bomb needs size, so the ratio is only held against members larger than this.
    ratio_floor_bytes: int = 1 << 20


DEFAULT_LIMITS = ArchiveLimits()
_CHUNK = 1 << 16
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Central directory entries: a fixed 46-byte head whose name, extra and comment lengths say
# where the next one starts (APPNOTE 4.3.12); the end records that say where they are.
_ENTRY = struct.Struct("<28x3H12x")
_ENTRY_MAGIC = b"PK\x01\x02"
_END_MAGIC = b"PK\x05\x06"
_END64_MAGIC = b"PK\x06\x06"
_LOCATOR_MAGIC = b"PK\x06\x07"
_UTF8_FLAG = 0x800  # general purpose bit 11: the name is UTF-8
_NAME_MAX = 255  # bytes in one file or folder name, on Linux's file systems
_END_SEARCH = 22 + 0xFFFF  # the end record, and the longest comment it may carry


def zip_plain_files(
    folder: Path, target: Path, max_depth: int = MAX_DEPTH, max_files: int | None = None
) -> None:
    """Zip the regular files under `folder`, which a program wrote.

    A link could point at any file of the host (/etc/shadow, the server's environment), so
    links are left out and never opened, nor are linked folders entered; devices and pipes are
    left out too (reading a pipe could wait forever).

    Raises:
        InvalidInput: folders nested more than `max_depth` deep, or more entries than
            `max_files` (by default what `extract_zip` unpacks: the zip must unpack again).
    """
    cap = DEFAULT_LIMITS.max_files if max_files is None else max_files
    seen = [0]
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:

        def add(fd: int, parts: Sequence[str], name: str, is_dir: bool) -> None:
            seen[0] += 1
            if seen[0] > cap:
                raise _refuse("predictions", None, f"more than {cap} files and folders")
            if not is_dir:
                _add_plain_file(archive, fd, "/".join((*parts, name)), name)

        visit(folder, add, max_depth=max_depth)


def _add_plain_file(archive: zipfile.ZipFile, folder_fd: int, member: str, name: str) -> None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
    except OSError:  # a link (ELOOP), or gone since it was listed
        return
    with open(fd, "rb") as source:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            with archive.open(member, "w", force_zip64=True) as copy:
                shutil.copyfileobj(source, copy, _CHUNK)


def is_zip(path: Path) -> bool:
    """Whether `path` is a regular file (not a link) that looks like a zip archive."""
    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return False
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def extract_zip(
    source: Path | bytes,
    dest: Path,
    limits: ArchiveLimits = DEFAULT_LIMITS,
    *,
    loc: str = "bundle",
    depth: int = 0,
) -> list[str]:
    """Unpack `source` into the empty folder `dest`; return the files written, archive order.

    Raises:
        InvalidInput: the archive is corrupt, hostile or over a limit; `dest` is left empty.
    """
    if depth > limits.max_depth:
        raise _refuse(loc, None, f"zips nested more than {limits.max_depth} deep are refused")
    _require_empty_dir(dest, loc)
    try:
        with _open_zip(source, limits, loc) as archive:
            members = _checked_members(archive, limits, loc)
            return _write_all(archive, members, dest, limits, loc)
    # ValueError: a member's header offset that points before the archive's start.
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, zlib.error) as exc:
        raise _refuse(loc, None, f"the zip is corrupt: {exc}") from exc
    except NotImplementedError as exc:
        raise _refuse(loc, None, f"unsupported zip feature: {exc}") from exc


def vetted_names(archive: zipfile.ZipFile, limits: ArchiveLimits, *, loc: str) -> list[str]:
    """The names in an open archive, each member vetted as `extract_zip` vets it before
    writing anything: a hostile or oversized archive is refused from its listing alone.

    Raises:
        InvalidInput: a member is unsafe, or the listing is over a limit.
    """
    members = _checked_members(archive, limits, loc)
    for info, _ in members:
        if not info.is_dir():
            _check_local_header(archive, info, loc)
    return ["/".join(parts) for _, parts in members]


def _check_local_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo, loc: str) -> None:
    # The listing can be sound while a member's own header is not (a bad magic number, a name
    # that differs, an offset before the archive's start, an unknown compression method):
    # opening reads that header without decompressing anything, as extraction will.
    try:
        archive.open(info).close()
    except (zipfile.BadZipFile, EOFError, ValueError, zlib.error) as exc:
        raise _refuse(loc, info.orig_filename, f"the zip is corrupt: {exc}") from exc
    except NotImplementedError as exc:
        raise _refuse(loc, info.orig_filename, f"unsupported zip feature: {exc}") from exc


def require_few_entries(handle: IO[bytes], limits: ArchiveLimits, *, loc: str) -> None:
    """Refuse a zip listing more than `limits.max_files` entries before zipfile reads it: it
    builds an object per entry, and a 64 MiB listing of one-letter names took 15 s and 700 MB.
    Only as many entries as the limit allows are walked; a listing that is not sound is left
    for zipfile to refuse.

    Raises:
        InvalidInput: more entries than the limit.
    """
    start, size = _listing_place(handle)
    handle.seek(start)
    walked = count = 0
    while walked < size:
        head = handle.read(_ENTRY.size)
        if len(head) < _ENTRY.size or head[:4] != _ENTRY_MAGIC:
            return
        count += 1
        if count > limits.max_files:
            raise _refuse(loc, None, f"more than {limits.max_files} entries")
        name, extra, comment = _ENTRY.unpack(head)
        walked += _ENTRY.size + name + extra + comment
        handle.seek(name + extra + comment, os.SEEK_CUR)


def _listing_place(handle: IO[bytes]) -> tuple[int, int]:
    """Where the central directory starts and its size, as zipfile finds them: just before
    the end record (or the zip64 end record); (0, 0) when there is none."""
    end = handle.seek(0, os.SEEK_END)
    tail_start = max(0, end - _END_SEARCH)
    handle.seek(tail_start)
    tail = handle.read()
    at = tail.rfind(_END_MAGIC)
    if at < 0 or len(tail) - at < 22:
        return 0, 0
    (size,) = struct.unpack_from("<I", tail, at + 12)
    record = tail_start + at
    if record >= 76:
        # A zip64 end record (56 bytes) and its locator (20) sit just before the end record:
        # the sizes there are the real ones. Read from the file: a long comment may put them
        # before the tail.
        handle.seek(record - 76)
        zip64 = handle.read(76)
        if zip64[56:60] == _LOCATOR_MAGIC and zip64[:4] == _END64_MAGIC:
            (size,) = struct.unpack_from("<Q", zip64, 40)
            record -= 76
    return max(record - size, 0), size


def _refuse(loc: str, member: str | None, msg: str) -> InvalidInput:
    where: list[str | int] = [loc] if member is None else [loc, member]
    return InvalidInput(f"{loc}: {msg}", [{"loc": where, "msg": msg}])


def _require_empty_dir(dest: Path, loc: str) -> None:
    # A link or a non-empty folder would let earlier content (or another tree) mix with the upload.
    try:
        info = dest.lstat()
    except OSError as exc:
        raise _refuse(loc, None, "the destination folder does not exist") from exc
    if not stat.S_ISDIR(info.st_mode) or any(dest.iterdir()):
        raise _refuse(loc, None, "the destination must be an empty folder")


def _open_zip(source: Path | bytes, limits: ArchiveLimits, loc: str) -> zipfile.ZipFile:
    try:
        if isinstance(source, bytes):
            handle = io.BytesIO(source)
            require_few_entries(handle, limits, loc=loc)
            return zipfile.ZipFile(handle)
        with source.open("rb") as file:
            require_few_entries(file, limits, loc=loc)
        return zipfile.ZipFile(source)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
        raise _refuse(loc, None, "not a zip archive, or a corrupt one") from exc
    except OSError as exc:
        raise _refuse(loc, None, f"the zip cannot be read: {exc.strerror}") from exc


def _checked_members(
    archive: zipfile.ZipFile, limits: ArchiveLimits, loc: str
) -> list[tuple[zipfile.ZipInfo, tuple[str, ...]]]:
    """Every member vetted up front, so a refused archive writes nothing at all."""
    infos = archive.infolist()
    if len(infos) > limits.max_files:
        raise _refuse(loc, None, f"more than {limits.max_files} entries")
    members: list[tuple[zipfile.ZipInfo, tuple[str, ...]]] = []
    seen: set[tuple[str, ...]] = set()
    total = 0
    for info in infos:
        parts = _safe_parts(info, limits, loc)
        if parts in seen:
            raise _refuse(loc, info.orig_filename, "the name appears twice")
        seen.add(parts)
        _check_member(info, limits, loc)
        total += 0 if info.is_dir() else info.file_size
        if total > limits.max_total_bytes:
            raise _refuse(loc, None, f"unpacks to more than {limits.max_total_bytes} bytes")
        members.append((info, parts))
    _check_file_folder_clash(members, loc)
    return members


def _safe_parts(info: zipfile.ZipInfo, limits: ArchiveLimits, loc: str) -> tuple[str, ...]:
    name = _member_name(info)
    if not name or _CONTROL.search(name):
        raise _refuse(loc, name, "empty name or control characters in the name")
    # Backslashes and drive letters are separators/roots on Windows tools: refused, not guessed.
    if "\\" in name or name.startswith("/") or _DRIVE.match(name):
        raise _refuse(loc, name, "absolute paths, drive letters and backslashes are refused")
    parts = tuple(name.rstrip("/").split("/"))
    if any(part in {"", ".", ".."} for part in parts):
        raise _refuse(loc, name, "empty, '.' and '..' path parts are refused")
    # Every later walk of the tree (layout, the programs' folders, cleanup) stays shallow.
    shown = name if len(name) <= 200 else name[:200] + "…"
    if len(parts) > limits.max_path_parts:
        msg = f"folders nested more than {limits.max_path_parts} deep are refused"
        raise _refuse(loc, shown, msg)
    # No file system takes a longer name: refused from the listing, as writing would refuse it.
    if any(len(os.fsencode(part)) > _NAME_MAX for part in parts):
        raise _refuse(loc, shown, f"a file or folder name longer than {_NAME_MAX} bytes")
    return parts


def _member_name(info: zipfile.ZipInfo) -> str:
    """The member's name as its archiver meant it, in NFC form.

    orig_filename keeps what zipfile cuts at a NUL byte (a hidden NUL is itself a sign of
    attack). Without the UTF-8 flag zipfile reads the name as cp437, but macOS's Archive Utility
    and others write UTF-8 (in NFD form) without it: "données/" came out as "donn├⌐es/", which
    competition.yaml, the scoring program and the participant name otherwise.
    """
    name = info.orig_filename
    if not info.flag_bits & _UTF8_FLAG and not name.isascii():
        with contextlib.suppress(UnicodeError):
            name = name.encode("cp437").decode("utf-8")
    return unicodedata.normalize("NFC", name)


def _check_member(info: zipfile.ZipInfo, limits: ArchiveLimits, loc: str) -> None:
    name = info.orig_filename
    kind = stat.S_IFMT(info.external_attr >> 16)
    # Only plain files and folders: a link could point outside the tree, a device or fifo
    # could hang or read the host. Kind 0 means the archiver recorded no Unix type (DOS zips).
    if kind == stat.S_IFLNK:
        raise _refuse(loc, name, "symbolic links are refused")
    if kind not in {0, stat.S_IFREG, stat.S_IFDIR}:
        raise _refuse(loc, name, "device, fifo and socket entries are refused")
    if kind == stat.S_IFDIR and not info.is_dir():
        raise _refuse(loc, name, "a folder entry whose name does not end with '/'")
    if info.flag_bits & 0x1:
        raise _refuse(loc, name, "encrypted members are refused")
    if info.is_dir():
        return
    if info.file_size > limits.max_member_bytes:
        raise _refuse(loc, name, f"larger than {limits.max_member_bytes} bytes")
    ratio_applies = info.file_size > limits.ratio_floor_bytes
    if ratio_applies and info.file_size > limits.max_ratio * max(info.compress_size, 1):
        raise _refuse(loc, name, f"compression ratio above {limits.max_ratio} (a zip bomb?)")


def _check_file_folder_clash(
    members: list[tuple[zipfile.ZipInfo, tuple[str, ...]]], loc: str
) -> None:
    folders = {parts[:i] for _, parts in members for i in range(1, len(parts))}
    folders |= {parts for info, parts in members if info.is_dir()}
    for info, parts in members:
        if not info.is_dir() and parts in folders:
            raise _refuse(loc, info.orig_filename, "the name is used for a file and a folder")


def _write_all(
    archive: zipfile.ZipFile,
    members: list[tuple[zipfile.ZipInfo, tuple[str, ...]]],
    dest: Path,
    limits: ArchiveLimits,
    loc: str,
) -> list[str]:
    root_fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    written: list[str] = []
    budget = [limits.max_total_bytes]
    try:
        for info, parts in members:
            _write_member(archive, info, parts, root_fd, limits, budget, loc)
            if not info.is_dir():
                written.append("/".join(parts))
    except BaseException:
        # Nothing half-written may stay behind: the caller sees an empty `dest` or the whole tree.
        _empty(dest)
        raise
    finally:
        os.close(root_fd)
    return written


def _write_member(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    parts: tuple[str, ...],
    root_fd: int,
    limits: ArchiveLimits,
    budget: list[int],
    loc: str,
) -> None:
    folders = parts if info.is_dir() else parts[:-1]
    try:
        parent_fd = _open_folders(root_fd, folders)
    except OSError as exc:
        raise _refuse(loc, info.orig_filename, f"cannot create the folder: {exc.strerror}") from exc
    try:
        if not info.is_dir():
            _write_file(archive, info, parts[-1], parent_fd, limits, budget, loc)
    finally:
        os.close(parent_fd)


def _open_folders(root_fd: int, folders: tuple[str, ...]) -> int:
    """Walk (creating) `folders` under root_fd without ever following a link."""
    fd = os.dup(root_fd)
    for part in folders:
        # Made by an earlier member is fine: O_NOFOLLOW below refuses it if it is a link.
        with contextlib.suppress(FileExistsError):
            os.mkdir(part, 0o755, dir_fd=fd)
        try:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        finally:
            os.close(fd)
        fd = child
    return fd


def _write_file(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    name: str,
    parent_fd: int,
    limits: ArchiveLimits,
    budget: list[int],
    loc: str,
) -> None:
    # Owner-executable survives (run scripts); setuid, sticky and group/other write bits never do.
    mode = 0o755 if (info.external_attr >> 16) & 0o100 else 0o644
    # O_EXCL|O_NOFOLLOW: never reuse or follow an existing entry, so nothing lands outside dest.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        out_fd = os.open(name, flags, mode, dir_fd=parent_fd)
    except OSError as exc:
        raise _refuse(loc, info.orig_filename, f"cannot create the file: {exc.strerror}") from exc
    with os.fdopen(out_fd, "wb") as out, archive.open(info) as src:
        _copy_counted(src, out, info, limits, budget, loc)


def _copy_counted(
    src: IO[bytes],
    out: IO[bytes],
    info: zipfile.ZipInfo,
    limits: ArchiveLimits,
    budget: list[int],
    loc: str,
) -> None:
    # Declared sizes can lie: the bytes actually produced are counted against both limits.
    size = 0
    while chunk := src.read(_CHUNK):
        size += len(chunk)
        budget[0] -= len(chunk)
        if size > limits.max_member_bytes or size > max(info.file_size, 0):
            raise _refuse(loc, info.orig_filename, "unpacks to more bytes than it declares")
        if budget[0] < 0:
            raise _refuse(loc, None, f"unpacks to more than {limits.max_total_bytes} bytes")
        out.write(chunk)


def _empty(dest: Path) -> None:
    for child in dest.iterdir():
        if child.is_dir() and not child.is_symlink():
            remove_tree(child)
        else:
            child.unlink()
