"""A body sent to an operation that reads none is refused, never dropped: the request changes
nothing, and a client learns that what it sent was not taken."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.support import QA, World


def test_a_body_sent_where_the_operation_takes_none_is_refused(
    client: TestClient, world: World
) -> None:
    ana = world.user("ana@example.com")
    auth = {"Authorization": f"Bearer {world.token(ana, ['read', 'create', 'publish'])}"}
    made = client.post("/api/v1/benchmarks", json=QA, headers=auth).json()["benchmark"]
    publish = f"/api/v1/benchmarks/{made['id']}/publish"

    sent = client.post(publish, json={"visibility": "shared"}, headers=auth)
    assert sent.status_code == 422, sent.text
    assert sent.json()["error"]["details"]["errors"] == [
        {"loc": ["body"], "msg": "this operation takes no body; send the request without one"}
    ]
    as_form = client.post(publish, data={"visibility": "shared"}, headers=auth)
    assert as_form.status_code == 422, as_form.text
    read = client.get(f"/api/v1/benchmarks/{made['id']}", headers=auth).json()
    assert read["visibility"] == "private"  # nothing changed
    # Without a valid token the caller learns only that.
    assert client.post(publish, json={"x": 1}).status_code == 401
    # An empty object or null, as many clients send by default, asks for nothing.
    assert client.post(publish, content=b"not json", headers=auth).status_code == 422
    assert client.post(publish, json={}, headers=auth).json()["visibility"] == "published"
    assert client.post(publish, content=b" null ", headers=auth).status_code == 200


def test_a_union_is_refused_at_the_fields_place(client: TestClient, world: World) -> None:
    """A union's refusal named its members in `loc` (`[…, "answer", "constrained-str"]`, a
    tagged union's tag), places no client sent and no client can find in what it sent."""
    ana = world.user("ana@example.com")
    auth = {"Authorization": f"Bearer {world.token(ana, ['read', 'create'])}"}
    question = {"prompt": "2+2?", "answer": 4}
    sent = {"title": "Sums", "format": "qa", "questions": [question]}
    refused = client.post("/api/v1/benchmarks", json=sent, headers=auth)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["details"]["errors"] == [
        {
            "loc": ["body", "questions", 0, "answer"],
            "msg": "Input should be a valid string or a valid list",
        }
    ]
    chat = client.post("/api/v1/chat/conversations", json={}, headers=auth).json()["id"]
    action = {"action": {"type": "choose", "value": "x"}}
    told = client.post(f"/api/v1/chat/conversations/{chat}/messages", json=action, headers=auth)
    assert [error["loc"] for error in told.json()["error"]["details"]["errors"]] == [
        ["body", "action", "turn_id"],
        ["body", "action", "option"],
        ["body", "action", "value"],
    ]


def test_a_lone_surrogate_in_free_form_metadata_is_refused_at_its_place(
    client: TestClient, world: World
) -> None:
    """JSON's "\\ud800" is a lone surrogate once parsed, which no database stores: in a
    question's metadata (free-form, so no typed field refused it) it was a 500."""
    ana = world.user("ana@example.com")
    auth = {"Authorization": f"Bearer {world.token(ana, ['read', 'create'])}"}
    body = b'{"title": "T", "format": "qa", "questions": [{"prompt": "2+2?", "answer": "4", '
    body += b'"metadata": {"note": "x\\ud800"}}]}'
    sent = client.post(
        "/api/v1/benchmarks", content=body, headers={**auth, "content-type": "application/json"}
    )
    assert sent.status_code == 422, sent.text
    (error,) = sent.json()["error"]["details"]["errors"]
    assert error["loc"] == ["body", "questions", 0, "metadata", "note"]
    assert "lone surrogate" in error["msg"]
    assert client.get("/api/v1/benchmarks", headers=auth).json()["items"] == []
