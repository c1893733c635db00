"""List pages cost a fixed number of queries, whatever their size (no query per row)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import launch
from tests.support import MCQ, World, sql_sent

FREE = "mdl_builtin_random"


@pytest.fixture
def backend() -> str:
    return "sqlite"  # counts statements; the same queries run on PostgreSQL


def queries(world: World, who: Principal, call: Callable[..., Any], **kwargs: Any) -> int:
    with sql_sent(world.rt) as statements:
        found = world.do(who, call, **kwargs)
    assert found, "the page must not be empty"
    return len(statements)


def test_benchmark_and_run_lists_cost_the_same_for_1_and_50_rows(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100_000)
    bob = world.user("bob@example.com")
    web = Principal.web(ana)
    made = [world.benchmark(ana, {**MCQ, "title": f"B{n}"}) for n in range(50)]
    for bm in made[:10]:  # mixed roles across the page: some shared, some published
        world.collaborator(ana, bm, "bob@example.com")
        world.do(web, lifecycle.publish_benchmark, bm)
    for bm in made:
        world.do(web, launch.start_run, bm, FREE, None)
    for who in (web, Principal.web(bob)):
        one = queries(world, who, lifecycle.list_benchmarks, limit=1)
        fifty = queries(world, who, lifecycle.list_benchmarks, limit=50)
        assert one == fifty, (one, fifty)
    one = queries(world, web, launch.list_runs, limit=1)
    fifty = queries(world, web, launch.list_runs, limit=50)
    assert one == fifty, (one, fifty)


def test_a_batched_page_shows_the_same_as_one_by_one(world: World) -> None:
    ana = world.user("ana@example.com", credits_=10_000)
    bob = world.user("bob@example.com")
    web = Principal.web(ana)
    mine = world.benchmark(ana, MCQ)
    shared = world.benchmark(ana, {**MCQ, "title": "Shared"})
    world.collaborator(ana, shared, "bob@example.com")
    world.do(web, lifecycle.publish_benchmark, mine)
    world.do(web, launch.start_run, shared, FREE, None)
    for who in (web, Principal.web(bob)):
        page = world.do(who, lifecycle.list_benchmarks)
        singly = [world.do(who, lifecycle.get_benchmark, view.id) for view in page]
        assert page == singly
    runs_page = world.do(Principal.web(bob), launch.list_runs)
    assert runs_page
    assert runs_page == [world.do(Principal.web(bob), launch.get_run, r.id) for r in runs_page]


def test_questions_are_paged_by_the_database(world: World) -> None:
    ana = world.user("ana@example.com")
    many = [{"prompt": f"{n}+{n}?", "answer": str(2 * n)} for n in range(30)]
    bm = world.benchmark(ana, {"title": "Sums", "format": "qa", "questions": many})
    with sql_sent(world.rt) as statements:
        window = world.do(Principal.web(ana), lifecycle.list_questions, bm, limit=10, offset=20)
    assert [q["position"] for q in window] == list(range(20, 30))
    assert [q["prompt"] for q in window] == [f"{n}+{n}?" for n in range(20, 30)]
    assert any("LIMIT" in s.upper() and "questions" in s for s in statements)
    everything = world.do(Principal.web(ana), lifecycle.list_questions, bm)
    assert [q["position"] for q in everything] == list(range(30))


def test_one_decision_after_another_reads_the_user_and_token_once(world: World) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, MCQ)
    who = world.api(world.token(ana, ["read"]))
    with sql_sent(world.rt) as statements:
        world.do(who, lambda ctx: [lifecycle.get_benchmark(ctx, bm) for _ in range(3)])
    users_read = [s for s in statements if s.lstrip().startswith("SELECT users.")]
    tokens_read = [s for s in statements if s.lstrip().startswith("SELECT api_tokens.")]
    assert (len(users_read), len(tokens_read)) == (1, 1)
