"""Judging again a completed run's answers whose AI judging failed: only the judge is asked (a
scripted endpoint that fails, then answers), the run is not charged again, its scores and its
leaderboard row follow the new verdicts, a hand-corrected score stays, and every refusal."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import select

from benchgen.core.context import Context, Principal
from benchgen.core.errors import Conflict, NotFound, PermissionDenied
from benchgen.core.permissions import PrincipalKind, Scope
from benchgen.db.tables import AuditEvent, Judge, Run
from benchgen.jobs.handlers import WORKER
from benchgen.services.benchmarks import judges, lifecycle, members
from benchgen.services.runs import launch, leaderboards, rejudging, rescoring, results, run_log
from benchgen.services.runtime import Runtime, transaction
from tests.evals.stub_openai import Fault, StubOpenAI
from tests.services.test_judge import CAPITALS
from tests.services.test_runs import ledger_sum, priced_model, work_all
from tests.support import OPERATOR, World, stub_reply


@dataclass
class Script:
    """The evaluated model and the judge behind one stub: the judge is down (429 on every
    attempt) or reads one answer's verdict wrongly until `up`, then grades correctly."""

    up: bool = False

    def __call__(self, _: int, prompt: str) -> Fault:
        if "VERDICT" in prompt:  # the grading prompt
            answer = prompt.split("<answer>")[-1]
            if not self.up:
                return Fault.rate_limited("0") if "Roma" in answer else stub_reply("Hmm.")
            right = "Roma" in answer or "Madrid" in answer
            return stub_reply(f"Reasoning.\nVERDICT: {'CORRECT' if right else 'INCORRECT'}")
        replies = {"Italy": "ANSWER: Roma", "Spain": "ANSWER: Madrid", "Peru": "I don't know"}
        return stub_reply(next(text for country, text in replies.items() if country in prompt))


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def stub(runtime: Runtime, script: Script) -> Iterator[StubOpenAI]:
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    with StubOpenAI(fail=script) as server:
        yield server


@dataclass(frozen=True)
class Judged:
    """A completed run whose judging failed for all three answers, on ana's judged benchmark."""

    ana: str
    benchmark: str
    run: str
    model: str


def judged_run(world: World, runtime: Runtime, stub: StubOpenAI, launcher: str = "") -> Judged:
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, CAPITALS)
    web = Principal.web(ana)
    world.do(web, judges.set_judge, bm, "openai_compat", "judge-1", stub.base_url, "sk-judge")
    model = priced_model(world, stub, per_question=2)
    run = world.do(Principal.web(launcher or ana), launch.start_run, bm, model).id
    work_all(runtime)
    return Judged(ana, bm, run, model)


def _outcomes(world: World, principal: Principal, run_id: str) -> list[str]:
    return [row["outcome"] for row in world.do(principal, results.list_results, run_id)]


def _model_calls(stub: StubOpenAI) -> int:
    return sum(1 for prompt in stub.received if "VERDICT" not in prompt)


