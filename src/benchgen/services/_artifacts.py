"""Artifact storage behind one small interface: bundles, submissions, predictions, scratch copies,
datasets and training checkpoints.

Files live under `<data_dir>/artifacts` by key (`bundles/bm_…/v1.zip`). Unguarded: callers check
access first. Writes happen before the database commit, so a rolled-back request can leave an
orphan file under a fresh id, never a row pointing at a missing one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path, PurePosixPath

from benchgen.core.config import Settings


class ArtifactStore:
    """A local folder of artifacts keyed by relative POSIX paths."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        parts = PurePosixPath(key).parts
        # Keys are built by services from ids, but a key must never name a file outside the
        # store whatever reaches here.
        if not parts or key.startswith("/") or any(p in ("..", ".", "") for p in parts):
            raise ValueError(f"bad artifact key {key!r}")
        return self.root.joinpath(*parts)

    def put_bytes(self, key: str, data: bytes) -> None:
        """Store `data` under `key`, replacing what was there (written whole, then renamed)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_bytes(data)
        os.replace(partial, path)

    def put_file(self, key: str, source: Path) -> None:
        """Store a copy of the file `source` under `key`."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        shutil.copyfile(source, partial)
        os.replace(partial, path)

    def read_bytes(self, key: str) -> bytes:
        """The bytes stored under `key`.

        Raises:
            FileNotFoundError: nothing is stored there.
        """
        return self._path(key).read_bytes()

    def size(self, key: str) -> int:
        """The stored artifact's size in bytes, without reading it.

        Raises:
            FileNotFoundError: nothing is stored there.
        """
        return self._path(key).stat().st_size

    def exists(self, key: str) -> bool:
        """True when something is stored under `key`."""
        return self._path(key).is_file()

    def copy_to(self, key: str, destination: Path) -> Path:
        """Copy the artifact to a local file (e.g. into a sandbox's throw-away folder)."""
        shutil.copyfile(self._path(key), destination)
        return destination

    def put_folder(self, prefix: str, source: Path) -> None:
        """Store every file under the local folder `source` below `prefix`, replacing what was
        there (copied whole, then renamed into place)."""
        path = self._path(prefix)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(source, partial, symlinks=False)
        shutil.rmtree(path, ignore_errors=True)
        os.replace(partial, path)

    def folder(self, prefix: str) -> Path:
        """A local folder holding the artifacts under `prefix` (the store's own, read-only)."""
        return self._path(prefix)

    def copy_folder_to(self, prefix: str, destination: Path) -> Path:
        """Copy the artifacts under `prefix` into a new local folder `destination`."""
        shutil.copytree(self._path(prefix), destination, symlinks=False)
        return destination

    def delete(self, key: str) -> None:
        """Remove one artifact; missing is fine."""
        self._path(key).unlink(missing_ok=True)

    def delete_prefix(self, prefix: str) -> None:
        """Remove every artifact under a folder-like prefix (`scratch/sc_…`)."""
        shutil.rmtree(self._path(prefix), ignore_errors=True)

    def keys(self, prefix: str) -> list[str]:
        """The keys stored under a folder-like prefix, sorted."""
        base = self._path(prefix)
        if not base.is_dir():
            return []
        found = (p for p in base.rglob("*") if p.is_file() and not p.name.endswith(".partial"))
        return sorted(p.relative_to(self.root).as_posix() for p in found)


def store_for(settings: Settings) -> ArtifactStore:
    """The deployment's artifact store."""
    return ArtifactStore(settings.data_dir / "artifacts")
