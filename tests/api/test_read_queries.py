"""What one API read costs the database, pinned: authentication, the access check and the answer
share one transaction, and no row is read twice (bench/api_load.py measures the time)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from benchgen.app import create_app
from benchgen.core.context import Principal
from benchgen.jobs.worker import Worker
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.support import World, sql_sent

ECHO = "mdl_builtin_echo"  # answers a qa question with its prompt
QUESTIONS = [{"prompt": f"{n} + {n}?", "answer": str(2 * n)} for n in range(30)]


@pytest.fixture
def backend() -> str:
    return "sqlite"  # counts statements; the same queries run on PostgreSQL


@pytest.fixture
def setup(runtime: Runtime, world: World) -> Iterator[tuple[TestClient, dict[str, str], str, str]]:
    """A client, a token's header, a benchmark of 30 questions and a finished run on it."""
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, {"title": "Sums", "format": "qa", "questions": QUESTIONS})
    run = world.do(Principal.web(ana), launch.start_run, bm, ECHO, None)
    worker = Worker(runtime)
    while worker.run_once():
        pass
    auth = {"Authorization": f"Bearer {world.token(ana, ['read'])}"}
    with TestClient(create_app(runtime.settings, runtime)) as client:
        # The first request stamps the token's last use; the clock stands still, so no later
        # one does.
        assert client.get(f"/api/v1/benchmarks/{bm}", headers=auth).is_success
        yield client, auth, bm, run.id


def test_reading_one_benchmark_costs_five_statements(
    runtime: Runtime, setup: tuple[TestClient, dict[str, str], str, str]
) -> None:
    client, auth, bm, _ = setup
    with sql_sent(runtime) as statements:
        response = client.get(f"/api/v1/benchmarks/{bm}", headers=auth)
    assert response.is_success, response.text
    assert response.json()["question_count"] == len(QUESTIONS)
    # BEGIN; the token with its user; the benchmark; the user's memberships on it (asked once
    # for the check and the view); the question count.
    assert len(statements) == 5, statements
    assert [s.split()[0] for s in statements] == ["BEGIN", *["SELECT"] * 4], statements


@pytest.mark.parametrize("limit", [1, 30])
def test_a_results_page_costs_seven_statements_whatever_its_size(
    runtime: Runtime, setup: tuple[TestClient, dict[str, str], str, str], limit: int
) -> None:
    client, auth, _, run = setup
    with sql_sent(runtime) as statements:
        response = client.get(f"/api/v1/runs/{run}/results?limit={limit}", headers=auth)
    assert response.is_success, response.text
    items = response.json()["items"]
    assert [item["prompt"] for item in items] == [q["prompt"] for q in QUESTIONS[:limit]]
    # BEGIN; the token with its user; the run; its benchmark; the memberships; the page of
    # results; the questions of that page only.
    assert len(statements) == 7, statements
    questions = [s for s in statements if "FROM questions" in s]
    # Read by position: the benchmark's id, then those of the page and the one row more that
    # tells whether another page follows; never the whole list.
    assert len(questions) == 1 and questions[0].count("?") <= limit + 2, questions


def test_a_later_page_shows_its_own_questions(
    setup: tuple[TestClient, dict[str, str], str, str],
) -> None:
    client, auth, _, run = setup
    first = client.get(f"/api/v1/runs/{run}/results?limit=25", headers=auth).json()
    params = {"limit": 5, "cursor": first["next_cursor"]}
    response = client.get(f"/api/v1/runs/{run}/results", params=params, headers=auth)
    assert response.is_success, response.text
    items = response.json()["items"]
    assert [item["position"] for item in items] == list(range(25, 30))
    assert [item["prompt"] for item in items] == [q["prompt"] for q in QUESTIONS[25:]]
    assert [item["expected"] for item in items] == [[q["answer"]] for q in QUESTIONS[25:]]