@pytest.mark.both_backends
def test_failed_judging_is_judged_again_without_asking_the_model_or_charging(
    world: World, runtime: Runtime, stub: StubOpenAI, script: Script
) -> None:
    made = judged_run(world, runtime, stub)
    web = Principal.web(made.ana)
    first = world.do(web, launch.get_run, made.run)
    assert first.status == "completed"
    # A 429 on every attempt for one answer, an unreadable verdict for the others.
    assert _outcomes(world, web, made.run) == ["error", "error", "error"]
    assert first.summary["accuracy"] == 0
    asked, balance = _model_calls(stub), ledger_sum(world, made.ana)

    script.up = True
    handed = world.do(web, rejudging.rejudge_run, made.run)
    assert (handed.run_id, handed.answers) == (made.run, 3)
    assert _outcomes(world, web, made.run) == ["pending"] * 3
    work_all(runtime)

    rows = world.do(web, results.list_results, made.run)
    assert [row["outcome"] for row in rows] == ["correct", "correct", "wrong"]
    assert rows[0]["extracted"] == "Roma" and "VERDICT: CORRECT" in rows[0]["reasoning"]
    again = world.do(web, launch.get_run, made.run)
    assert again.summary["accuracy"] == pytest.approx(2 / 3)
    assert again.scores["accuracy"] == pytest.approx(2 / 3)
    assert again.status == "completed" and again.cost == first.cost
    # The model was not asked again and nothing more was charged; the judge's tokens add up.
    assert _model_calls(stub) == asked and ledger_sum(world, made.ana) == balance
    assert again.judge_input_tokens > first.judge_input_tokens
    assert (again.input_tokens, again.output_tokens) == (first.input_tokens, first.output_tokens)
    lines = [line.line for line in world.do(web, run_log.read_log, made.run)]
    assert "Judging again: 3 answers whose judging failed" in lines
    assert lines[-1] == "Judged again: 0 answers still without a verdict"

    def audited(ctx: Context) -> list[str]:
        events = ctx.session.scalars(select(AuditEvent).where(AuditEvent.object_id == made.run))
        return [event.action for event in events]

    assert "run.rejudge" in world.ctx_call(OPERATOR, audited)
    with pytest.raises(Conflict, match="nothing to judge again"):
        world.do(web, rejudging.rejudge_run, made.run)


def test_the_leaderboard_follows_and_a_hand_corrected_score_stays(
    world: World, runtime: Runtime, stub: StubOpenAI, script: Script
) -> None:
    made = judged_run(world, runtime, stub)
    web = Principal.web(made.ana)
    corrected = world.do(web, launch.start_run, made.benchmark, made.model).id
    work_all(runtime)
    for run_id in (made.run, corrected):
        world.do(web, leaderboards.add_to_leaderboard, run_id)
    world.do(web, leaderboards.edit_run_score, corrected, {"accuracy": 0.5}, "graded by hand")
    script.up = True
    for run_id in (made.run, corrected):
        world.do(web, rejudging.rejudge_run, run_id)
    work_all(runtime)
    board = world.do(web, leaderboards.get_leaderboard, made.benchmark)
    shown = {row.run_id: row.scores["accuracy"] for row in board.rows}
    assert shown[made.run] == pytest.approx(2 / 3)
    assert shown[corrected] == 0.5  # the owner's correction stays in force
    kept = world.do(web, launch.get_run, corrected)
    assert kept.summary["accuracy"] == pytest.approx(2 / 3) and kept.score_edited


def test_refusals_say_why_and_change_nothing(
    world: World, runtime: Runtime, stub: StubOpenAI, script: Script
) -> None:
    made = judged_run(world, runtime, stub)
    web = Principal.web(made.ana)
    queued = world.do(web, launch.start_run, made.benchmark, made.model).id
    with pytest.raises(Conflict, match="Only a completed run") as refused:
        world.do(web, rejudging.rejudge_run, queued)
    assert refused.value.details == {"id": queued}
    plain = world.benchmark(made.ana)  # exact match: no judge involved
    exact = world.do(web, launch.start_run, plain, "mdl_builtin_echo").id
    work_all(runtime)
    with pytest.raises(Conflict, match="not scored by the AI judge"):
        world.do(web, rejudging.rejudge_run, exact)

    world.do(web, rejudging.rejudge_run, made.run)
    with pytest.raises(Conflict, match="being judged again already"):
        world.do(web, rejudging.rejudge_run, made.run)
    work_all(runtime)  # the judge is still down: they fail again, and can be tried again
    assert _outcomes(world, web, made.run) == ["error", "error", "error"]
    assert world.do(web, rejudging.rejudgeable, made.run) == 3

    def remove_judge(ctx: Context) -> None:
        ctx.session.delete(ctx.session.get(Judge, made.benchmark))

    world.ctx_call(OPERATOR, remove_judge)
    with pytest.raises(Conflict, match="no AI judge") as refused:
        world.do(web, rejudging.rejudge_run, made.run)
    assert refused.value.details["page"] == f"/benchmarks/{made.benchmark}/settings/judge"
    assert world.do(web, rejudging.rejudgeable, made.run) == 0
    assert _outcomes(world, web, made.run) == ["error", "error", "error"]


