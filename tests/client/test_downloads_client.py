"""Downloads refuse a success of the wrong media type (a proxy's or portal's HTML page) with
`BadResponse`, in the client and in the CLI's remote mode, instead of returning it as the file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

import benchgen.client as client_package
from benchgen.cli import app
from benchgen.client import BadResponse, BenchGen, ClientError

PORTAL = "<!doctype html><html><body>Sign in to the corporate network</body></html>"
URL = "http://bench.test"

# Each download, with the media types a BenchGen server answers it with.
DOWNLOADS: list[tuple[str, Callable[[BenchGen], Any], list[str]]] = [
    ("run export", lambda bg: bg.export("run_1", "csv"), ["text/csv", "application/x-ndjson"]),
    ("bundle", lambda bg: bg.download_bundle("bm_1", 1), ["application/zip"]),
    (
        "benchmark export",
        lambda bg: bg.export_benchmark("bm_1", "jsonl"),
        ["application/x-ndjson", "application/zip"],
    ),
    (
        "leaderboard",
        lambda bg: bg.export_leaderboard("bm_1"),
        ["text/csv", "application/json"],
    ),
]


def _answering(media_type: str, body: bytes) -> BenchGen:
    def handler(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": media_type}, content=body)

    return BenchGen(URL, "bgp_x", transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(("name", "call", "kinds"), DOWNLOADS, ids=[d[0] for d in DOWNLOADS])
def test_an_html_page_answered_200_is_refused(
    name: str, call: Callable[[BenchGen], Any], kinds: list[str]
) -> None:
    with (
        _answering("text/html; charset=utf-8", PORTAL.encode()) as bg,
        pytest.raises(BadResponse) as caught,
    ):
        call(bg)
    error = caught.value
    assert isinstance(error, ClientError)
    assert (error.status, error.code) == (200, "bad_response")
    assert "text/html" in error.message and kinds[0] in error.message
    assert "is it a BenchGen server" in error.message


@pytest.mark.parametrize(("name", "call", "kinds"), DOWNLOADS, ids=[d[0] for d in DOWNLOADS])
def test_a_file_of_the_expected_type_is_returned(
    name: str, call: Callable[[BenchGen], Any], kinds: list[str]
) -> None:
    for kind in kinds:
        with _answering(f"{kind}; charset=utf-8", b"file body") as bg:
            assert call(bg) in ("file body", b"file body")


def test_a_download_without_a_media_type_is_refused() -> None:
    with _answering("", b"PK\x03\x04") as bg, pytest.raises(BadResponse, match="no media type"):
        bg.download_bundle("bm_1", 1)


def test_a_body_that_is_not_json_is_a_bad_response_too() -> None:
    with _answering("text/html", PORTAL.encode()) as bg, pytest.raises(BadResponse):
        bg.run("run_1")


def test_the_cli_saves_no_html_as_the_bundle_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/bundle/download"):
            return httpx.Response(200, headers={"content-type": "text/html"}, content=PORTAL)
        return httpx.Response(200, json={"version": 1})

    def connect(url: str, token: str | None) -> BenchGen:
        return BenchGen(URL, "bgp_x", transport=httpx.MockTransport(handler))

    monkeypatch.setattr(client_package, "BenchGen", connect)
    target = tmp_path / "saved.zip"
    saved = CliRunner().invoke(
        app,
        ["benchmarks", "download-bundle", "bm_1", "-o", str(target), "--url", URL],
        env={"BENCHGEN_TOKEN": "bgp_x", "COLUMNS": "200"},
    )
    assert saved.exit_code == 1, saved.output
    assert "application/zip" in saved.output and not target.exists()
