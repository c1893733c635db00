"""Run pages: who sees what, the live log over server-sent events, the breakdown and its
filters, the tag chart, downloads, the leaderboard, score edits and cancelling."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.jobs.worker import Worker
from benchgen.services import audit, models
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import launch, leaderboards
from benchgen.services.runtime import Runtime
from benchgen.web.pages import run_events, runs
from benchgen.web.session import SESSION_COOKIE
from tests.support import OPERATOR, World
from tests.web.support import WebUser

RANDOM = "mdl_builtin_random"
SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
# The seeded random baseline answers a word of each prompt: right, wrong, nothing, wrong.
TAGGED_QA = {
    "title": "Tagged",
    "format": "qa",
    "questions": [
        {"prompt": "Paris Paris", "answer": "Paris", "tags": ["geo"]},
        {"prompt": "Tokyo", "answer": "Rome", "tags": ["geo", "hard"]},
        {"prompt": "???", "answer": "x", "tags": ["hard"]},
        {"prompt": SCRIPT, "answer": "no", "tags": [IMG]},
    ],
}


@dataclass
class Person:
    """A user id and their signed-in browser."""

    id: str
    web: WebUser


@pytest.fixture
def people(runtime: Runtime, world: World) -> Iterator[dict[str, Person]]:
    """The benchmark's owner and a stranger, each signed in in their own client."""
    made: dict[str, Person] = {}
    clients = []
    for name in ("owner", "stranger"):
        user_id = world.user(f"{name}@example.com", credits_=100)
        client = TestClient(create_app(runtime.settings, runtime), follow_redirects=False)
        clients.append(client.__enter__())
        made[name] = Person(user_id, WebUser.sign_in(client, f"{name}@example.com"))
    yield made
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def benchmark(world: World, people: dict[str, Person]) -> str:
    return world.benchmark(people["owner"].id, TAGGED_QA)


def finish(world: World, runtime: Runtime, user_id: str, benchmark_id: str, model: str) -> str:
    run = world.do(Principal.web(user_id), launch.start_run, benchmark_id, model)
    worker = Worker(runtime)
    while worker.run_once():
        pass
    return run.id


@pytest.fixture
def owner_run(world: World, runtime: Runtime, people: dict[str, Person], benchmark: str) -> str:
    return finish(world, runtime, people["owner"].id, benchmark, RANDOM)


def positions(html: str) -> list[int]:
    from bs4 import BeautifulSoup

    rows = BeautifulSoup(html, "html.parser").select("table.breakdown tr[data-position]")
    return [int(str(row["data-position"])) for row in rows]


def events_of(text: str) -> list[tuple[str, str]]:
    """(event, data) pairs of a server-sent event stream."""
    found = []
    for block in filter(None, text.strip().split("\n\n")):
        lines = block.split("\n")
        name = lines[0].removeprefix("event: ")
        data = [line.removeprefix("data: ") for line in lines[1:] if line.startswith("data: ")]
        found.append((name, "\n".join(data)))
    return found


def test_owner_sees_status_scores_breakdown_and_tag_chart(
    people: dict[str, Person], benchmark: str, owner_run: str
) -> None:
    page = people["owner"].web.page(f"/runs/{owner_run}")
    assert page.select_one(".status-completed") is not None
    assert page.find("a", href=f"/benchmarks/{benchmark}") is not None
    assert "25.0%" in page.text  # one right of four
    assert positions(str(page)) == [0, 1, 2, 3]
    chart = json.loads(page.select_one("script#tag-chart-data").text)  # type: ignore[union-attr]
    assert chart["data"]["labels"] == [IMG, "geo", "hard"]
    assert chart["data"]["datasets"][0]["data"] == [0.0, 50.0, 0.0]
    low, high = chart["data"]["datasets"][1]["data"][1]
    assert 0 < low < 50 < high < 100
    assert page.find("canvas", attrs={"data-chart": "tag-chart-data"}) is not None
    assert page.select_one("[data-events]") is None  # finished: no live stream to follow
    assert "Processing: 4/4 (100%)" in page.text
    for fmt in ("jsonl", "csv"):
        assert page.find("a", href=f"/runs/{owner_run}/download/{fmt}") is not None


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("show=wrong", [1, 3]),
        ("show=no_answer", [2]),
        ("tag=hard", [1, 2]),
        ("show=wrong&tag=geo", [1]),
        ("tag=geo&show=all", [0, 1]),
    ],
)
def test_breakdown_filters(
    people: dict[str, Person], owner_run: str, query: str, expected: list[int]
) -> None:
    response = people["owner"].web.get(f"/runs/{owner_run}?{query}")
    assert response.status_code == 200
    assert positions(response.text) == expected


