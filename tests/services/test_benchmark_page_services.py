"""Services the benchmark pages need: list sections, gates for settings pages, invitations,
one-question edits, tasks by name, the quota setting, the sent record, keeping a judge's key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from sqlalchemy import select

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Conflict, Frozen, InvalidInput, NotFound, PermissionDenied
from benchgen.core.permissions import Action
from benchgen.db.tables import Benchmark
from benchgen.services.accounts import ratelimits
from benchgen.services.benchmarks import (
    _question_store,
    judges,
    lifecycle,
    members,
    outbox,
    phases,
    question_edits,
)
from benchgen.services.runtime import Runtime, transaction, undo_on_error
from tests.support import MCQ, OPERATOR, QA, World

T = TypeVar("T")


class People:
    """Ana owns two benchmarks (one published) and collaborates on one of Bob's."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.ana = world.user("ana@example.com", credits_=100)
        self.bob = world.user("bob@example.com")
        self.cy = world.user("cy@partner.org")
        self.mine = world.benchmark(self.ana, {**MCQ, "title": "Mine private"})
        self.mine_public = world.benchmark(self.ana, {**QA, "title": "Mine published"})
        world.do(Principal.web(self.ana), lifecycle.publish_benchmark, self.mine_public)
        self.bobs_public = world.benchmark(self.bob, {**QA, "title": "Bob published"})
        world.do(Principal.web(self.bob), lifecycle.publish_benchmark, self.bobs_public)
        self.shared = world.benchmark(self.bob, {**QA, "title": "Bob shared"})
        world.collaborator(self.bob, self.shared, "ana@example.com")
        self.bobs_private = world.benchmark(self.bob, {**QA, "title": "Bob private"})

    def as_ana(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self.world.do(Principal.web(self.ana), fn, *args, **kwargs)


@pytest.fixture
def people(world: World) -> People:
    return People(world)


@pytest.mark.parametrize(
    ("section", "titles"),
    [
        ("all", {"Mine private", "Mine published", "Bob published", "Bob shared"}),
        ("mine", {"Mine private", "Mine published"}),
        ("shared", {"Bob shared"}),
        ("published", {"Mine published", "Bob published"}),
    ],
)
def test_list_sections(people: People, section: str, titles: set[str]) -> None:
    found = people.world.do(Principal.web(people.ana), lifecycle.list_benchmarks, section=section)
    assert {b.title for b in found} == titles


def test_an_unknown_section_is_invalid(people: People) -> None:
    with pytest.raises(InvalidInput):
        people.world.do(Principal.web(people.ana), lifecycle.list_benchmarks, section="all-of-it")


def test_get_benchmark_for_an_action(people: People) -> None:
    view = people.as_ana(lifecycle.get_benchmark_for, people.mine, Action.ACCESS_MANAGE)
    assert view.title == "Mine private"
    with pytest.raises(PermissionDenied) as refused:
        people.as_ana(lifecycle.get_benchmark_for, people.shared, Action.ACCESS_MANAGE)
    # A person in the web app is not sent to the page that refuses them.
    assert "page" not in refused.value.details
    assert "only the owner can manage collaborators" in refused.value.message
    with pytest.raises(NotFound):
        people.as_ana(lifecycle.get_benchmark_for, people.bobs_private, Action.BENCHMARK_READ)


def test_an_invitation_shows_only_to_those_the_whitelist_admits(people: People) -> None:
    world, cy = people.world, Principal.web(people.cy)
    with pytest.raises(NotFound):
        world.do(cy, lifecycle.get_invitation, people.bobs_private)
    world.do(
        Principal.web(people.bob),
        members.add_whitelist_entries,
        people.bobs_private,
        ["@partner.org"],
    )
    invitation = world.do(cy, lifecycle.get_invitation, people.bobs_private)
    assert invitation.title == "Bob private"
    with pytest.raises(PermissionDenied):  # the owner has nothing to join
        world.do(Principal.web(people.bob), lifecycle.get_invitation, people.bobs_private)
    world.do(cy, members.join_benchmark, people.bobs_private, True)
    with pytest.raises(PermissionDenied):  # joined: nothing more to join
        world.do(cy, lifecycle.get_invitation, people.bobs_private)


def _questions(world: World, user: str, bm: str) -> list[dict[str, object]]:
    return world.do(Principal.web(user), lifecycle.list_questions, bm)


def test_replace_add_and_remove_one_question(people: People) -> None:
    world, ana, bm = people.world, people.ana, people.mine
    edited = {
        "prompt": "Colour of the sky?",
        "choices": ["Green", "Blue"],
        "answer": "B",
        "metadata": {"source": "atlas"},
    }
    world.do(Principal.web(ana), lifecycle.edit_benchmark, bm, {"questions": [edited]})
    new = {"prompt": "Colour of snow?", "choices": ["White", "Black"], "answer": "A"}
    view, warnings = people.as_ana(question_edits.replace_question, bm, 0, new, 2)
    assert view.version == 3 and warnings == []

    def metadata(ctx: Context) -> list[str]:
        return [q.metadata for q in _question_store.load_canonical(ctx, bm)]

    assert world.ctx_call(OPERATOR, metadata) == ['{"source": "atlas"}']  # kept
    people.as_ana(question_edits.add_question, bm, {**new, "prompt": "Colour of coal?"}, 3)
    assert [q["prompt"] for q in _questions(world, ana, bm)] == [
        "Colour of snow?",
        "Colour of coal?",
    ]
    people.as_ana(question_edits.remove_question, bm, 0, 4)
    assert [q["prompt"] for q in _questions(world, ana, bm)] == ["Colour of coal?"]


def test_question_edits_refuse_stale_pages_bad_places_and_bad_questions(
    people: People,
) -> None:
    world, ana, bm = people.world, people.ana, people.mine
    before = _questions(world, ana, bm)
    with pytest.raises(Conflict):
        people.as_ana(question_edits.remove_question, bm, 0, 7)  # the page showed version 7
    with pytest.raises(NotFound):
        people.as_ana(question_edits.remove_question, bm, 5, 1)
    bad = {"prompt": "", "choices": ["A"], "answer": "C"}
    with pytest.raises(InvalidInput) as refused:
        people.as_ana(question_edits.replace_question, bm, 1, bad, 1)
    places = {tuple(error["loc"][:3]) for error in refused.value.details["errors"]}
    assert ("questions", 1, "prompt") in places and ("questions", 1, "choices") in places
    assert _questions(world, ana, bm) == before


def test_question_edits_need_the_edit_right_and_respect_freezing(
    people: People, runtime: Runtime
) -> None:
    world, bob = people.world, Principal.web(people.bob)
    with pytest.raises(NotFound):
        world.do(bob, question_edits.remove_question, people.mine, 0)
    with pytest.raises(PermissionDenied):  # published: Bob may read, not edit
        world.do(bob, question_edits.remove_question, people.mine_public, 0)
    people.as_ana(lifecycle.freeze_questions, people.mine)
    with pytest.raises(Frozen):
        people.as_ana(question_edits.remove_question, people.mine, 0)


def test_tasks_by_name(people: People) -> None:
    tasks = people.as_ana(phases.list_tasks, people.mine)
    assert [task.name for task in tasks] == ["Questions"]
    with pytest.raises(NotFound):
        people.as_ana(phases.list_tasks, people.bobs_private)


def test_the_quota_setting_is_the_owners_to_read(people: People) -> None:
    setting = people.as_ana(ratelimits.get_run_quota_setting, people.mine)
    assert setting.runs_per_day is None and setting.in_force > 0
    people.as_ana(ratelimits.set_run_quota, people.mine, 7)
    assert people.as_ana(ratelimits.get_run_quota_setting, people.mine).runs_per_day == 7
    with pytest.raises(PermissionDenied):
        people.as_ana(ratelimits.get_run_quota_setting, people.shared)


def test_the_sent_record_is_per_benchmark_and_the_owners(people: People) -> None:
    world, cy = people.world, Principal.web(people.cy)
    world.do(cy, members.join_benchmark, people.mine_public, True)
    people.as_ana(outbox.send_participant_email, people.mine_public, "Hello", "Welcome.")
    sent = people.as_ana(outbox.list_sent, people.mine_public)
    assert [(m.to_email, m.subject, m.status) for m in sent] == [
        ("cy@partner.org", "Hello", "queued")
    ]
    assert people.as_ana(outbox.list_sent, people.mine) == []
    with pytest.raises(PermissionDenied):
        people.as_ana(outbox.list_sent, people.shared)


def test_a_judge_keeps_its_key_only_for_the_same_endpoint(people: People, runtime: Runtime) -> None:
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    bm = people.mine_public
    people.as_ana(judges.set_judge, bm, "anthropic", "claude-x", None, "sk-saved")
    kept = people.as_ana(judges.set_judge, bm, "anthropic", "claude-y", None, None, keep_key=True)
    assert kept.has_api_key and kept.endpoint_model == "claude-y"
    with pytest.raises(InvalidInput) as refused:
        people.as_ana(
            judges.set_judge, bm, "openai_compat", "m", "http://127.0.0.1:9/v1", None, keep_key=True
        )
    assert refused.value.details["errors"][0]["loc"] == ["api_key"]
    dropped = people.as_ana(judges.set_judge, bm, "anthropic", "claude-y", None, None)
    assert not dropped.has_api_key


def test_undo_on_error_rolls_back_only_the_failed_block(people: People, runtime: Runtime) -> None:
    with transaction(runtime, Principal.web(people.ana)) as ctx:
        lifecycle.create_benchmark(ctx, {**QA, "title": "Kept"})
        with pytest.raises(InvalidInput), undo_on_error(ctx):
            lifecycle.create_benchmark(ctx, {**QA, "title": "Undone"})
            raise InvalidInput("refused after writing")

    def titles(ctx: Context) -> set[str]:
        count = select(Benchmark.title).where(Benchmark.title.in_(["Kept", "Undone"]))
        return set(ctx.session.scalars(count))

    assert people.world.ctx_call(OPERATOR, titles) == {"Kept"}
