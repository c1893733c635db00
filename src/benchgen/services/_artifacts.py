"""Artifact storage behind one small interface: bundles, submissions, predictions, scratch copies,
datasets and training checkpoints.

Two stores keep the same contract: a local folder under `<data_dir>/artifacts` (the default) and
any fsspec file system named by `BENCHGEN_ARTIFACT_URL` (S3-compatible object storage, tested on a
local S3 server). Keys are relative POSIX paths (`bundles/bm_…/v1.zip`). Unguarded: callers check
access first. Writes happen before the database commit, so a rolled-back request can leave an
orphan file under a fresh id, never a row pointing at a missing one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from benchgen.core.config import Settings

# Written last into a remote folder (see RemoteArtifactStore.put_folder); a reserved name, so no
# caller's key can be mistaken for it.
MANIFEST = ".benchgen-folder.json"
_READ_ATTEMPTS = 3


def check_key(key: str) -> str:
    """`key` itself when it is a clean relative POSIX path.

    Raises:
        ValueError: empty, absolute, with `.`/`..`/empty parts, a backslash, a control
            character, or the reserved manifest name.
    """
    parts = key.split("/")
    # Keys are built by services from ids, but a key must never name a file outside the store
    # (or another key of an object store, which has no folders to stop at) whatever reaches here.
    bad = (
        not key
        or "\\" in key
        or any(ord(ch) < 32 or ord(ch) == 127 for ch in key)
        or any(part in ("", ".", "..", MANIFEST) for part in parts)
    )
    if bad:
        raise ValueError(f"bad artifact key {key!r}")
    return key


class ArtifactStore(ABC):
    """Where artifacts live, keyed by relative POSIX paths; every key is checked by `check_key`."""

    @abstractmethod
    def put_bytes(self, key: str, data: bytes) -> None:
        """Store `data` under `key`, replacing what was there; a reader sees the old or the new
        bytes, never part of them."""

    @abstractmethod
    def put_file(self, key: str, source: Path) -> None:
        """Store a copy of the local file `source` under `key` (whole, as `put_bytes`)."""

    @abstractmethod
    def read_bytes(self, key: str) -> bytes:
        """The bytes stored under `key`.

        Raises:
            FileNotFoundError: nothing is stored there.
        """

    @abstractmethod
    def size(self, key: str) -> int:
        """The stored artifact's size in bytes, without reading it.

        Raises:
            FileNotFoundError: nothing is stored there.
        """

    @abstractmethod
    def exists(self, key: str) -> bool:
        """True when an artifact (not a folder-like prefix) is stored under `key`."""

    @abstractmethod
    def copy_to(self, key: str, destination: Path) -> Path:
        """Copy the artifact to a local file (e.g. into a sandbox's throw-away folder).

        Raises:
            FileNotFoundError: nothing is stored there.
        """

    @abstractmethod
    def put_folder(self, prefix: str, source: Path) -> None:
        """Store every file under the local folder `source` below `prefix`, replacing what was
        there; readers see a folder only once all of it is stored."""

    @abstractmethod
    def folder(self, prefix: str) -> Path:
        """A local folder holding the artifacts stored by `put_folder` under `prefix`, to read
        and never to change (the local store's own; a cached download for a remote one)."""

    @abstractmethod
    def copy_folder_to(self, prefix: str, destination: Path) -> Path:
        """Copy the folder stored under `prefix` into a new local folder `destination`.

        Raises:
            FileNotFoundError: no folder is stored there (or it is being replaced).
        """

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove one artifact; missing is fine."""

    @abstractmethod
    def delete_prefix(self, prefix: str) -> None:
        """Remove every artifact under a folder-like prefix (`scratch/sc_…`)."""

    @abstractmethod
    def keys(self, prefix: str) -> list[str]:
        """The keys stored under a folder-like prefix, sorted."""


class LocalArtifactStore(ArtifactStore):
    """A local folder of artifacts: each write lands under a hidden name, then is renamed."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    def put_bytes(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_bytes(data)
        os.replace(partial, path)

    def put_file(self, key: str, source: Path) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        shutil.copyfile(source, partial)
        os.replace(partial, path)

    def read_bytes(self, key: str) -> bytes:
        return self._path(key).read_bytes()

    def size(self, key: str) -> int:
        return self._path(key).stat().st_size

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def copy_to(self, key: str, destination: Path) -> Path:
        shutil.copyfile(self._path(key), destination)
        return destination

    def put_folder(self, prefix: str, source: Path) -> None:
        path = self._path(prefix)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(source, partial, symlinks=False)
        shutil.rmtree(path, ignore_errors=True)
        os.replace(partial, path)

    def folder(self, prefix: str) -> Path:
        return self._path(prefix)

    def copy_folder_to(self, prefix: str, destination: Path) -> Path:
        shutil.copytree(self._path(prefix), destination, symlinks=False)
        return destination

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def delete_prefix(self, prefix: str) -> None:
        shutil.rmtree(self._path(prefix), ignore_errors=True)

    def keys(self, prefix: str) -> list[str]:
        base = self._path(prefix)
        if not base.is_dir():
            return []
        found = (p for p in base.rglob("*") if p.is_file() and not p.name.endswith(".partial"))
        return sorted(p.relative_to(self.root).as_posix() for p in found)


class RemoteArtifactStore(ArtifactStore):
    """Artifacts in an fsspec file system (S3 and S3-compatible servers) under `root`.

    One object is written by one PUT (or one completed multipart upload), which readers see
    whole or not at all. A folder is its files plus a manifest written last, naming each file
    with its size and SHA-256: readers trust only a folder with a manifest and check every file
    they download against it, so a folder being replaced is never read half old, half new.
    """

    def __init__(self, fs: Any, root: str, cache: Path) -> None:
        self.fs = fs
        self.root = root.rstrip("/")
        self.cache = cache

    def _path(self, key: str) -> str:
        return f"{self.root}/{check_key(key)}"

    def put_bytes(self, key: str, data: bytes) -> None:
        self.fs.pipe_file(self._path(key), data)

    def put_file(self, key: str, source: Path) -> None:
        self.fs.put_file(str(source), self._path(key))

    def read_bytes(self, key: str) -> bytes:
        data: bytes = self.fs.cat_file(self._path(key))
        return data

    def size(self, key: str) -> int:
        info = self.fs.info(self._path(key))
        if info.get("type") != "file":
            raise FileNotFoundError(key)
        return int(info["size"])

    def exists(self, key: str) -> bool:
        return bool(self.fs.isfile(self._path(key)))

    def copy_to(self, key: str, destination: Path) -> Path:
        self.fs.get_file(self._path(key), str(destination))
        return destination

    def put_folder(self, prefix: str, source: Path) -> None:
        check_key(prefix)
        files = sorted(p for p in source.rglob("*") if p.is_file())
        names = [p.relative_to(source).as_posix() for p in files]
        for name in names:
            check_key(f"{prefix}/{name}")
        manifest = {
            n: {"size": p.stat().st_size, "sha256": _sha256(p)}
            for n, p in zip(names, files, strict=True)
        }
        # Readers stop trusting the folder before any of its files changes.
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self._manifest(prefix))
        stale = set(self.keys(prefix)) - {f"{prefix}/{n}" for n in names}
        if stale:
            self.fs.rm([self._path(k) for k in sorted(stale)])
        if files:
            self.fs.put([str(p) for p in files], [self._path(f"{prefix}/{n}") for n in names])
        self.fs.pipe_file(self._manifest(prefix), json.dumps({"files": manifest}).encode())

    def folder(self, prefix: str) -> Path:
        place = self.cache.joinpath(*check_key(prefix).split("/"))
        manifest = self._manifest_bytes(prefix)
        if manifest is None:
            raise FileNotFoundError(f"no folder stored under {prefix!r}")
        target = place / _digest(manifest)
        if not target.is_dir():
            place.mkdir(parents=True, exist_ok=True)
            partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=place))
            try:
                target = place / _digest(self._download(prefix, partial))
                self._settle(partial, target)
            finally:
                shutil.rmtree(partial, ignore_errors=True)
        for old in place.iterdir():
            # Copies of earlier versions of the folder (a download in progress is left alone).
            if old != target and not old.name.startswith(".partial-"):
                shutil.rmtree(old, ignore_errors=True)
        return target

    @staticmethod
    def _settle(partial: Path, target: Path) -> None:
        # A download appears under its manifest's digest only once complete and checked; when
        # another process got there first, its copy is kept.
        try:
            os.rename(partial, target)
        except OSError:
            if not target.is_dir():
                raise

    def copy_folder_to(self, prefix: str, destination: Path) -> Path:
        check_key(prefix)
        destination.mkdir(parents=True)
        try:
            self._download(prefix, destination)
        except BaseException:
            shutil.rmtree(destination, ignore_errors=True)
            raise
        return destination

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self._path(key))

    def delete_prefix(self, prefix: str) -> None:
        found = self._find(prefix)
        # Manifests first: a folder stops being trusted before its files go.
        found.sort(key=lambda path: (not path.endswith(f"/{MANIFEST}"), path))
        if found:
            self.fs.rm(found)
        shutil.rmtree(self.cache.joinpath(*prefix.split("/")), ignore_errors=True)

    def keys(self, prefix: str) -> list[str]:
        start = len(self.root) + 1
        found = (p[start:] for p in self._find(prefix))
        return sorted(k for k in found if not k.endswith(f"/{MANIFEST}"))

    def _find(self, prefix: str) -> list[str]:
        base = self._path(prefix) + "/"
        return [p for p in self.fs.find(base) if p.startswith(base)]

    def _manifest(self, prefix: str) -> str:
        return f"{self._path(prefix)}/{MANIFEST}"

    def _manifest_bytes(self, prefix: str) -> bytes | None:
        try:
            data: bytes = self.fs.cat_file(self._manifest(prefix))
        except FileNotFoundError:
            return None
        return data

    def _download(self, prefix: str, target: Path) -> bytes:
        """Fetch the folder under `prefix` into the empty local folder `target`, every file
        checked against the manifest; the manifest's bytes.

        Raises:
            FileNotFoundError: no folder there, or it kept changing while it was read.
        """
        for attempt in range(_READ_ATTEMPTS):
            manifest = self._manifest_bytes(prefix)
            if manifest is None:
                break
            files: dict[str, dict[str, Any]] = json.loads(manifest)["files"]
            local = [target.joinpath(*check_key(name).split("/")) for name in files]
            for path in local:
                path.parent.mkdir(parents=True, exist_ok=True)
            try:
                if files:
                    self.fs.get(
                        [self._path(f"{prefix}/{n}") for n in files], [str(p) for p in local]
                    )
            except FileNotFoundError:
                pass
            else:
                if all(_matches(p, files[n]) for n, p in zip(files, local, strict=True)):
                    return manifest
            # Replaced while we read it: start again from the new manifest.
            _empty(target)
            time.sleep(0.2 * (attempt + 1))
        raise FileNotFoundError(f"no complete folder stored under {prefix!r}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _digest(manifest: bytes) -> str:
    return hashlib.sha256(manifest).hexdigest()[:16]


def _matches(path: Path, entry: dict[str, Any]) -> bool:
    return (
        path.is_file() and path.stat().st_size == entry["size"] and _sha256(path) == entry["sha256"]
    )


def _empty(folder: Path) -> None:
    for child in folder.iterdir():
        if child.is_dir():
            shutil.rmtree(child)
        else:
            child.unlink()


def store_for(settings: Settings) -> ArtifactStore:
    """The deployment's artifact store: the remote one named by `artifact_url`, else the local
    folder.

    Raises:
        RuntimeError: a remote URL is configured but its fsspec back end is not installed.
    """
    if not settings.artifact_url:
        return LocalArtifactStore(settings.data_dir / "artifacts")
    return RemoteArtifactStore(*_remote_fs(settings), settings.data_dir / "cache" / "artifacts")


def _remote_fs(settings: Settings) -> tuple[Any, str]:
    url = settings.artifact_url or ""
    options: dict[str, Any] = {}
    if url.startswith(("s3://", "s3a://")):
        # Several processes share the bucket: a cached listing would hide their writes.
        options["use_listings_cache"] = False
        if settings.s3_endpoint_url:
            options["endpoint_url"] = settings.s3_endpoint_url
    try:
        # Imported here: only deployments that configure object storage install it. The
        # credentials come from the AWS_* environment or s3fs's own configuration files.
        import fsspec

        fs, root = fsspec.core.url_to_fs(url, **options)
    except ImportError as exc:
        raise RuntimeError(
            "BENCHGEN_ARTIFACT_URL needs the object-storage extra: pip install 'benchgen[s3]'"
        ) from exc
    return fs, str(root)
