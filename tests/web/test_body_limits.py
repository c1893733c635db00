"""The web import page takes files as large as the API's import; other pages keep the default."""

from __future__ import annotations

from tests.web.support import WebUser


def test_the_import_page_accepts_a_file_above_the_default_limit(signed_in: WebUser) -> None:
    line = b'{"prompt": "What is 1 + 1?", "answer": "2"}\n'
    big = line * (3 * 1024 * 1024 // len(line))  # 3 MiB: above the 2 MiB default
    response = signed_in.client.post(
        "/benchmarks/import",
        data={"csrf_token": signed_in.csrf, "title": "Big", "format": "qa"},
        files={"file": ("big.jsonl", big, "application/jsonl")},
    )
    assert response.status_code != 413


def test_other_pages_keep_the_default_limit(signed_in: WebUser) -> None:
    response = signed_in.post("/benchmarks", {"title": "x" * (3 * 1024 * 1024)})
    assert response.status_code == 413
    assert "text/html" in response.headers["content-type"] and "Too large" in response.text
