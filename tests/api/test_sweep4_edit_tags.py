"""Two collaborators editing one benchmark from two tabs: the second save silently overwrote
the first (title, description or questions). A read now carries an ETag, and a change sent with
it in If-Match is refused (412) once someone else changed the benchmark, saying what changed."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.support import QA, World

BENCHMARKS = "/api/v1/benchmarks"


def _team(world: World) -> tuple[str, dict[str, str], dict[str, str]]:
    """A benchmark and the API headers of its owner and of a collaborator."""
    owner = world.user("ana@example.com")
    bm = world.benchmark(owner, QA)
    world.user("bo@example.com")
    helper = world.collaborator(owner, bm, "bo@example.com")
    scopes = ["read", "edit"]
    return (
        bm,
        {"Authorization": f"Bearer {world.token(owner, scopes)}"},
        {"Authorization": f"Bearer {world.token(helper, scopes)}"},
    )


def _patch(client: TestClient, bm: str, auth: dict[str, str], tag: str | None, body: Any) -> Any:
    headers = auth if tag is None else {**auth, "If-Match": tag}
    return client.patch(f"{BENCHMARKS}/{bm}", json=body, headers=headers)


def test_a_rename_from_a_stale_tab_is_refused_and_loses_nothing(
    client: TestClient, world: World
) -> None:
    """Ana renamed it, then Bo, from a tab opened before, saved a new description: it was
    stored over a benchmark he had not seen, and nothing told him."""
    bm, ana, bo = _team(world)
    ana_tag = client.get(f"{BENCHMARKS}/{bm}", headers=ana).headers["ETag"]
    bo_tag = client.get(f"{BENCHMARKS}/{bm}", headers=bo).headers["ETag"]
    assert ana_tag == bo_tag
    saved = _patch(client, bm, ana, ana_tag, {"title": "Capitals of Europe"})
    assert saved.status_code == 200, saved.text
    assert saved.headers["ETag"] != ana_tag
    stale = _patch(client, bm, bo, bo_tag, {"title": "World capitals", "description": "All"})
    assert stale.status_code == 412, stale.text
    error = stale.json()["error"]
    assert error["code"] == "conflict"
    assert error["details"]["changed"] == ["title"]
    assert error["details"]["title"] == "Capitals of Europe"
    assert error["details"]["etag"] == saved.headers["ETag"]
    assert "the title changed" in error["message"] and "nothing was saved" in error["message"]
    now = client.get(f"{BENCHMARKS}/{bm}", headers=bo)
    assert (now.json()["title"], now.json()["description"]) == ("Capitals of Europe", "")
    again = _patch(client, bm, bo, now.headers["ETag"], {"description": "All"})
    assert again.status_code == 200, again.text


def test_questions_saved_from_a_stale_list_are_refused(client: TestClient, world: World) -> None:
    """Both read the questions; Ana added one, and Bo's list without it replaced hers."""
    bm, ana, bo = _team(world)
    read = client.get(f"{BENCHMARKS}/{bm}/questions", headers=bo)
    listed = [{"prompt": q["prompt"], "answer": q["answer"]} for q in read.json()["items"]]
    added = [*listed, {"prompt": "Capital of Peru?", "answer": "Lima"}]
    assert _patch(client, bm, ana, read.headers["ETag"], {"questions": added}).status_code == 200
    edited = [{**listed[0], "answer": "Paris, France"}, listed[1]]
    stale = _patch(client, bm, bo, read.headers["ETag"], {"questions": edited})
    assert stale.status_code == 412, stale.text
    error = stale.json()["error"]
    assert error["details"]["changed"] == ["questions"]
    assert "version 1 then, 2 now" in error["message"]
    prompts = [
        q["prompt"] for q in client.get(f"{BENCHMARKS}/{bm}/questions", headers=bo).json()["items"]
    ]
    assert prompts[-1] == "Capital of Peru?"


def test_a_change_without_if_match_is_made_as_before(client: TestClient, world: World) -> None:
    """Scripts that send no If-Match keep working: the last change wins, as documented."""
    bm, ana, bo = _team(world)
    assert _patch(client, bm, ana, None, {"title": "One"}).status_code == 200
    assert _patch(client, bm, bo, None, {"title": "Two"}).status_code == 200
    assert client.get(f"{BENCHMARKS}/{bm}", headers=ana).json()["title"] == "Two"


def test_if_match_takes_any_weak_and_several_tags_and_refuses_made_up_ones(
    client: TestClient, world: World
) -> None:
    """`*`, a tag a proxy weakened (W/) and a list holding the tag match; a made-up tag is
    refused, saying it names no state the benchmark had."""
    bm, ana, _ = _team(world)
    assert _patch(client, bm, ana, "*", {"title": "One"}).status_code == 200
    tag = client.get(f"{BENCHMARKS}/{bm}", headers=ana).headers["ETag"]
    assert _patch(client, bm, ana, f"W/{tag}", {"title": "Two"}).status_code == 200
    tag = client.get(f"{BENCHMARKS}/{bm}", headers=ana).headers["ETag"]
    assert _patch(client, bm, ana, f'"x", {tag}', {"title": "Three"}).status_code == 200
    made_up = _patch(client, bm, ana, '"nonsense"', {"title": "Four"})
    assert made_up.status_code == 412
    assert made_up.json()["error"]["details"]["changed"] == []
    assert "names no state" in made_up.json()["error"]["message"]