def test_who_may_have_a_run_judged_again(world: World, runtime: Runtime, stub: StubOpenAI) -> None:
    ana, pia = world.user("ana@example.com"), world.user("pia@example.com")
    cole, sam = world.user("cole@example.com"), world.user("sam@example.com")
    bm = world.benchmark(ana, CAPITALS)
    owner = Principal.web(ana)
    args = ("openai_compat", "judge-1", stub.base_url, None)
    world.do(owner, judges.set_judge, bm, *args, True)  # open to participants
    world.do(owner, lifecycle.publish_benchmark, bm)
    world.collaborator(ana, bm, "cole@example.com")
    world.do(Principal.web(pia), members.join_benchmark, bm, True)
    model = priced_model(world, stub, per_question=0)
    mine = world.do(owner, launch.start_run, bm, model).id
    theirs = world.do(Principal.web(pia), launch.start_run, bm, model).id
    work_all(runtime)

    with pytest.raises(NotFound):  # someone else's run is invisible
        world.do(Principal.web(sam), rejudging.rejudge_run, mine)
    reader = world.principal(PrincipalKind.API, ana, frozenset({Scope.READ}))
    with pytest.raises(PermissionDenied):
        world.do(reader, rejudging.rejudge_run, mine)
    assert world.do(reader, rejudging.rejudgeable, mine) == 0
    # The launcher while the owner keeps the judge open; then the owner closes it.
    assert world.do(Principal.web(pia), rejudging.rejudgeable, theirs) == 3
    world.do(owner, judges.set_judge, bm, *args, False)
    with pytest.raises(PermissionDenied, match="not open"):
        world.do(Principal.web(pia), rejudging.rejudge_run, theirs)
    # The team may, through a token too.
    cole_token = world.principal(PrincipalKind.API, cole, frozenset({Scope.READ, Scope.RUNS}))
    assert world.do(cole_token, rejudging.rejudge_run, theirs).answers == 3
    assert world.do(Principal.web(cole), rejudging.rejudge_run, mine).answers == 3