def test_breakdown_pages(
    people: dict[str, Person], owner_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs, "PAGE_SIZE", 3)
    first = people["owner"].web.page(f"/runs/{owner_run}")
    assert positions(str(first)) == [0, 1, 2]
    assert str(first.find("a", string="Next page")["href"]).endswith("page=2")  # type: ignore[index]
    second = people["owner"].web.get(f"/runs/{owner_run}?page=2")
    assert positions(second.text) == [3]
    assert "Previous page" in second.text and "Next page" not in second.text


def test_unknown_filter_is_an_error_page(people: dict[str, Person], owner_run: str) -> None:
    response = people["owner"].web.get(f"/runs/{owner_run}?show=right")
    assert response.status_code == 422 and "text/html" in response.headers["content-type"]


def test_a_stranger_launcher_sees_aggregates_but_no_breakdown_or_chart(
    world: World, runtime: Runtime, people: dict[str, Person], benchmark: str
) -> None:
    world.do(Principal.web(people["owner"].id), lifecycle.publish_benchmark, benchmark)
    theirs = finish(world, runtime, people["stranger"].id, benchmark, RANDOM)
    web = people["stranger"].web
    for query in ("", "?show=wrong", "?tag=geo"):
        response = web.get(f"/runs/{theirs}{query}")
        assert response.status_code == 200
        assert "tag-chart-data" not in response.text and "breakdown" not in response.text
        assert "Accuracy by tag" not in response.text and "correct" not in response.text
        assert "Add to the leaderboard" not in response.text
    page = web.page(f"/runs/{theirs}")
    assert "25.0%" in page.text and "ANSWER: Paris" in page.text  # aggregate and raw answers
    csv = web.get(f"/runs/{theirs}/download/csv")
    assert csv.status_code == 200 and "outcome" not in csv.text.splitlines()[0]


def test_a_stranger_cannot_see_a_run_on_a_private_benchmark(
    people: dict[str, Person], owner_run: str
) -> None:
    web = people["stranger"].web
    for path in ("", "/events", "/download/csv"):
        assert web.get(f"/runs/{owner_run}{path}").status_code == 404
    assert web.post(f"/runs/{owner_run}/leaderboard").status_code == 404


def test_event_stream_of_a_finished_run_ends_with_progress_100(
    people: dict[str, Person], owner_run: str
) -> None:
    with people["owner"].web.client.stream("GET", f"/runs/{owner_run}/events") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        body = response.read().decode()
    events = events_of(body)
    logs = [data for name, data in events if name == "log"]
    assert logs[0].startswith("Queued") and "Processing: 4/4 (100%)" in logs
    progress = [json.loads(data) for name, data in events if name == "progress"]
    assert progress == [{"done": 4, "total": 4, "percent": 100, "status": "completed"}]
    assert events[-1] == ("end", "completed")


