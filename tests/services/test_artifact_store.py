"""Artifact storage: one contract kept by the local folder and by S3 (moto's server on
127.0.0.1); a folder on S3 is trusted only with its manifest and checked file by file; a service
with BENCHGEN_ARTIFACT_URL set keeps nothing in the local artifacts folder.

Without moto or s3fs the S3 cases skip, except under `CI=true`, where that is a failure.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchgen.core.clock import ManualClock
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.db.session import Database
from benchgen.services import _artifacts
from benchgen.services._artifacts import MANIFEST, ArtifactStore, store_for
from benchgen.services.datasets import datasets
from benchgen.services.runtime import Runtime
from tests.support import World, python_output

IN_CI = os.environ.get("CI", "").lower() == "true"
# Loopback only, and nothing from the machine's own AWS configuration or metadata service.
FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """An S3 server (moto) on 127.0.0.1 for this module, with fake credentials in the env."""
    try:
        import s3fs  # noqa: F401
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        if IN_CI:
            pytest.fail(f"CI=true requires moto[server] and s3fs: {exc}")
        pytest.skip(f"moto[server] or s3fs is not installed: {exc}")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in FAKE_AWS.items():
            patch.setenv(name, value)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            yield f"http://{host}:{port}"
        finally:
            server.stop()


def s3_settings(base: Settings, endpoint: str) -> Settings:
    """`base` with artifacts in a fresh bucket of the moto server."""
    bucket = f"bg-{uuid.uuid4().hex[:12]}"
    changed = base.model_copy(
        update={"artifact_url": f"s3://{bucket}/benchgen", "s3_endpoint_url": endpoint}
    )
    store = store_for(changed)
    assert isinstance(store, _artifacts.RemoteArtifactStore)
    store.fs.mkdir(bucket)
    return changed


@pytest.fixture(params=["local", "s3"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def store(kind: str, data_dir: Path, request: pytest.FixtureRequest) -> ArtifactStore:
    settings = Settings(data_dir=data_dir, artifact_url=None)
    if kind == "s3":
        settings = s3_settings(settings, request.getfixturevalue("s3_endpoint"))
    return store_for(settings)


def make_folder(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def read_folder(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


CHECKPOINT = {
    "adapter_config.json": b'{"r": 8}',
    "adapter_model.safetensors": bytes(range(256)) * 40,
    "tokenizer/vocab.txt": b"a\nb\n",
}


# The contract, on both stores.


def test_bytes_are_stored_replaced_and_read_back(store: ArtifactStore) -> None:
    store.put_bytes("bundles/bm_1/v1.zip", b"first")
    assert store.read_bytes("bundles/bm_1/v1.zip") == b"first"
    store.put_bytes("bundles/bm_1/v1.zip", b"second, longer")
    assert store.read_bytes("bundles/bm_1/v1.zip") == b"second, longer"
    with pytest.raises(FileNotFoundError):
        store.read_bytes("bundles/bm_1/v2.zip")


def test_a_file_is_stored_and_copied_out(store: ArtifactStore, tmp_path: Path) -> None:
    source = tmp_path / "predictions.zip"
    source.write_bytes(b"PK zipped")
    store.put_file("runs/run_1/predictions/task-0.zip", source)
    copied = store.copy_to("runs/run_1/predictions/task-0.zip", tmp_path / "out.zip")
    assert copied == tmp_path / "out.zip"
    assert copied.read_bytes() == b"PK zipped"
    with pytest.raises(FileNotFoundError):
        store.copy_to("runs/run_1/predictions/task-9.zip", tmp_path / "none.zip")


def test_a_folder_is_stored_read_locally_copied_and_replaced(
    store: ArtifactStore, tmp_path: Path
) -> None:
    store.put_folder("training/trn_1/final", make_folder(tmp_path / "v1", CHECKPOINT))
    local = store.folder("training/trn_1/final")
    assert local.is_dir()
    assert read_folder(local) == CHECKPOINT
    copy = store.copy_folder_to("training/trn_1/final", tmp_path / "copy" / "resume")
    assert copy == tmp_path / "copy" / "resume"
    assert read_folder(copy) == CHECKPOINT
    assert store.keys("training/trn_1/final") == [
        f"training/trn_1/final/{name}" for name in sorted(CHECKPOINT)
    ]

    newer = {"adapter_config.json": b'{"r": 16}', "weights.bin": b"\x00\x01"}
    store.put_folder("training/trn_1/final", make_folder(tmp_path / "v2", newer))
    assert read_folder(store.folder("training/trn_1/final")) == newer
    assert read_folder(store.copy_folder_to("training/trn_1/final", tmp_path / "c2")) == newer
    assert store.keys("training/trn_1/final") == [
        "training/trn_1/final/adapter_config.json",
        "training/trn_1/final/weights.bin",
    ]


def test_a_missing_folder_cannot_be_copied(store: ArtifactStore, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        store.copy_folder_to("training/trn_none/checkpoint", tmp_path / "resume")


def test_keys_list_what_lies_under_a_prefix_only(store: ArtifactStore) -> None:
    for key in ["scratch/sc_1/b.txt", "scratch/sc_1/a/c.py", "scratch/sc_12/x", "scratch/sc_1x"]:
        store.put_bytes(key, key.encode())
    assert store.keys("scratch/sc_1") == ["scratch/sc_1/a/c.py", "scratch/sc_1/b.txt"]
    assert store.keys("scratch") == [
        "scratch/sc_1/a/c.py",
        "scratch/sc_1/b.txt",
        "scratch/sc_12/x",
        "scratch/sc_1x",
    ]
    assert store.keys("scratch/sc_2") == []
    assert store.keys("scratch/sc_1x") == []  # a key is not a prefix of itself


def test_exists_and_size_name_artifacts_not_prefixes(store: ArtifactStore) -> None:
    store.put_bytes("datasets/ds_1/data.jsonl", b"{}\n{}\n")
    assert store.exists("datasets/ds_1/data.jsonl")
    assert not store.exists("datasets/ds_1")
    assert not store.exists("datasets/ds_2/data.jsonl")
    assert store.size("datasets/ds_1/data.jsonl") == 6
    with pytest.raises(FileNotFoundError):
        store.size("datasets/ds_2/data.jsonl")


def test_delete_and_delete_prefix(store: ArtifactStore, tmp_path: Path) -> None:
    for key in ["scratch/sc_1/a.txt", "scratch/sc_1/d/b.txt", "scratch/sc_2/a.txt"]:
        store.put_bytes(key, b"x")
    store.delete("scratch/sc_2/a.txt")
    store.delete("scratch/sc_2/a.txt")  # missing is fine
    assert not store.exists("scratch/sc_2/a.txt")
    store.delete_prefix("scratch/sc_1")
    store.delete_prefix("scratch/sc_9")  # missing is fine
    assert store.keys("scratch") == []

    store.put_folder("training/trn_1/checkpoint", make_folder(tmp_path / "ck", CHECKPOINT))
    store.put_bytes("training/trn_1/other", b"kept")
    store.delete_prefix("training/trn_1/checkpoint")
    assert store.keys("training/trn_1") == ["training/trn_1/other"]
    with pytest.raises(FileNotFoundError):
        store.copy_folder_to("training/trn_1/checkpoint", tmp_path / "gone")


BAD_KEYS = ["", "/etc/passwd", "../x", "a/../../b", "a//b", "a/./b", "a/", ".", "a\\b", "a\x00b"]


@pytest.mark.parametrize("key", [*BAD_KEYS, MANIFEST, f"training/x/{MANIFEST}"])
def test_bad_keys_are_refused_by_every_method(
    store: ArtifactStore, tmp_path: Path, key: str
) -> None:
    source = make_folder(tmp_path / "src", {"f": b"x"})
    calls: list[Callable[[], Any]] = [
        lambda: store.put_bytes(key, b"x"),
        lambda: store.put_file(key, source / "f"),
        lambda: store.read_bytes(key),
        lambda: store.size(key),
        lambda: store.exists(key),
        lambda: store.copy_to(key, tmp_path / "out"),
        lambda: store.put_folder(key, source),
        lambda: store.folder(key),
        lambda: store.copy_folder_to(key, tmp_path / "out-dir"),
        lambda: store.delete(key),
        lambda: store.delete_prefix(key),
        lambda: store.keys(key),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="bad artifact key"):
            call()
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "out-dir").exists()


def test_a_folder_holding_a_file_with_a_bad_name_is_refused(
    store: ArtifactStore, tmp_path: Path
) -> None:
    if isinstance(store, _artifacts.LocalArtifactStore):
        pytest.skip("the local store copies a folder whole; no file is named by a key")
    source = make_folder(tmp_path / "src", {"ok": b"x", f"d/{MANIFEST}": b"{}"})
    with pytest.raises(ValueError, match="bad artifact key"):
        store.put_folder("training/trn_1/final", source)
    assert store.keys("training") == []


# S3 only: where folders land, and what readers trust.


@pytest.fixture
def s3_store(data_dir: Path, s3_endpoint: str) -> _artifacts.RemoteArtifactStore:
    store = store_for(s3_settings(Settings(data_dir=data_dir), s3_endpoint))
    assert isinstance(store, _artifacts.RemoteArtifactStore)
    return store


def test_an_s3_folder_is_cached_locally_and_fetched_again_when_it_changed(
    s3_store: _artifacts.RemoteArtifactStore, data_dir: Path, tmp_path: Path
) -> None:
    s3_store.put_folder("training/trn_1/final", make_folder(tmp_path / "v1", CHECKPOINT))
    first = s3_store.folder("training/trn_1/final")
    assert first.is_relative_to(data_dir / "cache" / "artifacts" / "training" / "trn_1" / "final")
    assert s3_store.folder("training/trn_1/final") == first  # the manifest did not change
    assert not (data_dir / "artifacts").exists()

    s3_store.put_folder("training/trn_1/final", make_folder(tmp_path / "v2", {"w": b"new"}))
    second = s3_store.folder("training/trn_1/final")
    assert second != first
    assert read_folder(second) == {"w": b"new"}
    assert not first.exists()  # the stale copy is dropped
    s3_store.delete_prefix("training/trn_1")
    assert not second.exists()


def test_an_s3_folder_without_its_manifest_is_not_trusted(
    s3_store: _artifacts.RemoteArtifactStore, tmp_path: Path
) -> None:
    # Files of a folder whose writer died before the manifest.
    s3_store.put_bytes("training/trn_1/checkpoint/adapter_config.json", b"{}")
    with pytest.raises(FileNotFoundError):
        s3_store.folder("training/trn_1/checkpoint")
    with pytest.raises(FileNotFoundError):
        s3_store.copy_folder_to("training/trn_1/checkpoint", tmp_path / "resume")


def test_an_s3_folder_that_does_not_match_its_manifest_is_not_read(
    s3_store: _artifacts.RemoteArtifactStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_artifacts.time, "sleep", lambda _: None)
    s3_store.put_folder("training/trn_1/checkpoint", make_folder(tmp_path / "ck", CHECKPOINT))
    # A file overwritten after the manifest named it: half old, half new.
    s3_store.put_bytes("training/trn_1/checkpoint/adapter_config.json", b'{"r": 99}')
    with pytest.raises(FileNotFoundError, match="no complete folder"):
        s3_store.copy_folder_to("training/trn_1/checkpoint", tmp_path / "resume")
    with pytest.raises(FileNotFoundError, match="no complete folder"):
        s3_store.folder("training/trn_1/checkpoint")
    manifest = json.loads(s3_store.fs.cat_file(s3_store._manifest("training/trn_1/checkpoint")))
    assert sorted(manifest["files"]) == sorted(CHECKPOINT)


def test_the_local_store_needs_no_object_storage_package() -> None:
    code = (
        "import sys; from benchgen.core.config import Settings; "
        "from benchgen.services._artifacts import store_for; "
        "store_for(Settings(data_dir='unused')).exists('a/b'); "
        "print(sorted(m for m in ('fsspec', 's3fs', 'botocore') if m in sys.modules))"
    )
    assert python_output(code).strip() == "[]"


# Through a service, with BENCHGEN_ARTIFACT_URL pointing at the S3 server.


@pytest.fixture
def s3_world(settings: Settings, clock: ManualClock, s3_endpoint: str) -> Iterator[World]:
    changed = s3_settings(settings, s3_endpoint)
    rt = Runtime(changed, Database(changed.resolved_database_url()), clock)
    yield World(rt)
    rt.close()


def test_a_dataset_uploaded_to_s3_is_read_back_and_nothing_lands_locally(
    s3_world: World, settings: Settings
) -> None:
    rows = [
        {"prompt": "Capital of France?", "completion": "Paris"},
        {"prompt": "1+1", "completion": "2"},
    ]
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    me = Principal.web(s3_world.user("ana@example.com"))
    made = s3_world.do(me, datasets.upload_dataset, data, "d.jsonl", {"name": "Mine"})
    assert s3_world.do(me, datasets.dataset_records, made.id) == rows
    store = store_for(s3_world.rt.settings)
    assert isinstance(store, _artifacts.RemoteArtifactStore)
    assert store.keys("datasets") == [f"datasets/{made.id}/data.jsonl"]
    assert store.size(f"datasets/{made.id}/data.jsonl") == made.size
    local = settings.data_dir / "artifacts"
    assert not local.exists() or not [p for p in local.rglob("*") if p.is_file()]
