"""Folder trees walked with an explicit stack and one open folder at a time: listing, handing
back, removing. A hostile program can nest folders without end, past Python's recursion limit
(os.walk, Path.rglob and shutil.rmtree recurse) and past the kernel's longest path."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from benchgen.core.errors import InvalidInput

# Deeper than any real bundle or submission, far below the recursion limit of the few library
# walks that bundle trees still meet (rglob) and short enough that every path stays usable.
MAX_DEPTH = 100
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

# on_entry(folder_fd, folder_parts, name, is_dir); on_leave(folder_fd, name) after `name`'s content
OnEntry = Callable[[int, Sequence[str], str, bool], None]
OnLeave = Callable[[int, str], None]


@dataclass
class _Frame:
    name: str
    identity: tuple[int, int]
    pending: list[str] = field(default_factory=list)


def too_deep(where: str, max_depth: int = MAX_DEPTH) -> InvalidInput:
    """The refusal of a tree whose paths have more than `max_depth` parts."""
    msg = f"folders nested more than {max_depth} deep are refused"
    return InvalidInput(f"{where}: {msg}", [{"loc": [where], "msg": msg}])


def visit(
    root: Path,
    on_entry: OnEntry,
    on_leave: OnLeave | None = None,
    max_depth: int | None = None,
) -> None:
    """Call `on_entry` for every entry under the folder `root`, a folder before its content,
    without following links; entries are named relative to the open folder `folder_fd`.

    Raises:
        InvalidInput: `max_depth` is given and a path under `root` has more parts.
        OSError: `root` cannot be opened, or a folder moved while it was walked.
    """
    fd = os.open(root, _DIR_FLAGS)
    parts: list[str] = []
    try:
        frames = [_Frame("", _identity(fd), _listed(fd, parts, on_entry, max_depth))]
        while frames:
            top = frames[-1]
            if top.pending:
                name = top.pending.pop()
                child = _open_child(fd, name)
                if child is not None:
                    os.close(fd)
                    fd = child
                    parts.append(name)
                    pending = _listed(fd, parts, on_entry, max_depth)
                    frames.append(_Frame(name, _identity(fd), pending))
                continue
            frames.pop()
            if frames:
                parent = _parent(fd, frames[-1].identity)
                os.close(fd)
                fd = parent
                parts.pop()
                if on_leave is not None:
                    on_leave(fd, top.name)
    finally:
        os.close(fd)


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _listed(fd: int, parts: Sequence[str], on_entry: OnEntry, max_depth: int | None) -> list[str]:
    """Call `on_entry` for each entry of the open folder; return its subfolders' names."""
    with os.scandir(fd) as entries:
        found = sorted((e.name, _is_dir(e)) for e in entries)
    if found and max_depth is not None and len(parts) >= max_depth:
        raise too_deep("/".join(parts[:3]) + "/…", max_depth)
    for name, is_dir in found:
        on_entry(fd, parts, name, is_dir)
    return [name for name, is_dir in reversed(found) if is_dir]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _open_child(fd: int, name: str) -> int | None:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError:  # gone, turned into a link, or unreadable: nothing to walk there
        return None


def _parent(fd: int, expected: tuple[int, int]) -> int:
    # Going back up through ".." holds one descriptor however deep the tree is. Had the folder
    # been moved meanwhile, ".." would lead elsewhere: the walk stops rather than act there.
    parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
    if _identity(parent) != expected:
        os.close(parent)
        raise OSError("a folder was moved while it was walked")
    return parent


def chown_tree(path: Path, uid: int, gid: int) -> None:
    """`path` and everything under it owned by `uid`:`gid`; links are changed, never followed."""
    os.lchown(path, uid, gid)
    if not stat.S_ISDIR(path.lstat().st_mode):
        return

    def own(fd: int, _parts: Sequence[str], name: str, _is_dir: bool) -> None:
        with suppress(FileNotFoundError):
            os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)

    visit(path, own)


def remove_tree(path: Path) -> None:
    """Remove the folder `path` and its content, as far as it can be (cleanup never raises)."""

    def clear(fd: int, _parts: Sequence[str], name: str, is_dir: bool) -> None:
        with suppress(OSError):
            if is_dir:
                # A program may have left its folder unreadable to us when it ran as our uid.
                os.chmod(name, 0o700, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)

    def drop(fd: int, name: str) -> None:
        with suppress(OSError):
            os.rmdir(name, dir_fd=fd)

    with suppress(OSError):
        visit(path, clear, drop)
    with suppress(OSError):
        path.rmdir()


def drop_special_entries(root: Path) -> None:
    """Remove every link, fifo, socket and device under the folder `root`, keeping its plain
    files and folders (cleanup of what a program wrote: never raises)."""

    def drop(fd: int, _parts: Sequence[str], name: str, is_dir: bool) -> None:
        with suppress(OSError):
            if not is_dir and not stat.S_ISREG(
                os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
            ):
                os.unlink(name, dir_fd=fd)

    with suppress(OSError):
        visit(root, drop)


def plain_files(root: Path, max_depth: int = MAX_DEPTH) -> list[str]:
    """The regular files under `root` (not through links), as '/'-joined relative paths.

    Raises:
        InvalidInput: a path under `root` has more than `max_depth` parts.
    """
    found: list[str] = []

    def note(fd: int, parts: Sequence[str], name: str, is_dir: bool) -> None:
        with suppress(OSError):
            if not is_dir and stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                found.append("/".join((*parts, name)))

    visit(root, note, max_depth=max_depth)
    return found


@contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A fresh private folder under the system's temporary one, removed with all its content
    when the block ends, however deep a program nested folders in it."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    finally:
        remove_tree(folder)
