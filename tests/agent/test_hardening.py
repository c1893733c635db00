"""What a hostile model tried and must no longer get: unseen approvals, runaway turns, raw
errors, and a `continue` that starts over."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from benchgen.agent import replies, turn
from benchgen.agent.messages import MessageIn
from benchgen.agent.state import MAX_LOGGED_ARGS, MAX_TOOL_CALLS, TurnOver, TurnState
from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, Unauthenticated
from benchgen.core.permissions import PrincipalKind
from benchgen.db.tables import Proposal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat import conversations, proposals
from tests.agent.scripted import Script, new_conversation, say, think_with
from tests.core.test_secrets import ENCODINGS
from tests.support import OPERATOR, QA, World

OPEN = ("draft", "pending")


def _visibility(world: World, ana: str, bm: str) -> str:
    return world.do(Principal.web(ana), lifecycle.get_benchmark, bm).visibility


def _open(world: World) -> list[str]:
    query = select(Proposal.id).where(Proposal.status.in_(OPEN))
    return list(world.ctx_call(OPERATOR, lambda ctx: ctx.session.scalars(query).all()))


def _prompts(messages: list[ModelMessage]) -> str:
    return repr(messages)


# --- 1(a): a proposal the user never saw is never approvable ---------------------------------


def test_propose_beside_a_tool_with_absurd_arguments_still_shows_the_preview(
    world: World, ana: str, api: Principal
) -> None:
    bm = world.benchmark(ana)
    step = [("propose_publish", {"benchmark_id": bm}), ("run_results", {"run_id": "run_x"})]
    step[1][1]["offset"] = 10**20  # was an OverflowError that failed the turn
    script = Script([step])
    shown = say(world.rt, api, new_conversation(world.rt, api), script.brain(), "publish it")
    assert shown.status == "awaiting_approval" and shown.proposal is not None
    assert shown.proposal.status == "pending"
    assert "OverflowError" not in shown.reply


@pytest.mark.both_backends
def test_a_turn_that_fails_cancels_its_proposal_and_ok_approves_nothing(
    world: World, ana: str, api: Principal, monkeypatch: pytest.MonkeyPatch
) -> None:
    bm = world.benchmark(ana)
    conv = new_conversation(world.rt, api)

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("rendering failed after the proposal was stored")

    monkeypatch.setattr(replies, "proposal_reply", broken)
    script = Script([[("propose_publish", {"benchmark_id": bm})]])
    failed = say(world.rt, api, conv, script.brain(), "publish")
    monkeypatch.undo()
    assert failed.status == "failed" and failed.proposal is None
    assert _open(world) == []
    after = say(world.rt, api, conv, Script(["nothing to do"]).brain(), "ok")
    assert after.status == "completed"
    assert _visibility(world, ana, bm) == "private"


def test_a_withheld_proposal_reply_cancels_its_proposal_and_yes_approves_nothing(
    world: World, ana: str, api: Principal
) -> None:
    """The preview went out with the withheld reply, so nobody saw what approving would do
    (A7, A14): the proposal is cancelled with it, whichever door shows the turn."""
    conv = new_conversation(world.rt, api)
    phish = [{"prompt": "Please send me your password to continue.", "answer": "phishing"}]
    spec = {"title": "Quiz", "format": "qa", "questions": phish}
    script = Script([[("propose_create_benchmark", spec)]])
    shown = say(world.rt, api, conv, script.brain(), "make a quiz")
    assert "withheld" in shown.reply and "nothing of it will happen" in shown.reply
    assert (shown.status, shown.buttons, shown.proposal) == ("completed", [], None)
    assert _open(world) == []
    say(world.rt, api, conv, Script(["fine"]).brain(), "yes")
    titles = [b.title for b in world.do(Principal.web(ana), lifecycle.list_benchmarks)]
    assert "Quiz" not in titles


@pytest.mark.both_backends
@pytest.mark.parametrize("said", ["half a pair \ud83d here", "a NUL \x00 here"])
def test_a_reply_no_database_stores_is_kept_readable_and_frees_the_conversation(
    world: World, api: Principal, said: str
) -> None:
    conv = new_conversation(world.rt, api)
    done = say(world.rt, api, conv, Script([said]).brain(), "hello")
    kept = said.replace("\ud83d", "\ufffd").replace("\x00", "\ufffd")
    assert (done.status, done.reply) == ("completed", kept)
    assert say(world.rt, api, conv, Script(["again"]).brain(), "hi").reply == "again"


def test_a_turn_that_cannot_be_recorded_is_recorded_failed_at_once(
    world: World, ana: str, api: Principal, monkeypatch: pytest.MonkeyPatch
) -> None:
    bm = world.benchmark(ana)
    conv = new_conversation(world.rt, api)
    record = conversations.finish_turn
    outcomes: list[str] = []

    def fails_once(ctx: Any, turn_id: str, outcome: conversations.TurnOutcome) -> Any:
        outcomes.append(outcome.status)
        if len(outcomes) == 1:
            raise RuntimeError("the database refused the reply")
        return record(ctx, turn_id, outcome)

    monkeypatch.setattr(conversations, "finish_turn", fails_once)
    script = Script([[("propose_publish", {"benchmark_id": bm})]])
    failed = say(world.rt, api, conv, script.brain(), "publish it")
    monkeypatch.undo()
    assert outcomes == ["awaiting_approval", "failed"]
    assert (failed.status, failed.proposal) == ("failed", None)
    assert _open(world) == []
    assert say(world.rt, api, conv, Script(["free"]).brain(), "yes").reply == "free"
    assert _visibility(world, ana, bm) == "private"


def test_a_brain_flooding_tool_calls_is_stopped_before_it_proposes(
    world: World, ana: str, api: Principal
) -> None:
    """6,000 calls in a turn all ran and were kept; now the turn ends at MAX_TOOL_CALLS."""
    bm = world.benchmark(ana)
    flood = [("show_benchmark", {"benchmark_id": f"bm_{n:020d}"}) for n in range(MAX_TOOL_CALLS)]
    script = Script([flood, [("propose_publish", {"benchmark_id": bm})]])
    conv = new_conversation(world.rt, api)
    done = say(world.rt, api, conv, script.brain(), "publish it, slowly")
    assert done.status == "failed" and "far more steps than any request needs" in done.reply
    assert len(done.tool_calls) == MAX_TOOL_CALLS and done.proposal is None
    assert _open(world) == []


@pytest.mark.both_backends
def test_a_turn_stopped_at_the_cap_cancels_its_proposal(
    world: World, ana: str, api: Principal, clock: ManualClock
) -> None:
    bm = world.benchmark(ana)
    cap = world.rt.settings.agent_turn_cap_s

    def propose_then_stall(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("list_models", {})])
        clock.advance(seconds=cap + 1)
        return ModelResponse(parts=[ToolCallPart("propose_publish", {"benchmark_id": bm})])

    conv = new_conversation(world.rt, api)
    capped = say(world.rt, api, conv, think_with(propose_then_stall), "publish")
    assert capped.status == "stopped_at_cap"
    assert _open(world) == []
    say(world.rt, api, conv, Script(["fine"]).brain(), "yes")
    assert _visibility(world, ana, bm) == "private"


@pytest.mark.both_backends
def test_a_draft_cannot_be_decided(world: World, ana: str) -> None:
    bm = world.benchmark(ana)
    draft = world.do(
        _agent(world, ana), proposals.propose, "conv_x", "publish_benchmark", {"benchmark_id": bm}
    )
    web = Principal.web(ana)
    with pytest.raises(Conflict, match="never shown"):
        world.do(web, proposals.decide, "conv_x", draft.id, draft.preview_hash, True)
    assert world.do(web, proposals.pending_for, "conv_x") is None


# --- 1(b): parallel proposes leave one, and "yes" approves the one shown ---------------------


@pytest.mark.both_backends
def test_parallel_proposes_in_one_step_leave_exactly_the_shown_one(
    world: World, ana: str, api: Principal
) -> None:
    targets = [world.benchmark(ana, {**QA, "title": f"B{n}"}) for n in range(4)]
    step = [("propose_publish", {"benchmark_id": bm}) for bm in targets]
    script = Script([step])
    conv = new_conversation(world.rt, api)
    shown = say(world.rt, api, conv, script.brain(), "publish them")
    assert shown.status == "awaiting_approval" and shown.proposal is not None
    assert _open(world) == [shown.proposal.id]
    refusals = [c for c in shown.tool_calls if c.get("error") == "waiting_for_user"]
    assert len(refusals) == 3
    chosen = shown.proposal.arguments["benchmark_id"]
    done = say(world.rt, api, conv, Script().brain(), "yes")
    assert done.status == "completed" and chosen in done.reply
    for text in ("ok", "yes", "go ahead"):
        say(world.rt, api, conv, Script(["nothing pending"]).brain(), text)
    published = [bm for bm in targets if _visibility(world, ana, bm) == "published"]
    assert published == [chosen]


@pytest.mark.both_backends
def test_the_database_refuses_a_second_open_proposal(world: World, ana: str) -> None:
    bm = world.benchmark(ana)
    args = {"benchmark_id": bm}
    first = world.do(_agent(world, ana), proposals.propose, "conv_db", "publish_benchmark", args)

    def second_open(ctx: Any) -> None:
        row = ctx.session.get(Proposal, first.id)
        clone = Proposal(
            **{c.name: getattr(row, c.name) for c in Proposal.__table__.columns if c.name != "id"},
            id="prop_clone",
        )
        ctx.session.add(clone)
        ctx.session.flush()

    with pytest.raises(IntegrityError):
        world.ctx_call(OPERATOR, second_open)


@pytest.mark.both_backends
def test_concurrent_proposes_in_one_conversation_leave_one_open(world: World, ana: str) -> None:
    targets = [world.benchmark(ana, {**QA, "title": f"C{n}"}) for n in range(6)]
    agents = [_agent(world, ana) for _ in targets]
    gate = threading.Barrier(len(targets))
    outcomes: list[str] = []

    def propose(agent: Principal, bm: str) -> None:
        gate.wait()
        try:
            world.do(
                agent, proposals.propose, "conv_race", "publish_benchmark", {"benchmark_id": bm}
            )
            outcomes.append("made")
        except Conflict:
            outcomes.append("refused")

    threads = [
        threading.Thread(target=propose, args=pair) for pair in zip(agents, targets, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert "made" in outcomes
    counted = select(func.count()).where(Proposal.status.in_(OPEN))
    assert world.ctx_call(OPERATOR, lambda ctx: ctx.session.scalar(counted)) == 1


def _agent(world: World, user: str) -> Principal:
    return world.principal(PrincipalKind.AGENT, user)


# --- 8: the cap holds while the brain thinks ------------------------------------------------


@pytest.mark.both_backends
def test_the_cap_ends_a_turn_whose_brain_ignores_cancellation(
    world: World, ana: str, api: Principal, clock: ManualClock
) -> None:
    bm = world.benchmark(ana)
    cap = world.rt.settings.agent_turn_cap_s
    release = threading.Event()
    finished = threading.Event()

    async def stuck(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        clock.advance(seconds=cap + 1)
        release.wait(30)  # blocks the brain's event loop: cancellation cannot reach it
        finished.set()
        return ModelResponse(parts=[ToolCallPart("propose_publish", {"benchmark_id": bm})])

    conv = new_conversation(world.rt, api)
    began = time.monotonic()
    capped = say(world.rt, api, conv, think_with(stuck), "publish slowly")
    assert time.monotonic() - began < 10
    assert capped.status == "stopped_at_cap" and "`continue`" in capped.reply
    free = say(world.rt, api, conv, Script(["still here"]).brain(), "hello")  # lock released
    assert free.status == "completed"
    release.set()
    assert finished.wait(10)
    time.sleep(0.3)  # the abandoned brain's tool call meets a capped turn
    assert _open(world) == []
    assert _visibility(world, ana, bm) == "private"


# --- 9: bounded replies, results and arguments ---------------------------------------------


def test_a_huge_reply_is_cut_before_it_is_stored(world: World, api: Principal) -> None:
    huge = "x" * 30_000_000
    said = say(world.rt, api, new_conversation(world.rt, api), Script([huge]).brain(), "talk")
    assert said.status == "completed"
    assert len(said.reply) < turn.MAX_REPLY_CHARS + 200 and said.reply.endswith("too long.]")


def test_bad_tool_arguments_are_readable_errors_never_exceptions(
    world: World, api: Principal
) -> None:
    seen: list[str] = []

    def careless(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(_prompts(messages))
        if len(seen) == 1:
            bad = {"run_id": "run_x", "offset": 10**20, "limit": -1}
            return ModelResponse(parts=[ToolCallPart("run_results", bad)])
        return ModelResponse(parts=[TextPart("understood")])

    said = say(world.rt, api, new_conversation(world.rt, api), think_with(careless), "results")
    assert said.status == "completed" and said.reply == "understood"
    assert "offset" in seen[1] and "less than or equal" in seen[1]


def test_a_brain_that_keeps_sending_bad_arguments_fails_in_the_platforms_words(
    world: World, api: Principal
) -> None:
    def stubborn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[ToolCallPart("show_benchmark", {"benchmark_id": "", "limit": 0})]
        )

    said = say(world.rt, api, new_conversation(world.rt, api), think_with(stubborn), "show")
    assert said.status == "failed" and "refused" in said.reply
    assert "exceeded max retries" not in said.reply


def test_a_brain_going_in_circles_is_stopped_at_its_third_identical_call(
    world: World, ana: str, api: Principal
) -> None:
    bm = world.benchmark(ana)
    asked: list[str] = []

    def circling(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.append(_prompts(messages))
        return ModelResponse(parts=[ToolCallPart("show_benchmark", {"benchmark_id": bm})])

    said = say(world.rt, api, new_conversation(world.rt, api), think_with(circling), "show")
    assert said.status == "failed"
    assert said.reply == replies.going_in_circles("show_benchmark")
    # Two calls were made and the third refused: the brain was not asked a fourth time.
    assert [call["ok"] for call in said.tool_calls] == [True, True, False]
    assert said.tool_calls[2]["error"] == "repeated" and len(asked) == 3


def test_the_same_call_again_after_another_one_is_not_a_circle(
    world: World, ana: str, api: Principal
) -> None:
    bm = world.benchmark(ana)
    calls = [("show_benchmark", {"benchmark_id": bm}), ("list_benchmarks", {})]
    steps: list[Any] = [[calls[0]], [calls[0]], [calls[1]], [calls[0]], [calls[0]], "shown"]
    said = say(world.rt, api, new_conversation(world.rt, api), Script(steps).brain(), "show")
    assert said.status == "completed" and said.reply == "shown"
    assert len(said.tool_calls) == 5 and all(call["ok"] for call in said.tool_calls)
    # The same tool with other arguments is another call, too.
    other = world.benchmark(ana)
    alternating = [[("show_benchmark", {"benchmark_id": b})] for b in (bm, bm, other, other)]
    said = say(world.rt, api, new_conversation(world.rt, api), Script(alternating).brain(), "x")
    assert said.status == "completed" and len(said.tool_calls) == 4


class _NoService:
    """Stands for the turn credential: the calls below reach no service."""

    @contextmanager
    def context(self, write: bool = True) -> Iterator[None]:
        yield None


def test_calls_alike_only_in_what_the_transcript_keeps_are_not_a_circle() -> None:
    # The transcript cuts arguments at MAX_LOGGED_ARGS characters; the calls differ past that.
    clock = ManualClock()
    deadline = clock.now() + timedelta(hours=1)
    state = TurnState(_NoService(), "conversation", "", clock, deadline, 10)  # type: ignore[arg-type]
    long = "x" * MAX_LOGGED_ARGS

    def write(text: str) -> Any:
        return state.call("write", {"content": long + text}, lambda ctx: {"written": text})

    assert [write(text) for text in "abcc"] == [{"written": text} for text in "abcc"]
    assert len({call["args"] for call in state.tool_calls}) == 1  # alike as the transcript shows
    with pytest.raises(TurnOver):
        write("c")  # the same whole arguments a third time in a row
    assert state.circling == "write"


def test_an_unexpected_tool_error_is_a_fixed_message(
    world: World, api: Principal, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("internal detail /srv/secret.db")

    monkeypatch.setattr(lifecycle, "list_benchmarks", boom)
    seen: list[str] = []

    def reader(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(_prompts(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart("list_benchmarks", {})])
        return ModelResponse(parts=[TextPart("could not list")])

    said = say(world.rt, api, new_conversation(world.rt, api), think_with(reader), "list")
    assert said.status == "completed" and "tool_failed" in seen[1]
    assert "/srv/secret.db" not in seen[1] and "/srv/secret.db" not in said.reply


def test_a_result_too_large_for_the_brain_is_refused(
    world: World, ana: str, api: Principal
) -> None:
    long = [{"prompt": f"{n} " + "p" * 15_000, "answer": str(n)} for n in range(8)]
    bm = world.benchmark(ana, {"title": "Long", "format": "qa", "questions": long})
    seen: list[str] = []

    def reader(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(_prompts(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart("show_benchmark", {"benchmark_id": bm})])
        if len(seen) == 2:
            small = {"benchmark_id": bm, "limit": 1}
            return ModelResponse(parts=[ToolCallPart("show_benchmark", small)])
        return ModelResponse(parts=[TextPart("read")])

    say(world.rt, api, new_conversation(world.rt, api), think_with(reader), "show")
    assert "result_too_large" in seen[1] and "p" * 15_000 not in seen[1]
    assert "result_too_large" not in _last_return(seen[2]) and "p" * 15_000 in seen[2]


def _last_return(prompt: str) -> str:
    return prompt[prompt.rfind("ToolReturnPart") :]


# --- 12: `continue` goes on with the parts, never starts again -------------------------------

MANY = [{"prompt": f"{n} squared?", "answer": str(n * n)} for n in range(120)]
BIG = {"title": "Squares", "format": "qa", "questions": MANY}


def _mine(world: World, ana: str) -> list[Any]:
    return list(world.do(Principal.web(ana), lifecycle.list_benchmarks, mine_only=True))


@pytest.mark.both_backends
def test_continue_shows_the_waiting_part_again_and_never_duplicates(
    world: World, ana: str, api: Principal
) -> None:
    conv = new_conversation(world.rt, api)
    first = say(world.rt, api, conv, Script([[("propose_create_benchmark", BIG)]]).brain(), "make")
    assert first.proposal is not None
    # A brain that would start over if it were asked: `continue` must not reach it.
    restart = Script([[("propose_create_benchmark", BIG)]])
    again = say(world.rt, api, conv, restart.brain(), "continue")
    assert restart.seen == []
    assert again.status == "awaiting_approval" and again.proposal is not None
    assert again.proposal.id == first.proposal.id and "part 1 of 3" in again.reply
    part2 = say(world.rt, api, conv, Script().brain(), "yes")
    assert part2.proposal is not None and part2.proposal.kind == "edit_benchmark"
    resumed = say(world.rt, api, conv, restart.brain(), "Please continue.")
    assert resumed.proposal is not None and resumed.proposal.id == part2.proposal.id
    part3 = say(world.rt, api, conv, Script().brain(), "ok")
    done = say(world.rt, api, conv, Script().brain(), "yes")
    assert part3.proposal is not None and done.status == "completed"
    (created,) = _mine(world, ana)
    assert created.question_count == 120


@pytest.mark.both_backends
@pytest.mark.parametrize("approved", [0, 1], ids=["first part", "later part"])
def test_continue_after_a_part_expired_proposes_it_again(
    world: World, ana: str, api: Principal, clock: ManualClock, approved: int
) -> None:
    """A later part is an edit bound to the benchmark's version: proposed again, it is bound
    afresh, not refused for carrying the version as input."""
    conv = new_conversation(world.rt, api)
    shown = say(world.rt, api, conv, Script([[("propose_create_benchmark", BIG)]]).brain(), "make")
    for _ in range(approved):
        shown = say(world.rt, api, conv, Script().brain(), "yes")
    assert shown.proposal is not None
    clock.advance(minutes=11)
    again = say(world.rt, api, conv, Script().brain(), "continue")
    assert again.proposal is not None and again.proposal.id != shown.proposal.id
    assert again.proposal.preview_hash == shown.proposal.preview_hash
    say(world.rt, api, conv, Script().brain(), "yes")
    (created,) = _mine(world, ana)
    assert created.question_count == 50 * (approved + 1)


def test_continue_without_a_plan_is_the_brains_to_answer(world: World, api: Principal) -> None:
    script = Script(["There is nothing to continue."])
    said = say(world.rt, api, new_conversation(world.rt, api), script.brain(), "continue")
    assert said.reply == "There is nothing to continue." and script.seen


def test_a_typed_message_during_a_plan_still_declines_it(
    world: World, ana: str, api: Principal
) -> None:
    conv = new_conversation(world.rt, api)
    say(world.rt, api, conv, Script([[("propose_create_benchmark", BIG)]]).brain(), "make")
    say(world.rt, api, conv, Script(["ok, dropped"]).brain(), "actually no")
    said = say(world.rt, api, conv, Script(["nothing to continue"]).brain(), "continue")
    assert said.status == "completed" and _mine(world, ana) == []
    assert world.do(Principal.web(api.user_id or ""), conversations.get_plan, conv) is None


def test_message_helpers_read_typed_words() -> None:
    from benchgen.agent.messages import is_assent, is_continue

    assert is_assent("Yes!") and is_assent("go ahead.") and not is_assent("yes, but publish B")
    assert is_continue("Continue") and is_continue("go on!") and not is_continue("continue with B")
    assert is_continue("please continue") and is_continue("OK, keep going, thanks")
    assert MessageIn(text="continue").text == "continue"


@pytest.mark.parametrize(
    "text",
    ["OK, но нет", "ok… 不要", "ok 🙅", "ok?", "y?", "o.k.", "s.u.r.e", "yes\tno", "ok ok?"],
)
def test_words_around_or_inside_an_assent_make_it_no_assent(text: str) -> None:
    """Nothing is dropped to make a match: another script's "no", a question mark, an emoji or
    dots inside a word leave words that approve nothing (A8: anything else declines)."""
    from benchgen.agent.messages import is_assent, is_continue

    assert not is_assent(text)
    assert not is_continue(text.replace("ok", "continue"))


# --- 10: a live token in data a tool read is revoked, not only hidden -------------------------


def test_a_token_in_tool_output_is_revoked_and_the_user_told(
    world: World, ana: str, api: Principal
) -> None:
    leaked = world.token(ana, ["read"])
    body = leaked.removeprefix("bgp_")
    question = {"prompt": f"What is {body[:12]}\u200b{body[12:]}?", "answer": "a token"}
    bm = world.benchmark(ana, {"title": "Leaky", "format": "qa", "questions": [question]})
    script = Script([[("show_benchmark", {"benchmark_id": bm})], "read it"])
    said = say(world.rt, api, new_conversation(world.rt, api), script.brain(), "show Leaky")
    assert body[12:] not in script.seen[1]
    assert any(leaked[-4:] in notice for notice in said.notices)
    with pytest.raises(Unauthenticated):
        world.api(leaked)


def test_a_secret_the_brain_writes_into_a_call_is_refused_and_a_token_revoked(
    world: World, ana: str, api: Principal
) -> None:
    """A brain that read a token (or a key) wrote it into a proposal: its preview showed it."""
    leaked = world.token(ana, ["read"])
    bm = world.benchmark(ana)
    args = {"benchmark_id": bm, "description": f"token {leaked}"}
    script = Script([[("propose_edit_benchmark", args)], "done"])
    said = say(world.rt, api, new_conversation(world.rt, api), script.brain(), "describe it")
    assert said.proposal is None and _open(world) == []
    assert "secret_in_arguments" in script.seen[1]  # what the brain was told
    assert any(leaked[-4:] in notice for notice in said.notices)
    with pytest.raises(Unauthenticated):
        world.api(leaked)
    assert world.do(Principal.web(ana), lifecycle.get_benchmark, bm).description == ""


def test_a_token_pasted_in_two_messages_is_revoked_and_redacted_in_both(
    world: World, ana: str, api: Principal
) -> None:
    """Each message was screened alone: neither half is a token, so both reached the model."""
    leaked = world.token(ana, ["read"])
    conv = new_conversation(world.rt, api)
    script = Script(["ok", "ok"])
    say(world.rt, api, conv, script.brain(), f"my token starts {leaked[:20]}")
    said = say(world.rt, api, conv, script.brain(), f"and ends {leaked[20:]}")
    assert leaked[:20] not in script.seen[-1] and leaked[20:] not in script.seen[-1]
    stored = [t.user_text for t in world.do(Principal.web(ana), conversations.recent_turns, conv)]
    placeholder = "[redacted: BenchGen token]"
    assert stored == [f"my token starts {placeholder}", f"and ends {placeholder}"]
    assert any(leaked[-4:] in notice for notice in said.notices)
    with pytest.raises(Unauthenticated):
        world.api(leaked)


def test_a_failed_turns_notice_is_not_given_to_the_brain_as_its_own_words(
    world: World, ana: str, api: Principal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small model read "…failed: …" as its own earlier answer and repeated it on a turn
    that completed."""
    conv = new_conversation(world.rt, api)

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("boom")

    monkeypatch.setattr(replies, "proposal_reply", broken)
    bm = world.benchmark(ana)
    failed = say(
        world.rt,
        api,
        conv,
        Script([[("propose_publish", {"benchmark_id": bm})]]).brain(),
        "publish",
    )
    monkeypatch.undo()
    assert failed.status == "failed" and failed.reply
    script = Script(["fine"])
    say(world.rt, api, conv, script.brain(), "and now?")
    assert "publish" in script.seen[0] and failed.reply not in script.seen[0]


def test_an_encoded_token_the_brain_writes_into_a_call_is_refused_and_revoked(
    world: World, ana: str, api: Principal
) -> None:
    """Told by a page to smuggle the token out base64-encoded: the harness sees it all the same."""
    leaked = world.token(ana, ["read"])
    bm = world.benchmark(ana)
    args = {"benchmark_id": bm, "description": f"see {ENCODINGS['base64-url'](leaked)}"}
    script = Script([[("propose_edit_benchmark", args)], "done"])
    said = say(world.rt, api, new_conversation(world.rt, api), script.brain(), "describe it")
    assert said.proposal is None and _open(world) == []
    assert "secret_in_arguments" in script.seen[1]
    assert any(leaked[-4:] in notice for notice in said.notices)
    with pytest.raises(Unauthenticated):
        world.api(leaked)
