"""An upload's form refused with what to change: sent as JSON, it is told to be a multipart
form (not that every field is missing); a required field sent empty is told empty."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.support import World

IMPORT = "/api/v1/benchmarks/import/file"
LINES = b'{"prompt": "2+2?", "answer": "4"}\n'


def test_an_upload_form_is_refused_for_what_was_sent(client: TestClient, world: World) -> None:
    ana = world.user("ana@example.com")
    auth = {"Authorization": f"Bearer {world.token(ana, ['read', 'create'])}"}

    as_json = client.post(IMPORT, json={"title": "Sums", "format": "qa"}, headers=auth)
    assert as_json.status_code == 422, as_json.text
    assert as_json.json()["error"]["details"]["errors"] == [
        {
            "loc": ["body"],
            "msg": "must be a form with its file, sent as Content-Type: multipart/form-data",
        }
    ]
    form = {"title": "", "format": "qa", "file_format": "jsonl"}
    empty = client.post(IMPORT, files={"file": ("q.jsonl", LINES)}, data=form, headers=auth)
    assert empty.status_code == 422, empty.text
    assert empty.json()["error"]["details"]["errors"] == [
        {"loc": ["body", "title"], "msg": "must not be empty"}
    ]
    assert client.get("/api/v1/benchmarks", headers=auth).json()["items"] == []