def test_a_reconnecting_stream_goes_on_after_the_last_line_the_browser_saw(
    people: dict[str, Person], owner_run: str
) -> None:
    client = people["owner"].web.client
    whole = client.get(f"/runs/{owner_run}/events").text
    ids = re.findall(r"^id: (\d+)$", whole, re.M)
    logs = [data for name, data in events_of(whole) if name == "log"]
    assert len(ids) == len(logs) >= 3
    headers = {"Last-Event-ID": ids[1]}
    rest = events_of(client.get(f"/runs/{owner_run}/events", headers=headers).text)
    assert [data for name, data in rest if name == "log"] == logs[2:]
    assert rest[-1] == ("end", "completed")
    for garbage in ("-1", "x", "9" * 40, "1e3"):
        again = events_of(
            client.get(f"/runs/{owner_run}/events", headers={"Last-Event-ID": garbage}).text
        )
        assert [data for name, data in again if name == "log"] == logs


class Browser:
    """A stand-in for a request whose browser goes away after `polls` looks."""

    def __init__(self, polls: int) -> None:
        self.polls = polls

    async def is_disconnected(self) -> bool:
        self.polls -= 1
        return self.polls < 0


def follow(runtime: Runtime, secret: str, run_id: str, polls: int) -> list[tuple[str, str]]:
    async def collect() -> list[str]:
        request: Any = Browser(polls)
        return [chunk async for chunk in run_events._events(request, runtime, secret, run_id)]

    return events_of("".join(anyio.run(collect)))