def test_a_launcher_removed_from_the_benchmark_may_no_longer(
    world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    ana, pia = world.user("ana@example.com"), world.user("pia@example.com")
    bm = world.benchmark(ana, CAPITALS)
    owner = Principal.web(ana)
    world.do(owner, judges.set_judge, bm, "openai_compat", "judge-1", stub.base_url, None, True)
    world.do(owner, members.add_whitelist_entries, bm, ["pia@example.com"])
    world.do(Principal.web(pia), members.join_benchmark, bm, True)
    run = world.do(Principal.web(pia), launch.start_run, bm, priced_model(world, stub, 0)).id
    work_all(runtime)
    world.do(owner, members.set_participant_status, bm, pia, "removed")
    with pytest.raises(PermissionDenied, match="no longer run models"):
        world.do(Principal.web(pia), rejudging.rejudge_run, run)


def test_a_rejudging_given_up_on_leaves_the_answers_failed(
    world: World, runtime: Runtime, stub: StubOpenAI, script: Script
) -> None:
    made = judged_run(world, runtime, stub)
    web = Principal.web(made.ana)
    world.do(web, rejudging.rejudge_run, made.run)
    world.do(WORKER, rejudging.abandon_rejudging, made.run, "the worker kept dying")
    rows = world.do(web, results.list_results, made.run)
    assert [row["outcome"] for row in rows] == ["error", "error", "error"]
    assert rows[0]["reasoning"] == "the judge failed: the worker kept dying"
    assert rows[0]["extracted"] == "Roma"
    assert world.do(web, rejudging.judging_state, made.run) == rejudging.JudgingState(0, 3)
    assert world.do(web, launch.get_run, made.run).summary["errors"] == 3


def test_someone_outside_the_team_has_a_runs_judging_done_again_a_few_times_only(
    world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    ana, pia = world.user("ana@example.com"), world.user("pia@example.com")
    bm = world.benchmark(ana, CAPITALS)
    owner = Principal.web(ana)
    world.do(owner, judges.set_judge, bm, "openai_compat", "judge-1", stub.base_url, None, True)
    world.do(owner, lifecycle.publish_benchmark, bm)
    world.do(Principal.web(pia), members.join_benchmark, bm, True)
    model = priced_model(world, stub, per_question=0)
    theirs = world.do(Principal.web(pia), launch.start_run, bm, model).id
    mine = world.do(owner, launch.start_run, bm, model).id
    work_all(runtime)
    # Replies that upset the judge every time: each judging again costs the owner's key.
    for _ in range(rejudging.OUTSIDER_REJUDGINGS):
        assert world.do(Principal.web(pia), rejudging.rejudge_run, theirs).answers == 3
        work_all(runtime)
    judged = sum(1 for prompt in stub.received if "VERDICT" in prompt)
    with pytest.raises(Conflict, match="3 times already"):
        world.do(Principal.web(pia), rejudging.rejudge_run, theirs)
    assert world.do(Principal.web(pia), rejudging.rejudgeable, theirs) == 0
    assert sum(1 for prompt in stub.received if "VERDICT" in prompt) == judged
    # The team pays for its own judge: no such limit.
    for _ in range(rejudging.OUTSIDER_REJUDGINGS + 1):
        assert world.do(owner, rejudging.rejudge_run, mine).answers == 3
        work_all(runtime)


@pytest.mark.both_backends
def test_no_rescoring_while_answers_are_judged_again(
    world: World, runtime: Runtime, stub: StubOpenAI, script: Script
) -> None:
    made = judged_run(world, runtime, stub)
    web = Principal.web(made.ana)
    script.up = True
    world.do(web, rejudging.rejudge_run, made.run)
    before = world.do(web, launch.get_run, made.run)
    for settings, apply in (
        (None, False),
        ({"method": "includes"}, False),
        ({"method": "f1"}, True),
    ):
        with pytest.raises(Conflict, match="being judged again by the AI judge") as refused:
            world.do(web, rescoring.rescore_run, made.run, settings, apply)
        assert refused.value.http_status == 409 and refused.value.details == {"id": made.run}
    assert not world.do(web, rescoring.can_rescore, made.run, {"method": "includes"})
    unchanged = world.do(web, launch.get_run, made.run)
    assert (unchanged.scoring, unchanged.summary) == (before.scoring, before.summary)
    assert _outcomes(world, web, made.run) == ["pending"] * 3
    # A hand correction meanwhile stays in force once the judge has answered.
    world.do(web, leaderboards.edit_run_score, made.run, {"accuracy": 0.25}, "graded by hand")
    work_all(runtime)

    judged = world.do(web, launch.get_run, made.run)
    assert judged.scoring == before.scoring and judged.scoring["method"] == "judge"
    assert _outcomes(world, web, made.run) == ["correct", "correct", "wrong"]
    assert judged.summary["accuracy"] == pytest.approx(2 / 3)
    assert judged.scores["accuracy"] == 0.25 and judged.score_edited
    # Once judged, rescoring with other settings is open again.
    assert world.do(web, rescoring.rescore_run, made.run, {"method": "includes"}, True).applied


@pytest.mark.parametrize("backend", ["postgres"])  # SQLite runs one write at a time
def test_a_correction_committed_while_judging_ends_stays(
    world: World, runtime: Runtime, stub: StubOpenAI, script: Script
) -> None:
    """A re-judging that had read the run before new verdicts and the owner's correction
    committed computed its scores again from that stale row: over the correction, still
    marked as made."""
    made = judged_run(world, runtime, stub)
    web = Principal.web(made.ana)
    world.do(web, rejudging.rejudge_run, made.run)
    with transaction(runtime, WORKER) as ctx:
        read_first = ctx.session.get(Run, made.run)  # held, as a job holds what it read
        script.up = True
        work_all(runtime)  # new verdicts: 2/3 right
        world.do(web, leaderboards.edit_run_score, made.run, {"accuracy": 0.5}, "by hand")
        rejudging.finish_rejudging(ctx, made.run)
    kept = world.do(web, launch.get_run, made.run)
    assert read_first is not None and kept.scores["accuracy"] == 0.5 and kept.score_edited
