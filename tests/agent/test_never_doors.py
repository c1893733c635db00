"""A13 at the service doors, and the turn credential and approvals under a hostile brain.

Each never-action is called with the very credential the harness hands to tools, so a service
that forgot to check the principal's kind would be caught here, not only in the tool list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo
from sqlalchemy import func, select

from benchgen.agent.messages import MessageIn
from benchgen.agent.turn import complete_turn
from benchgen.core.clock import ManualClock
from benchgen.core.context import Context, Principal
from benchgen.core.errors import Conflict, NotFound, PermissionDenied, Unauthenticated
from benchgen.db.tables import ApiToken, WebSession
from benchgen.jobs.worker import Worker
from benchgen.services import deployment
from benchgen.services.accounts import credits, sessions, tokens, users
from benchgen.services.benchmarks import (
    invitations,
    judges,
    lifecycle,
    members,
    outbox,
    phases,
)
from benchgen.services.chat import proposals
from benchgen.services.runs import launch, leaderboards, notifications
from tests.agent.scripted import Script, begin_turn, new_conversation, say, think_with
from tests.support import OPERATOR, QA, World

FIRST = "mdl_builtin_random"
_NEW = {"title": "Sums", "format": "qa", "questions": [{"prompt": "1+1?", "answer": "2"}]}
Call = Callable[[Context, dict[str, str]], object]

# Every A13 action (and the account and admin changes beside them) as a direct service call.
NEVER_CALLS: dict[str, Call] = {
    "create a token": lambda ctx, ids: tokens.create_token(ctx, "mine", ["read"], 30),
    "list tokens": lambda ctx, ids: tokens.list_tokens(ctx),
    "revoke a token": lambda ctx, ids: tokens.revoke_token(ctx, ids["token"]),
    "read settings": lambda ctx, ids: deployment.list_settings(ctx),
    "set a setting": lambda ctx, ids: deployment.set_setting(ctx, "agent_allow_create", "true"),
    "disable an account": lambda ctx, ids: users.set_active(ctx, ids["other"], False),
    "make an admin": lambda ctx, ids: users.set_admin(ctx, ids["user"], True),
    "grant credits": lambda ctx, ids: credits.grant_credits(ctx, ids["user"], 1_000),
    "delete a benchmark": lambda ctx, ids: lifecycle.delete_benchmark(ctx, ids["benchmark"]),
    "unpublish": lambda ctx, ids: lifecycle.unpublish_benchmark(ctx, ids["published"]),
    "leaderboard": lambda ctx, ids: leaderboards.add_to_leaderboard(ctx, ids["run"]),
    "edit a score": lambda ctx, ids: leaderboards.edit_run_score(
        ctx, ids["run"], {"accuracy": 1.0}, "hand edit"
    ),
    "set up the judge": lambda ctx, ids: judges.set_judge(
        ctx, ids["benchmark"], "anthropic", "claude-x", None, "sk-ant-not-a-real-key"
    ),
    "add a phase": lambda ctx, ids: phases.add_phase(ctx, ids["benchmark"], "Final"),
    "whitelist": lambda ctx, ids: members.add_whitelist_entries(
        ctx, ids["benchmark"], ["eve@example.com"]
    ),
    "invite": lambda ctx, ids: invitations.invite_collaborator(
        ctx, ids["benchmark"], "eve@example.com"
    ),
    "email participants": lambda ctx, ids: outbox.send_participant_email(
        ctx, ids["benchmark"], "Hello", "Hi all"
    ),
    "notifications": lambda ctx, ids: notifications.update_notification_settings(ctx, True, None),
    "decide a proposal": lambda ctx, ids: proposals.decide(
        ctx, ids["conversation"], "prp_x", "f" * 64, True
    ),
}


def _tokens(world: World, user_id: str) -> int:
    query = select(func.count(ApiToken.id)).where(ApiToken.user_id == user_id)
    return int(world.ctx_call(OPERATOR, lambda ctx: ctx.session.scalar(query)))


@pytest.mark.parametrize("what", sorted(NEVER_CALLS))
def test_a13_every_never_service_refuses_the_turn_credential(
    world: World, ana: str, api: Principal, what: str
) -> None:
    """Ana is an admin who owns everything touched, with a finished run: as herself, in the
    web app, each call is hers to make; only the turn credential can be what refuses."""
    world.do(OPERATOR, users.set_admin, ana, True)
    web = Principal.web(ana)
    published = world.benchmark(ana, {**QA, "title": "Shown"})
    world.do(web, lifecycle.publish_benchmark, published)
    run = world.do(web, launch.start_run, published, FIRST, None).id
    while Worker(world.rt).run_once():
        pass
    conv = new_conversation(world.rt, api)
    ids = {"user": ana, "other": world.user("bo@example.com"), "token": str(api.token_id)}
    ids |= {"benchmark": published, "published": published, "run": run, "conversation": conv}
    started = begin_turn(world.rt, api, conv, MessageIn(text="do everything"))
    before = _tokens(world, ana)
    with pytest.raises(PermissionDenied), started.credential.context() as ctx:
        NEVER_CALLS[what](ctx, ids)
    complete_turn(started, Script(["I can't."]).brain())
    assert _tokens(world, ana) == before
    assert world.do(web, lifecycle.get_benchmark, published).visibility == "published"
    assert world.do(web, users.get_me).is_active


@pytest.mark.both_backends
def test_a2_signing_out_ends_a_browser_turn_at_its_next_tool_call(world: World, ana: str) -> None:
    view = world.do(Principal.web(ana), users.get_me)
    cookie = world.do(OPERATOR, sessions.open_session, view, "127.0.0.1").secret
    session_id = world.ctx_call(OPERATOR, _newest_session(ana))
    browser = Principal.web(ana, session_id)

    def think(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        world.do(browser, sessions.end_session, cookie)
        return ModelResponse(parts=[ToolCallPart("propose_create_benchmark", _NEW)])

    turn = say(world.rt, browser, new_conversation(world.rt, browser), think_with(think), "make")
    assert turn.status == "failed" and "access ended" in turn.reply
    assert turn.proposal is None
    assert world.do(Principal.web(ana), lifecycle.list_benchmarks, mine_only=True) == []


def _newest_session(user_id: str) -> Callable[[Context], str]:
    def newest(ctx: Context) -> str:
        query = select(WebSession.id).where(WebSession.user_id == user_id)
        return str(ctx.session.scalars(query.order_by(WebSession.created_at.desc())).first())

    return newest


def test_a2_a_finished_turns_credential_opens_no_unit_of_work(world: World, api: Principal) -> None:
    started = begin_turn(world.rt, api, new_conversation(world.rt, api), MessageIn(text="hi"))
    complete_turn(started, Script(["hi"]).brain())
    with pytest.raises(Unauthenticated), started.credential.context() as ctx:
        lifecycle.create_benchmark(ctx, _NEW)


def test_a2_a_turn_credential_never_acts_for_another_user(world: World, ana: str) -> None:
    bo = world.user("bo@example.com", credits_=1_000)
    bo_api = world.api(world.token(bo, ["read", "publish"]))
    mine = world.benchmark(ana)
    started = begin_turn(world.rt, bo_api, new_conversation(world.rt, bo_api), MessageIn(text="x"))
    with pytest.raises((PermissionDenied, NotFound)), started.credential.context() as ctx:
        lifecycle.publish_benchmark(ctx, mine)
    complete_turn(started, Script(["ok"]).brain())
    assert world.do(Principal.web(ana), lifecycle.get_benchmark, mine).visibility == "private"


@pytest.mark.parametrize("switch", ["agent_allow_publish", "agent_allow_create"])
def test_a3_a_switch_turned_off_mid_turn_refuses_the_next_call(
    world: World, ana: str, api: Principal, switch: str
) -> None:
    bm = world.benchmark(ana)
    calls = {
        "agent_allow_publish": ToolCallPart("propose_publish", {"benchmark_id": bm}),
        "agent_allow_create": ToolCallPart("propose_create_benchmark", _NEW),
    }
    seen: list[str] = []

    def think(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(seen) == 0:
            seen.append("off")
            world.do(OPERATOR, deployment.set_setting, switch, "false")
            return ModelResponse(parts=[calls[switch]])
        seen.append(repr(messages))
        return ModelResponse(parts=[])

    turn = say(world.rt, api, new_conversation(world.rt, api), think_with(think), "go")
    assert turn.proposal is None and turn.status != "awaiting_approval"
    assert "switched off" in seen[1]


def test_a8_another_user_cannot_approve_a_proposal(world: World, ana: str, api: Principal) -> None:
    bm = world.benchmark(ana)
    conv = new_conversation(world.rt, api)
    turn = say(
        world.rt, api, conv, Script([[("propose_publish", {"benchmark_id": bm})]]).brain(), "pub"
    )
    approve = dict(turn.buttons[0]["action"])
    bo = world.user("bo@example.com")
    bo_api = world.api(world.token(bo, ["read", "publish"]))
    with pytest.raises(Conflict):
        say(world.rt, bo_api, new_conversation(world.rt, bo_api), Script().brain(), action=approve)
    with pytest.raises(NotFound):
        say(world.rt, bo_api, conv, Script().brain(), action=approve)
    assert turn.proposal is not None
    assert world.do(api, proposals.get_proposal, turn.proposal.id).status == "pending"
    assert world.do(Principal.web(ana), lifecycle.get_benchmark, bm).visibility == "private"


def test_a8_approving_after_the_benchmark_changed_does_nothing(
    world: World, ana: str, api: Principal
) -> None:
    bm = world.benchmark(ana)
    conv = new_conversation(world.rt, api)
    turn = say(
        world.rt, api, conv, Script([[("propose_publish", {"benchmark_id": bm})]]).brain(), "pub"
    )
    change: dict[str, Any] = {"title": "Renamed behind the preview"}
    world.do(Principal.web(ana), lifecycle.edit_benchmark, bm, change)
    done = say(world.rt, api, conv, Script().brain(), action=dict(turn.buttons[0]["action"]))
    assert "did not happen" in done.reply and "title changed after the preview" in done.reply
    # Said once: the refusal's own "nothing was done" was followed by "Nothing was changed."
    assert done.reply.lower().count("nothing was") == 1, done.reply
    assert world.do(Principal.web(ana), lifecycle.get_benchmark, bm).visibility == "private"


def test_a19_agent_creation_counts_against_the_daily_limit(
    world: World, ana: str, api: Principal, clock: ManualClock
) -> None:
    daily = world.rt.settings.create_limit_per_day
    for n in range(daily):
        clock.advance(seconds=61)  # never the per-minute limit: only the daily one is reached
        world.do(api, lifecycle.create_benchmark, {**QA, "title": f"api {n}"})
    clock.advance(seconds=61)
    conv = new_conversation(world.rt, api)
    turn = say(world.rt, api, conv, Script([[("propose_create_benchmark", _NEW)]]).brain(), "make")
    done = say(world.rt, api, conv, Script().brain(), action=dict(turn.buttons[0]["action"]))
    assert "did not happen" in done.reply
    mine = world.do(Principal.web(ana), lifecycle.list_benchmarks, mine_only=True)
    assert len(mine) == daily and "Sums" not in {b.title for b in mine}