def test_live_stream_follows_a_queued_run_until_disconnect_or_sign_out(
    world: World,
    runtime: Runtime,
    people: dict[str, Person],
    benchmark: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(run_events, "POLL_SECONDS", 0)
    queued = world.do(Principal.web(people["owner"].id), launch.start_run, benchmark, RANDOM)
    web = people["owner"].web
    assert web.page(f"/runs/{queued.id}").select_one("[data-events]") is not None
    secret = web.client.cookies[SESSION_COOKIE]
    events = follow(runtime, secret, queued.id, polls=3)
    assert [name for name, _ in events] == ["log", "progress"]  # nothing new on later polls
    assert json.loads(events[1][1]) == {"done": 0, "total": 4, "percent": 0, "status": "queued"}
    web.post("/signout")
    assert follow(runtime, secret, queued.id, polls=3) == []


def test_sse_data_keeps_each_line_in_its_own_field() -> None:
    assert run_events.sse("log", "one\ntwo") == "event: log\ndata: one\ndata: two\n\n"
    assert run_events.sse("end", "") == "event: end\ndata: \n\n"
    assert run_events.sse("log", "one", 7) == "event: log\ndata: one\nid: 7\n\n"


def test_add_to_and_remove_from_the_leaderboard(
    world: World, people: dict[str, Person], benchmark: str, owner_run: str
) -> None:
    web = people["owner"].web
    response = web.post(f"/runs/{owner_run}/leaderboard")
    assert response.status_code == 303 and response.headers["location"] == f"/runs/{owner_run}"
    board = world.do(Principal.web(people["owner"].id), leaderboards.get_leaderboard, benchmark)
    assert [row.run_id for row in board.rows] == [owner_run]
    assert "Remove from the leaderboard" in web.get(f"/runs/{owner_run}").text
    assert web.post(f"/runs/{owner_run}/leaderboard").status_code == 409  # already on it
    assert web.post(f"/runs/{owner_run}/leaderboard/remove").status_code == 303
    board = world.do(Principal.web(people["owner"].id), leaderboards.get_leaderboard, benchmark)
    assert board.rows == []


def test_edit_score_needs_a_reason_then_marks_the_run_and_is_audited(
    world: World, people: dict[str, Person], owner_run: str
) -> None:
    web = people["owner"].web
    refused = web.post(f"/runs/{owner_run}/score", {"accuracy": "80", "reason": "  "})
    assert refused.status_code == 422
    assert "say why the score is corrected" in refused.text
    assert 'value="80"' in refused.text  # what was typed is kept
    bad = web.post(f"/runs/{owner_run}/score", {"accuracy": "180", "reason": "why"})
    assert bad.status_code == 422 and "percentage from 0 to 100" in bad.text
    assert not world.do(Principal.web(people["owner"].id), launch.get_run, owner_run).score_edited
    reason = f"Key of question 3 was wrong {SCRIPT}"
    done = web.post(f"/runs/{owner_run}/score", {"accuracy": "80", "reason": reason})
    assert done.status_code == 303
    run = world.do(Principal.web(people["owner"].id), launch.get_run, owner_run)
    assert run.score_edited and run.scores["accuracy"] == pytest.approx(0.8)
    page = web.get(f"/runs/{owner_run}").text
    assert "edited by hand" in page and "80.0%" in page
    assert SCRIPT not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # Lists that show the score say it was corrected, as the leaderboard does.
    bm = run.benchmark_id
    for listing in ("/", f"/benchmarks/{bm}/runs"):
        cells = [td.get_text() for td in web.page(listing).find_all("td")]
        assert "80.0 % (corrected)" in cells, (listing, cells)
    events = world.do(OPERATOR, audit.list_events, owner_run)
    edits = [e for e in events if e.action == audit.AuditAction.RUN_EDIT_SCORE]
    assert len(edits) == 1 and edits[0].details["reason"] == reason


def test_only_the_owner_gets_the_score_form(
    world: World, runtime: Runtime, people: dict[str, Person], benchmark: str, owner_run: str
) -> None:
    assert "Edit the score" in people["owner"].web.get(f"/runs/{owner_run}").text
    world.do(Principal.web(people["owner"].id), lifecycle.publish_benchmark, benchmark)
    theirs = finish(world, runtime, people["stranger"].id, benchmark, RANDOM)
    web = people["stranger"].web
    assert "Edit the score" not in web.get(f"/runs/{theirs}").text
    refused = web.post(f"/runs/{theirs}/score", {"accuracy": "100", "reason": "mine"})
    assert refused.status_code == 403


def test_cancel_a_queued_run(world: World, people: dict[str, Person], benchmark: str) -> None:
    queued = world.do(Principal.web(people["owner"].id), launch.start_run, benchmark, RANDOM)
    web = people["owner"].web
    assert "Cancel the run" in web.get(f"/runs/{queued.id}").text
    assert web.post(f"/runs/{queued.id}/cancel").status_code == 303
    assert world.do(Principal.web(people["owner"].id), launch.get_run, queued.id).status == (
        "cancelled"
    )
    assert "Cancel the run" not in web.get(f"/runs/{queued.id}").text


def test_forms_without_the_csrf_token_are_refused(
    world: World, people: dict[str, Person], owner_run: str
) -> None:
    client = people["owner"].web.client
    for path, data in (
        ("leaderboard", {}),
        ("score", {"accuracy": "90", "reason": "forged"}),
        ("cancel", {}),
    ):
        assert client.post(f"/runs/{owner_run}/{path}", data=data).status_code == 403
    run = world.do(Principal.web(people["owner"].id), launch.get_run, owner_run)
    assert not run.score_edited


def test_downloads_for_the_owner(people: dict[str, Person], owner_run: str) -> None:
    web = people["owner"].web
    csv = web.get(f"/runs/{owner_run}/download/csv")
    assert csv.headers["content-type"].startswith("text/csv")
    assert "outcome" in csv.text.splitlines()[0]
    assert f'filename="{owner_run}.csv"' in csv.headers["content-disposition"]
    jsonl = web.get(f"/runs/{owner_run}/download/jsonl")
    assert [json.loads(line)["outcome"] for line in jsonl.text.splitlines()] == [
        "correct",
        "wrong",
        "no_answer",
        "wrong",
    ]
    assert web.get(f"/runs/{owner_run}/download/xml").status_code == 422


def test_hostile_model_name_answers_and_tags_are_escaped(
    world: World, runtime: Runtime, people: dict[str, Person], benchmark: str
) -> None:
    spec = {"name": SCRIPT + IMG, "kind": "builtin", "endpoint_model": "random"}
    model = world.do(OPERATOR, models.create_platform_model, spec).id
    run_id = finish(world, runtime, people["owner"].id, benchmark, model)
    html = people["owner"].web.get(f"/runs/{run_id}").text
    assert SCRIPT not in html and "<img src=x" not in html
    assert "ANSWER: &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
