"""The client sends a file given by its path as it reads it, declaring its length: a 5 GB file
was read whole into memory before the server could refuse it by that length."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchgen.client import BenchGen, TooLarge

HUGE = 5 * 1024**3
LIMIT = 64 * 1024 * 1024


class RefusingByLength(httpx.BaseTransport):
    """A server that answers 413 from the declared Content-Length, reading none of the body."""

    def __init__(self) -> None:
        self.declared: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.declared.append(int(request.headers["Content-Length"]))
        message = f"The request body is larger than the {LIMIT} bytes this route accepts."
        error = {"code": "too_large", "message": message, "details": {"limit_bytes": LIMIT}}
        return httpx.Response(413, json={"error": error})


def _never_read_whole(path: Path) -> bytes:
    raise AssertionError(f"{path} was read whole into memory")


Upload = Callable[[BenchGen, Path], Any]
UPLOADS: dict[str, Upload] = {
    "dataset": lambda bg, path: bg.upload_dataset(path, "big"),
    "import": lambda bg, path: bg.import_file(path, "Big"),
    "bundle": lambda bg, path: bg.upload_bundle(path),
    "version": lambda bg, path: bg.upload_bundle_version("bm_1", path),
    "submission": lambda bg, path: bg.submit("bm_1", path),
}


@pytest.mark.parametrize("upload", list(UPLOADS.values()), ids=list(UPLOADS))
def test_a_huge_file_is_refused_by_its_length_unread(
    upload: Upload, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    huge = tmp_path / "huge.zip"
    with huge.open("wb") as sparse:
        sparse.truncate(HUGE)  # takes no room on disk
    monkeypatch.setattr(Path, "read_bytes", _never_read_whole)
    server = RefusingByLength()
    with (
        BenchGen("http://server.test", "bgp_x", transport=server) as bg,
        pytest.raises(TooLarge) as refused,
    ):
        upload(bg, huge)
    assert refused.value.limit_bytes == LIMIT
    assert server.declared and server.declared[0] > HUGE


def test_bytes_and_paths_send_the_same_file(tmp_path: Path) -> None:
    sent: list[bytes] = []

    def keep(request: httpx.Request) -> httpx.Response:
        sent.append(request.read())
        return httpx.Response(200, json={"id": "ds_1"})

    rows = b'{"prompt": "Q", "completion": "A"}\n'
    path = tmp_path / "rows.jsonl"
    path.write_bytes(rows)
    with BenchGen("http://server.test", "bgp_x", transport=httpx.MockTransport(keep)) as bg:
        bg.upload_dataset(path, "rows")
        bg.upload_dataset(rows, "rows", filename="rows.jsonl")
    for body in sent:
        assert b'filename="rows.jsonl"' in body and rows in body
