"""Text hygiene at every service that stores a name or prose: spoofing characters are refused."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from benchgen.core.context import Context, Principal
from benchgen.core.errors import InvalidInput
from benchgen.core.permissions import PrincipalKind
from benchgen.jobs.worker import Worker
from benchgen.services import models
from benchgen.services.accounts import tokens, users
from benchgen.services.benchmarks import imports, judges, lifecycle, members, outbox, phases
from benchgen.services.chat import _proposal_kinds, conversations
from benchgen.services.runs import launch, leaderboards
from tests.support import MCQ, OPERATOR, QA, World

SPOOF = "\u202e\u200b"  # the right-to-left override and a zero-width space of the issue
EMOJI = "👩\u200d💻 Coders"  # a zero-width joiner inside an emoji sequence
FIRST = "mdl_builtin_first"
DOORS = [PrincipalKind.WEB, PrincipalKind.API, PrincipalKind.AGENT, PrincipalKind.CLI]


def refused(call: Callable[[], Any]) -> tuple[list[str | int], str]:
    """The place and message of the one problem `call` is refused for."""
    with pytest.raises(InvalidInput) as err:
        call()
    (error,) = err.value.errors
    return error["loc"], error["msg"]


def spec(**changes: Any) -> dict[str, Any]:
    return {**QA, **changes}


@pytest.mark.parametrize("kind", DOORS, ids=[kind.value for kind in DOORS])
def test_a_spoofing_title_is_refused_at_every_door(world: World, kind: PrincipalKind) -> None:
    ana = world.user("ana@example.com")
    who = world.principal(kind, ana)
    loc, msg = refused(lambda: world.do(who, lifecycle.create_benchmark, spec(title=SPOOF)))
    assert loc == ["title"] and "U+202E" in msg
    assert world.do(Principal.web(ana), lifecycle.list_benchmarks, mine_only=True) == []


@pytest.mark.parametrize(
    ("title", "needle"),
    [
        ("Capi\u202etals", "U+202E"),
        ("Capi\u2066tals\u2069", "U+2066"),
        ("Capi\u200btals", "U+200B"),
        ("Capi\u2060tals", "U+2060"),
        ("Capi\ufefftals", "U+FEFF"),
        ("Capi\u0085tals", "U+0085"),  # C1 control (NEL)
        ("Capi\x1btals", "U+001B"),
        ("Two\nlines", "U+000A"),
        ("Tab\tbed", "U+0009"),
        ("\u200d", "must not be empty"),  # nothing visible once stripped
        ("  \u00ad\u200c  ", "must not be empty"),
    ],
)
def test_titles_refuse_controls_bidi_and_invisible_characters(
    world: World, title: str, needle: str
) -> None:
    web = Principal.web(world.user("ana@example.com"))
    loc, msg = refused(lambda: world.do(web, lifecycle.create_benchmark, spec(title=title)))
    assert loc == ["title"] and needle in msg


@pytest.mark.both_backends
def test_an_emoji_title_with_a_joiner_is_kept_exactly(world: World) -> None:
    web = Principal.web(world.user("ana@example.com"))
    created = world.do(web, lifecycle.create_benchmark, spec(title=EMOJI))
    assert world.do(web, lifecycle.get_benchmark, created.benchmark.id).title == EMOJI


@pytest.mark.parametrize(
    ("question", "loc"),
    [
        ({"prompt": "Capital of \u202eFrance?", "answer": "Paris"}, ["questions", 0, "prompt"]),
        ({"prompt": "Capital?", "answer": "Par\u2067is"}, ["questions", 0, "answer"]),
        ({"prompt": "Capital?", "answer": ["Paris", "P\u202aris"]}, ["questions", 0, "answer"]),
        (
            {"prompt": "Capital?", "answer": "Paris", "tags": ["geo\u200b"]},
            ["questions", 0, "tags", 0],
        ),
        ({"prompt": "Capital?\x07", "answer": "Paris"}, ["questions", 0, "prompt"]),
    ],
)
def test_questions_and_answers_refuse_bidi_controls(
    world: World, question: dict[str, Any], loc: list[str | int]
) -> None:
    web = Principal.web(world.user("ana@example.com"))
    got, _ = refused(lambda: world.do(web, lifecycle.create_benchmark, spec(questions=[question])))
    assert got == loc


def test_mcq_choices_refuse_bidi_controls(world: World) -> None:
    web = Principal.web(world.user("ana@example.com"))
    question = {"prompt": "Sky?", "choices": ["Blue", "Gr\u202eeen"], "answer": "A"}
    bad = {"title": "Colours", "format": "mcq", "questions": [question]}
    loc, _ = refused(lambda: world.do(web, lifecycle.create_benchmark, bad))
    assert loc == ["questions", 0, "choices", 1]


@pytest.mark.both_backends
def test_prose_keeps_tabs_newlines_and_joiners(world: World) -> None:
    web = Principal.web(world.user("ana@example.com"))
    description = "Capitals of Europe.\n\n\tPart one:\r\n- the usual ones 👩\u200d💻"
    question = {"prompt": "Name it:\n\tcapital of France?", "answer": "Paris"}
    created = world.do(
        web, lifecycle.create_benchmark, spec(description=description, questions=[question])
    )
    view = world.do(web, lifecycle.get_benchmark, created.benchmark.id)
    assert view.description == description
    (stored,) = world.do(web, lifecycle.list_questions, created.benchmark.id)
    assert stored["prompt"] == question["prompt"]
    loc, msg = refused(
        lambda: world.do(web, lifecycle.create_benchmark, spec(description="Read \u202ethis"))
    )
    assert loc == ["description"] and "U+202E" in msg


def test_edits_previews_imports_and_proposals_refuse_them_too(world: World) -> None:
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    bm = world.benchmark(ana)
    for call in (
        lambda: world.do(web, lifecycle.edit_benchmark, bm, {"title": SPOOF}),
        lambda: world.do(web, lifecycle.preview_benchmark_change, bm, {"title": "a\u0085b"}),
        lambda: world.do(web, imports.import_benchmark, {**_import(), "title": SPOOF}),
    ):
        assert refused(call)[0] == ["title"]
    bad_line = '{"prompt": "Capital of \\u202eFrance?", "answer": "Paris"}'
    loc, _ = refused(lambda: world.do(web, imports.import_benchmark, _import(bad_line)))
    assert loc == ["content", 1, "prompt"]  # the file's line, as the import is placed
    agent = world.principal(PrincipalKind.AGENT, ana)

    def propose(ctx: Context) -> Any:
        return _proposal_kinds.prepare(ctx, "create_benchmark", spec(title=SPOOF), False)

    assert refused(lambda: world.ctx_call(agent, propose))[0] == ["title"]
    assert world.do(web, lifecycle.get_benchmark, bm).title == QA["title"]


def _import(line: str = '{"prompt": "2+2?", "answer": "4"}') -> dict[str, Any]:
    return {"title": "Imported", "format": "qa", "content": line}


def test_names_of_models_tokens_phases_and_conversations_refuse_them(world: World) -> None:
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    bm = world.benchmark(ana)
    model = {"name": "My \u202emodel", "endpoint_model": "m", "base_url": "http://127.0.0.1:9/v1"}
    hidden_id = {**model, "name": "ok", "endpoint_model": "m\u200b"}
    judge = ("openai_compat", "judge\u200b", None, None)
    person = ("bo@example.com", "pass1234", "B\u202eo")
    cases: list[tuple[Principal, Callable[..., Any], tuple[Any, ...], list[str | int]]] = [
        (web, models.create_model, (model,), ["name"]),
        (web, models.create_model, ({**model, "name": "\u200d"},), ["name"]),
        (web, models.create_model, (hidden_id,), ["endpoint_model"]),
        (web, tokens.create_token, ("ci\u202e", ["read"]), ["name"]),
        (web, tokens.create_token, ("\u2060\u200d", ["read"]), ["name"]),
        (web, phases.add_phase, (bm, "Final\u2067"), ["name"]),
        (web, phases.add_task, (bm, "Task\n2", []), ["name"]),
        (web, conversations.create_conversation, (SPOOF,), ["title"]),
        (web, members.add_whitelist_entries, (bm, ["@exa\u202emple.com"]), ["entries", 0]),
        (OPERATOR, users.create_user, person, ["display_name"]),
        (web, judges.set_judge, (bm, *judge), ["model"]),
        (web, outbox.preview_participant_email, (bm, "News\u202e", "Hello"), ["subject"]),
        (web, outbox.preview_participant_email, (bm, "News", "Hel\u202elo"), ["body"]),
    ]
    for who, fn, args, loc in cases:
        assert refused(partial(world.do, who, fn, *args))[0] == loc, fn.__name__


@pytest.mark.both_backends
def test_good_names_pass_and_an_invisible_conversation_title_is_stored_empty(world: World) -> None:
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    bm = world.benchmark(ana)
    assert world.do(web, tokens.create_token, f" {EMOJI} ", ["read"]).token.name == EMOJI
    assert world.do(web, phases.add_phase, bm, EMOJI).name == EMOJI
    assert world.do(web, conversations.create_conversation, EMOJI).title == EMOJI
    assert world.do(web, conversations.create_conversation, "\u200d").title == ""


def test_a_score_correction_reason_refuses_bidi_controls(world: World) -> None:
    ana = world.user("ana@example.com", credits_=100)
    web = Principal.web(ana)
    run = world.do(web, launch.start_run, world.benchmark(ana, MCQ), FIRST).id
    while Worker(world.rt).run_once():  # only a completed run's score is corrected
        pass
    loc, _ = refused(
        lambda: world.do(web, leaderboards.edit_run_score, run, {"accuracy": 1}, "re\u202egrade")
    )
    assert loc == ["reason"]
    world.do(web, leaderboards.edit_run_score, run, {"accuracy": 1}, "regrade:\n\tkey fixed")
