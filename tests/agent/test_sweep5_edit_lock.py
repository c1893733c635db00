"""An approved agent edit checks what its preview showed under the benchmark's lock."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import pytest

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Frozen
from benchgen.core.permissions import Action
from benchgen.db.tables import Run
from benchgen.services import access
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat import _proposal_kinds
from benchgen.services.runtime import transaction
from tests.support import OPERATOR, QA, World


@pytest.fixture
def backend() -> str:
    """PostgreSQL: there another edit commits while the agent's unit of work is open (SQLite's
    writer holds the whole database from its first statement)."""
    return "postgres"


def _once_after_the_first_check(
    monkeypatch: pytest.MonkeyPatch, meanwhile: Callable[[], None]
) -> threading.Thread:
    """Run `meanwhile` on its own thread right after the edit's first look at the benchmark,
    waiting a moment for it: it commits then unless the edit already holds the row."""
    thread = threading.Thread(target=meanwhile)
    original = access.require_benchmark

    def looked(ctx: Context, benchmark_id: str, action: Action) -> Any:
        row = original(ctx, benchmark_id, action)
        if not thread.is_alive() and thread.ident is None:
            thread.start()
            thread.join(2)
        return row

    monkeypatch.setattr(access, "require_benchmark", looked)
    return thread


def test_an_edit_committed_after_the_check_is_not_overwritten(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version and "before" values were checked before `edit_benchmark` took the row lock:
    a title another editor committed in between was overwritten by the agent's edit, unseen."""
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    owner = Principal.web(ana)
    with transaction(world.rt, owner) as ctx:
        change = {"benchmark_id": bm, "change": {"title": "Agent's title"}}
        prepared = _proposal_kinds.prepare(ctx, "edit_benchmark", change, False)

    def other_editor() -> None:
        world.do(owner, lifecycle.edit_benchmark, bm, {"title": "Bo's title"})

    thread = _once_after_the_first_check(monkeypatch, other_editor)
    with transaction(world.rt, owner) as ctx:
        _proposal_kinds.perform(ctx, "edit_benchmark", prepared.arguments)
    thread.join(30)
    assert thread.ident is not None and not thread.is_alive()  # the other edit did happen
    assert world.do(owner, lifecycle.get_benchmark, bm).title == "Bo's title"


def test_an_approved_run_starts_on_the_questions_its_preview_showed(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version was checked before `start_run` held the benchmark: questions replaced in
    between were the ones the approved run answered, a version no preview had shown."""
    ana = world.user("ana@example.com", credits_=1_000)
    bm = world.benchmark(ana, QA)
    owner = Principal.web(ana)
    with transaction(world.rt, owner) as ctx:
        asked = {"benchmark_id": bm, "model_id": "mdl_builtin_random"}
        prepared = _proposal_kinds.prepare(ctx, "start_run", asked, False)
    replaced = [{"prompt": "Capital of Peru?", "answer": "Lima"}]

    def other_editor() -> None:
        # Held off by the run's lock, the edit comes after it: the questions are frozen then.
        with contextlib.suppress(Frozen):
            world.do(owner, lifecycle.edit_benchmark, bm, {"questions": replaced})

    thread = _once_after_the_first_check(monkeypatch, other_editor)
    with transaction(world.rt, owner) as ctx:
        started = _proposal_kinds.perform(ctx, "start_run", prepared.arguments)
    thread.join(30)
    assert thread.ident is not None and not thread.is_alive()  # the other edit did happen
    run_id = started["run_id"]
    version = world.do(OPERATOR, lambda ctx: ctx.session.get_one(Run, run_id).benchmark_version)
    assert version == prepared.arguments["version"]
