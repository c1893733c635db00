"""Benchmark service: creating and validating, visibility and answer keys, listing, previewing and
applying changes, freezing, publishing, deleting, and phases."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from benchgen.core.clock import ManualClock
from benchgen.core.context import Context, Principal
from benchgen.core.errors import Conflict, Frozen, InvalidInput, NotFound, PermissionDenied
from benchgen.core.permissions import PrincipalKind
from benchgen.db.tables import (
    AuditEvent,
    Benchmark,
    Phase,
    PhaseTask,
    Question,
    RateLimitEvent,
    Task,
)
from benchgen.services.benchmarks import lifecycle, members, phases, question_edits
from benchgen.services.runs import launch
from tests.support import MCQ, QA, World

OPERATOR = Principal.cli()
COUNTED = (Benchmark, Question, Phase, Task, PhaseTask, AuditEvent, RateLimitEvent)

FRANCE = {"prompt": "Capital of France?", "tags": [], "answer": ["Paris"]}
JAPAN = {"prompt": "Capital of Japan?", "tags": [], "answer": ["Tokyo", "Tōkyō"]}
SKY = {
    "prompt": "Colour of the sky?",
    "tags": [],
    "choices": {"A": "Green", "B": "Blue", "C": "Red"},
    "answer": "B",
}
GRASS = {
    "prompt": "Colour of grass?",
    "tags": [],
    "choices": {"A": "Green", "B": "Blue"},
    "answer": "A",
}


def counts(world: World) -> dict[str, int]:
    """Rows in every table creating or changing a benchmark could write to."""

    def read(ctx: Context) -> dict[str, int]:
        return {
            table.__tablename__: int(ctx.session.scalar(select(func.count()).select_from(table)))
            for table in COUNTED
        }

    return world.ctx_call(OPERATOR, read)


def utc(moment: datetime | None) -> datetime | None:
    """Stored times are UTC; some backends hand them back without a zone."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


def qa(*questions: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A qa benchmark spec with exactly these questions."""
    return {"title": "Quiz", "format": "qa", "questions": list(questions), **fields}


def mcq(*questions: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """An mcq benchmark spec with exactly these questions."""
    return {"title": "Quiz", "format": "mcq", "questions": list(questions), **fields}


def choose(*choices: str, answer: Any = "A", prompt: str = "Pick one") -> dict[str, Any]:
    """One mcq question."""
    return {"prompt": prompt, "choices": list(choices), "answer": answer}


def ask(answer: Any = "yes", prompt: str = "Is it?") -> dict[str, Any]:
    """One qa question."""
    return {"prompt": prompt, "answer": answer}


def questions_of(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """A deep copy of a spec's question list, to change for an edit."""
    return copy.deepcopy(spec["questions"])


@pytest.fixture
def owner(world: World) -> str:
    return world.user("ana@example.com")


@pytest.fixture
def web(owner: str) -> Principal:
    return Principal.web(owner)


# --- creating ---------------------------------------------------------------------------------


@pytest.mark.both_backends
def test_create_qa_stores_questions_in_order_with_one_phase_and_task(
    world: World, owner: str, web: Principal, clock: ManualClock
) -> None:
    created = world.do(web, lifecycle.create_benchmark, {**QA, "description": "Cities"})
    view = created.benchmark
    assert created.warnings == []
    assert view.id.startswith("bm_")
    assert (view.title, view.description, view.format) == ("Capitals", "Cities", "qa")
    assert (view.visibility, view.owner_id, view.version) == ("private", owner, 1)
    assert (view.question_count, view.questions_frozen, view.created_door) == (2, False, "web")
    assert (view.roles, view.can_see_key, view.published_at) == (["owner"], True, None)
    assert utc(view.created_at) == clock.now()
    assert world.do(web, lifecycle.list_questions, view.id) == [
        {"position": 0, **FRANCE},
        {"position": 1, **JAPAN},
    ]


@pytest.mark.both_backends
def test_create_mcq_keeps_the_label_and_accepts_a_key_given_as_choice_text(
    world: World, web: Principal
) -> None:
    spec = mcq(
        choose("Green", "Blue", "Red", answer="b", prompt="Colour of the sky?"),
        choose("Green", "Blue", answer="Green", prompt="Colour of grass?"),
        choose("Yes", "No", answer=["B"], prompt="Is water dry?"),
    )
    bm = world.do(web, lifecycle.create_benchmark, spec).benchmark
    assert bm.format == "mcq"
    assert world.do(web, lifecycle.list_questions, bm.id) == [
        {"position": 0, **SKY},
        {"position": 1, **GRASS},
        {
            "position": 2,
            "prompt": "Is water dry?",
            "tags": [],
            "choices": {"A": "Yes", "B": "No"},
            "answer": "B",
        },
    ]


@pytest.mark.both_backends
def test_create_keeps_tags_and_strips_whitespace(world: World, web: Principal) -> None:
    spec = qa(
        {"prompt": "  Two plus two?  ", "answer": [" 4 ", "four"], "tags": ["math", "", "math"]}
    )
    bm = world.do(web, lifecycle.create_benchmark, spec).benchmark
    assert world.do(web, lifecycle.list_questions, bm.id) == [
        {"position": 0, "prompt": "Two plus two?", "tags": ["math"], "answer": ["4", "four"]}
    ]


@pytest.mark.both_backends
def test_create_accepts_every_limit_exactly(world: World, web: Principal) -> None:
    letters = [f"choice {n}" for n in range(26)]
    spec = mcq(
        choose(*letters, answer="Z", prompt="p" * 20_000),
        choose("x" * 2_000, "y", answer="A"),
        title="t" * 200,
    )
    bm = world.do(web, lifecycle.create_benchmark, spec).benchmark
    assert (bm.title, bm.question_count) == ("t" * 200, 2)
    listed = world.do(web, lifecycle.list_questions, bm.id)
    assert listed[0]["answer"] == "Z"
    assert listed[0]["choices"]["Z"] == "choice 25"
    assert listed[1]["choices"]["A"] == "x" * 2_000


@pytest.mark.both_backends
def test_create_accepts_ten_thousand_questions(world: World, web: Principal) -> None:
    spec = qa(*(ask(prompt=f"Question {n}?") for n in range(10_000)))
    bm = world.do(web, lifecycle.create_benchmark, spec).benchmark
    assert bm.question_count == 10_000


LETTERS = [chr(ord("A") + n) for n in range(27)]

INVALID: list[tuple[str, dict[str, Any], list[Any]]] = [
    ("empty prompt", qa(ask(prompt="")), ["questions", 0, "prompt"]),
    ("blank prompt", mcq(choose("a", "b", prompt="   ")), ["questions", 0, "prompt"]),
    ("mcq one choice", mcq(choose("Only")), ["questions", 0, "choices"]),
    ("mcq no choices", mcq({"prompt": "p", "answer": "A"}), ["questions", 0, "choices"]),
    ("mcq 27 choices", mcq(choose(*LETTERS)), ["questions", 0, "choices"]),
    ("key letter past choices", mcq(choose("a", "b", "c", answer="D")), ["questions", 0, "answer"]),
    (
        "key text not a choice",
        mcq(choose("Red", "Blue", answer="Purple")),
        ["questions", 0, "answer"],
    ),
    ("key two labels", mcq(choose("Red", "Blue", answer=["A", "B"])), ["questions", 0, "answer"]),
    ("key empty", mcq(choose("Red", "Blue", answer="")), ["questions", 0, "answer"]),
    ("qa empty answer", qa(ask(answer="")), ["questions", 0, "answer"]),
    ("qa no answers", qa(ask(answer=[])), ["questions", 0, "answer"]),
    ("qa blank answers", qa(ask(answer=["  ", ""])), ["questions", 0, "answer"]),
    ("qa answer too long", qa(ask(answer="a" * 2_001)), ["questions", 0, "answer"]),
    ("qa with choices", qa({**ask(), "choices": ["a", "b"]}), ["questions", 0, "choices"]),
    ("empty title", qa(ask(), title=""), ["title"]),
    ("blank title", qa(ask(), title="   "), ["title"]),
    ("title 201", qa(ask(), title="t" * 201), ["title"]),
    ("prompt 20001", qa(ask(prompt="p" * 20_001)), ["questions", 0, "prompt"]),
    ("choice 2001", mcq(choose("a", "c" * 2_001)), ["questions", 0, "choices", 1]),
    ("empty choice", mcq(choose("a", " ", "c")), ["questions", 0, "choices", 1]),
    ("tag too long", qa({**ask(), "tags": ["t" * 51]}), ["questions", 0, "tags"]),
    ("21 tags", qa({**ask(), "tags": [str(n) for n in range(21)]}), ["questions", 0, "tags"]),
    ("unknown field", qa(ask(), colour="red"), ["colour"]),
    ("unknown question field", qa({**ask(), "hint": "x"}), ["questions", 0, "hint"]),
    ("unknown format", {"title": "T", "format": "essay"}, ["format"]),
    ("custom format", {"title": "T", "format": "custom"}, ["format"]),
    ("missing title", {"format": "qa"}, ["title"]),
    ("missing answer", qa({"prompt": "p"}), ["questions", 0, "answer"]),
    ("10001 questions", qa(*(ask(prompt=f"q{n}") for n in range(10_001))), ["questions"]),
]


@pytest.mark.parametrize(("spec", "loc"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_create_refuses_invalid_input_with_its_place_and_writes_nothing(
    world: World, web: Principal, spec: dict[str, Any], loc: list[Any]
) -> None:
    before = counts(world)
    with pytest.raises(InvalidInput) as err:
        world.do(web, lifecycle.create_benchmark, spec)
    assert [error["loc"] for error in err.value.errors] == [loc]
    assert err.value.details == {"errors": err.value.errors}
    assert err.value.message.startswith(".".join(str(part) for part in loc) + ": ")
    assert counts(world) == before


def test_create_reports_every_problem_in_the_questions(world: World, web: Principal) -> None:
    spec = mcq(
        choose("a", "b", prompt=""),
        choose("a", "b", answer="A", prompt="fine"),
        choose("a", "b", answer="C", prompt="bad key"),
        choose("only", prompt="too few"),
    )
    before = counts(world)
    with pytest.raises(InvalidInput) as err:
        world.do(web, lifecycle.create_benchmark, spec)
    assert [error["loc"] for error in err.value.errors] == [
        ["questions", 0, "prompt"],
        ["questions", 2, "answer"],
        ["questions", 3, "choices"],
    ]
    assert err.value.message.startswith("questions.0.prompt: must not be empty (and 2 more)")
    assert counts(world) == before


def test_invalid_input_through_an_api_token_counts_nothing_against_the_limit(
    world: World, owner: str
) -> None:
    api = world.principal(PrincipalKind.API, owner)
    before = counts(world)
    with pytest.raises(InvalidInput):
        world.do(api, lifecycle.create_benchmark, qa(ask(answer="")))
    assert counts(world) == before


def test_duplicates_come_back_as_warnings_and_are_created(world: World, web: Principal) -> None:
    spec = qa(
        ask(answer=["Paris", "Paris"], prompt="Capital of France?"),
        ask(answer="Paris", prompt="capital   of FRANCE?"),
        ask(answer="Rome", prompt="Capital of Italy?"),
    )
    created = world.do(web, lifecycle.create_benchmark, spec)
    assert created.warnings == [
        {"loc": ["questions", 0, "answer"], "msg": "duplicate accepted answers were merged"},
        {"loc": ["questions", 1, "prompt"], "msg": "same prompt as question 1"},
    ]
    assert created.benchmark.question_count == 3
    listed = world.do(web, lifecycle.list_questions, created.benchmark.id)
    assert [q["answer"] for q in listed] == [["Paris"], ["Paris"], ["Rome"]]


def test_duplicate_choices_are_a_warning(world: World, web: Principal) -> None:
    created = world.do(
        web, lifecycle.create_benchmark, mcq(choose("Blue", "blue ", "Red", answer="C"))
    )
    assert created.warnings == [
        {"loc": ["questions", 0, "choices"], "msg": "two choices read the same (A and B)"}
    ]
    assert created.benchmark.question_count == 1


# --- visibility -------------------------------------------------------------------------------


class Cast:
    """One private mcq benchmark and a user in every relation to it."""

    def __init__(self, world: World) -> None:
        self.owner = world.user("owner@example.com")
        self.collaborator = world.user("collab@example.com")
        self.participant = world.user("part@example.com")
        self.stranger = world.user("stranger@example.com")
        self.bm = world.benchmark(self.owner, MCQ)
        owner = Principal.web(self.owner)
        world.collaborator(self.owner, self.bm, "collab@example.com")
        world.do(owner, members.add_whitelist_entries, self.bm, ["part@example.com"])
        world.do(Principal.web(self.participant), members.join_benchmark, self.bm, True)


@pytest.fixture
def cast(world: World) -> Cast:
    return Cast(world)


PUBLIC_MCQ = [
    {"position": 0, **{k: v for k, v in SKY.items() if k != "answer"}},
    {"position": 1, **{k: v for k, v in GRASS.items() if k != "answer"}},
]
KEYED_MCQ = [{"position": 0, **SKY}, {"position": 1, **GRASS}]


@pytest.mark.both_backends
def test_private_benchmark_is_seen_by_owner_collaborator_and_participant(
    world: World, cast: Cast
) -> None:
    expected = {
        cast.owner: (["owner"], True, KEYED_MCQ),
        cast.collaborator: (["collaborator"], True, KEYED_MCQ),
        cast.participant: (["participant"], False, PUBLIC_MCQ),
    }
    for user, (roles, key, listed) in expected.items():
        who = Principal.web(user)
        view = world.do(who, lifecycle.get_benchmark, cast.bm)
        assert (view.id, view.roles, view.can_see_key) == (cast.bm, roles, key)
        assert world.do(who, lifecycle.list_questions, cast.bm) == listed
        assert len(world.do(who, phases.list_phases, cast.bm)) == 1


@pytest.mark.both_backends
def test_private_benchmark_is_not_found_for_anyone_else(world: World, cast: Cast) -> None:
    stranger = Principal.web(cast.stranger)
    for call in (lifecycle.get_benchmark, lifecycle.list_questions, phases.list_phases):
        with pytest.raises(NotFound):
            world.do(stranger, call, cast.bm)
    with pytest.raises(NotFound):
        world.do(stranger, lifecycle.preview_benchmark_change, cast.bm, {"title": "x"})
    with pytest.raises(NotFound):
        world.do(Principal.web(cast.stranger), lifecycle.get_benchmark, "bm_doesnotexist")


@pytest.mark.both_backends
def test_published_benchmark_is_seen_by_everyone_but_keys_stay_with_editors(
    world: World, cast: Cast
) -> None:
    world.do(Principal.web(cast.owner), lifecycle.publish_benchmark, cast.bm)
    expected = {
        cast.owner: (["owner", "public"], True, KEYED_MCQ),
        cast.collaborator: (["collaborator", "public"], True, KEYED_MCQ),
        cast.participant: (["participant", "public"], False, PUBLIC_MCQ),
        cast.stranger: (["public"], False, PUBLIC_MCQ),
    }
    for user, (roles, key, listed) in expected.items():
        who = Principal.web(user)
        view = world.do(who, lifecycle.get_benchmark, cast.bm)
        assert (view.visibility, view.roles, view.can_see_key) == ("published", roles, key)
        assert world.do(who, lifecycle.list_questions, cast.bm) == listed


def test_a_key_blind_reader_cannot_preview_a_change(world: World, cast: Cast) -> None:
    world.do(Principal.web(cast.owner), lifecycle.publish_benchmark, cast.bm)
    for user in (cast.participant, cast.stranger):
        with pytest.raises(PermissionDenied):
            world.do(
                Principal.web(user),
                lifecycle.preview_benchmark_change,
                cast.bm,
                {"questions": []},
            )


@pytest.mark.both_backends
def test_removed_collaborator_loses_sight_of_a_private_benchmark(world: World, cast: Cast) -> None:
    world.do(Principal.web(cast.owner), members.remove_collaborator, cast.bm, cast.collaborator)
    with pytest.raises(NotFound):
        world.do(Principal.web(cast.collaborator), lifecycle.get_benchmark, cast.bm)


# --- listing ----------------------------------------------------------------------------------


@pytest.mark.both_backends
def test_list_benchmarks_mine_only_search_and_deleted(
    world: World, clock: ManualClock, owner: str, web: Principal
) -> None:
    other = world.user("ben@example.com")
    them = Principal.web(other)

    def make(user: str, title: str) -> str:
        clock.advance(minutes=1)
        return world.benchmark(user, {**QA, "title": title})

    alpha = make(owner, "Alpha colours")
    beta = make(owner, "Beta capitals")
    gamma = make(other, "Gamma 50% quiz")
    delta = make(other, "Delta private_stuff")
    shared = make(other, "Epsilon shared")
    gone = make(owner, "Zeta deleted")
    world.do(them, lifecycle.publish_benchmark, gamma)
    world.collaborator(other, shared, "ana@example.com")
    world.do(web, lifecycle.delete_benchmark, gone)

    def ids(who: Principal, **kwargs: Any) -> list[str]:
        return [view.id for view in world.do(who, lifecycle.list_benchmarks, **kwargs)]

    assert ids(web) == [shared, gamma, beta, alpha]
    assert ids(web, mine_only=True) == [shared, beta, alpha]
    assert ids(them) == [shared, delta, gamma]
    assert ids(them, mine_only=True) == [shared, delta, gamma]
    assert ids(web, search="BETA") == [beta]
    assert ids(web, search="  capitals ") == [beta]
    assert ids(web, search="50%") == [gamma]
    assert ids(web, search="%") == [gamma]
    assert ids(them, search="_") == [delta]
    assert ids(web, search="_") == []
    assert ids(web, search="Zeta") == []
    assert ids(web, limit=2) == [shared, gamma]
    assert ids(web, limit=2, offset=2) == [beta, alpha]
    assert ids(web, mine_only=True, search="epsilon") == [shared]


@pytest.mark.parametrize(
    ("limit", "offset", "place"), [(0, 0, "limit"), (1001, 0, "limit"), (10, -1, "offset")]
)
def test_list_benchmarks_refuses_a_bad_page(
    world: World, web: Principal, limit: int, offset: int, place: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        world.do(web, lifecycle.list_benchmarks, limit=limit, offset=offset)
    assert [error["loc"] for error in err.value.errors] == [[place]]


@pytest.mark.both_backends
def test_list_shows_joined_benchmarks_but_not_after_removal(world: World, cast: Cast) -> None:
    part = Principal.web(cast.participant)
    listed = [v.id for v in world.do(part, lifecycle.list_benchmarks, mine_only=True)]
    assert listed == [cast.bm]
    owner = Principal.web(cast.owner)
    world.do(owner, members.set_participant_status, cast.bm, cast.participant, "removed")
    assert world.do(part, lifecycle.list_benchmarks) == []
    assert world.do(Principal.web(cast.stranger), lifecycle.list_benchmarks) == []


# --- previewing and applying changes -----------------------------------------------------------


def test_preview_returns_the_diff_and_applies_nothing(
    world: World, owner: str, web: Principal
) -> None:
    bm = world.benchmark(owner, QA)
    new = questions_of(QA)
    new[0]["answer"] = ["Paris", "Paris, France"]
    new.append({"prompt": "Capital of Peru?", "answer": "Lima", "tags": ["americas"]})
    before = counts(world)
    preview = world.do(
        web, lifecycle.preview_benchmark_change, bm, {"title": "World capitals", "questions": new}
    )
    assert preview.benchmark_id == bm
    assert preview.metadata == {"title": {"before": "Capitals", "after": "World capitals"}}
    assert preview.questions == {
        "added": [
            {
                "position": 2,
                "question": {
                    "prompt": "Capital of Peru?",
                    "tags": ["americas"],
                    "answer": ["Lima"],
                },
            }
        ],
        "removed": [],
        "changed": [
            {
                "position": 0,
                "before": FRANCE,
                "after": {**FRANCE, "answer": ["Paris", "Paris, France"]},
            }
        ],
        "count_after": 3,
    }
    assert (preview.version_before, preview.version_after, preview.warnings) == (1, 2, [])
    assert counts(world) == before
    view = world.do(web, lifecycle.get_benchmark, bm)
    assert (view.title, view.version, view.question_count) == ("Capitals", 1, 2)
    assert world.do(web, lifecycle.list_questions, bm) == [
        {"position": 0, **FRANCE},
        {"position": 1, **JAPAN},
    ]


@pytest.mark.both_backends
def test_preview_reports_removals_at_their_old_positions(
    world: World, owner: str, web: Principal
) -> None:
    bm = world.benchmark(owner, MCQ)
    preview = world.do(
        web, lifecycle.preview_benchmark_change, bm, {"questions": questions_of(MCQ)[1:]}
    )
    assert preview.metadata == {}
    assert preview.questions == {
        "added": [],
        "removed": [{"position": 0, "question": SKY}],
        "changed": [],
        "count_after": 1,
    }
    assert (preview.version_before, preview.version_after) == (1, 2)


def test_preview_of_metadata_only_keeps_the_version(
    world: World, owner: str, web: Principal
) -> None:
    bm = world.benchmark(owner, QA)
    preview = world.do(
        web,
        lifecycle.preview_benchmark_change,
        bm,
        {"description": "Cities of the world", "questions": questions_of(QA)},
    )
    assert preview.metadata == {"description": {"before": "", "after": "Cities of the world"}}
    assert preview.questions is None
    assert (preview.version_before, preview.version_after) == (1, 1)


def test_preview_validates_like_edit(world: World, owner: str, web: Principal) -> None:
    bm = world.benchmark(owner, MCQ)
    new = questions_of(MCQ)
    new[1]["answer"] = "C"
    with pytest.raises(InvalidInput) as err:
        world.do(web, lifecycle.preview_benchmark_change, bm, {"questions": new})
    assert [e["loc"] for e in err.value.errors] == [["questions", 1, "answer"]]
    with pytest.raises(InvalidInput) as err:
        world.do(web, lifecycle.preview_benchmark_change, bm, {"format": "qa"})
    assert [e["loc"] for e in err.value.errors] == [["format"]]


@pytest.mark.both_backends
def test_edit_applies_the_previewed_change_and_bumps_the_version(
    world: World, owner: str, web: Principal, clock: ManualClock
) -> None:
    bm = world.benchmark(owner, QA)
    new = [questions_of(QA)[1], {"prompt": "Capital of Peru?", "answer": "Lima"}]
    change = {"title": "World capitals", "questions": new}
    preview = world.do(web, lifecycle.preview_benchmark_change, bm, change)
    clock.advance(hours=1)
    view, applied = world.do(web, lifecycle.edit_benchmark, bm, change)
    assert applied == preview
    assert applied.questions == {
        "added": [
            {
                "position": 1,
                "question": {"prompt": "Capital of Peru?", "tags": [], "answer": ["Lima"]},
            }
        ],
        "removed": [{"position": 0, "question": FRANCE}],
        "changed": [],
        "count_after": 2,
    }
    assert (view.title, view.version, view.question_count) == ("World capitals", 2, 2)
    assert utc(view.updated_at) == clock.now()
    assert world.do(web, lifecycle.list_questions, bm) == [
        {"position": 0, **JAPAN},
        {"position": 1, "prompt": "Capital of Peru?", "tags": [], "answer": ["Lima"]},
    ]
    again = world.do(web, lifecycle.get_benchmark, bm)
    assert (again.title, again.version) == ("World capitals", 2)


@pytest.mark.both_backends
def test_every_question_change_bumps_the_version_once(
    world: World, owner: str, web: Principal
) -> None:
    bm = world.benchmark(owner, MCQ)
    new = questions_of(MCQ)
    new[0]["choices"] = ["Green", "Blue", "Red", "Violet"]
    assert world.do(web, lifecycle.edit_benchmark, bm, {"questions": new})[0].version == 2
    new[0]["tags"] = ["nature"]
    assert world.do(web, lifecycle.edit_benchmark, bm, {"questions": new})[0].version == 3
    assert world.do(web, lifecycle.edit_benchmark, bm, {"questions": []})[0].version == 4
    assert world.do(web, lifecycle.get_benchmark, bm).question_count == 0


def test_metadata_only_edit_keeps_the_version_and_the_questions(
    world: World, owner: str, web: Principal
) -> None:
    bm = world.benchmark(owner, MCQ)
    view, preview = world.do(
        web, lifecycle.edit_benchmark, bm, {"title": "Hues", "description": "Easy ones"}
    )
    assert (view.title, view.description, view.version) == ("Hues", "Easy ones", 1)
    assert preview.questions is None
    assert preview.metadata == {
        "title": {"before": "Colours", "after": "Hues"},
        "description": {"before": "", "after": "Easy ones"},
    }
    assert world.do(web, lifecycle.list_questions, bm) == KEYED_MCQ


def test_edit_returns_duplicate_warnings(world: World, owner: str, web: Principal) -> None:
    bm = world.benchmark(owner, QA)
    new = [*questions_of(QA), {"prompt": "capital of france?", "answer": "Paris"}]
    view, preview = world.do(web, lifecycle.edit_benchmark, bm, {"questions": new})
    assert preview.warnings == [
        {"loc": ["questions", 2, "prompt"], "msg": "same prompt as question 1"}
    ]
    assert (view.version, view.question_count) == (2, 3)


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"title": "Colours"},
        {"title": "  Colours  ", "description": ""},
        {"questions": copy.deepcopy(MCQ["questions"])},
        # The same key written as the choice's text is the same question.
        {"questions": [{**MCQ["questions"][0], "answer": "Blue"}, MCQ["questions"][1]]},
    ],
    ids=["empty", "same title", "same metadata", "same questions", "same key as text"],
)
def test_a_change_that_changes_nothing_is_a_conflict(
    world: World, owner: str, web: Principal, change: dict[str, Any]
) -> None:
    bm = world.benchmark(owner, MCQ)
    before = counts(world)
    with pytest.raises(Conflict) as err:
        world.do(web, lifecycle.edit_benchmark, bm, change)
    assert type(err.value) is Conflict
    assert counts(world) == before
    assert world.do(web, lifecycle.get_benchmark, bm).version == 1


@pytest.mark.parametrize(
    ("change", "loc"),
    [
        ({"title": ""}, ["title"]),
        ({"title": "t" * 201}, ["title"]),
        ({"description": "d" * 20_001}, ["description"]),
        ({"questions": [{"prompt": "p", "answer": ""}]}, ["questions", 0, "answer"]),
        ({"visibility": "published"}, ["visibility"]),
    ],
    ids=["empty title", "long title", "long description", "bad question", "unknown field"],
)
def test_an_invalid_edit_changes_nothing(
    world: World, owner: str, web: Principal, change: dict[str, Any], loc: list[Any]
) -> None:
    bm = world.benchmark(owner, QA)
    before = counts(world)
    with pytest.raises(InvalidInput) as err:
        world.do(web, lifecycle.edit_benchmark, bm, {"description": "new", **change})
    assert [e["loc"] for e in err.value.errors] == [loc]
    assert counts(world) == before
    view = world.do(web, lifecycle.get_benchmark, bm)
    assert (view.title, view.description, view.version) == ("Capitals", "", 1)


def test_collaborator_may_edit_but_participant_may_not(world: World, cast: Cast) -> None:
    view, _ = world.do(
        Principal.web(cast.collaborator), lifecycle.edit_benchmark, cast.bm, {"title": "Hues"}
    )
    assert view.title == "Hues"
    with pytest.raises(PermissionDenied):
        world.do(
            Principal.web(cast.participant), lifecycle.edit_benchmark, cast.bm, {"title": "No"}
        )
    with pytest.raises(NotFound):
        world.do(Principal.web(cast.stranger), lifecycle.edit_benchmark, cast.bm, {"title": "No"})
    assert world.do(Principal.web(cast.owner), lifecycle.get_benchmark, cast.bm).title == "Hues"


# --- freezing ---------------------------------------------------------------------------------


def _question_changes(spec: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Adding, removing, rewording, re-keying and reordering the questions of `spec`."""
    base = questions_of(spec)
    rekeyed = questions_of(spec)
    if spec["format"] == "mcq":
        rekeyed[0]["answer"] = "A"
    else:
        rekeyed[0]["answer"] = "Lyon"
    reworded = questions_of(spec)
    reworded[1]["prompt"] += " (again)"
    return [
        [*base, {**base[0], "prompt": "A new one?"}],
        base[:1],
        reworded,
        rekeyed,
        list(reversed(base)),
        [],
    ]


@pytest.mark.parametrize("spec", [QA, MCQ], ids=["qa", "mcq"])
def test_frozen_questions_refuse_every_change_through_preview_and_edit(
    world: World, owner: str, web: Principal, clock: ManualClock, spec: dict[str, Any]
) -> None:
    bm = world.benchmark(owner, spec)
    assert world.do(web, lifecycle.freeze_questions, bm) is True
    assert world.do(web, lifecycle.freeze_questions, bm) is False
    assert world.do(web, lifecycle.get_benchmark, bm).questions_frozen is True
    keyed = world.do(web, lifecycle.list_questions, bm)
    before = counts(world)
    for new in _question_changes(spec):
        for call in (lifecycle.preview_benchmark_change, lifecycle.edit_benchmark):
            with pytest.raises(Frozen) as err:
                world.do(web, call, bm, {"title": "Renamed", "questions": new})
            assert err.value.code == "frozen"
            assert "frozen" in err.value.message
            assert err.value.details["id"] == bm
    assert counts(world) == before
    assert world.do(web, lifecycle.list_questions, bm) == keyed
    view = world.do(web, lifecycle.get_benchmark, bm)
    assert (view.title, view.version) == (spec["title"], 1)


@pytest.mark.parametrize("spec", [QA, MCQ], ids=["qa", "mcq"])
def test_frozen_benchmark_metadata_stays_editable(
    world: World, owner: str, web: Principal, spec: dict[str, Any]
) -> None:
    bm = world.benchmark(owner, spec)
    world.do(web, lifecycle.edit_benchmark, bm, {"questions": questions_of(spec)[:1]})
    world.do(web, lifecycle.freeze_questions, bm)
    view, preview = world.do(
        web, lifecycle.edit_benchmark, bm, {"title": "Renamed", "description": "Now frozen"}
    )
    assert (view.title, view.description, view.version) == ("Renamed", "Now frozen", 2)
    assert preview.questions is None
    # Sending the current list unchanged is not a question change.
    view, _ = world.do(
        web,
        lifecycle.edit_benchmark,
        bm,
        {"title": "Renamed again", "questions": questions_of(spec)[:1]},
    )
    assert (view.title, view.version, view.question_count) == ("Renamed again", 2, 1)


def test_anyone_who_may_run_freezes_it(world: World, cast: Cast) -> None:
    assert world.do(Principal.web(cast.participant), lifecycle.freeze_questions, cast.bm)
    with pytest.raises(Frozen):
        world.do(
            Principal.web(cast.collaborator),
            lifecycle.edit_benchmark,
            cast.bm,
            {"questions": []},
        )


def test_a_stranger_cannot_freeze_a_private_benchmark(world: World, cast: Cast) -> None:
    with pytest.raises(NotFound):
        world.do(Principal.web(cast.stranger), lifecycle.freeze_questions, cast.bm)
    view = world.do(Principal.web(cast.owner), lifecycle.get_benchmark, cast.bm)
    assert view.questions_frozen is False


# --- publishing, unpublishing, deleting -------------------------------------------------------


def test_an_empty_benchmark_cannot_be_published(world: World, owner: str, web: Principal) -> None:
    bm = world.benchmark(owner, qa(title="Empty"))
    before = counts(world)
    with pytest.raises(Conflict):
        world.do(web, lifecycle.publish_benchmark, bm)
    assert counts(world) == before
    assert world.do(web, lifecycle.get_benchmark, bm).visibility == "private"


def test_publish_is_idempotent(
    world: World, owner: str, web: Principal, clock: ManualClock
) -> None:
    bm = world.benchmark(owner, QA)
    published_at = clock.now() + timedelta(minutes=5)
    clock.advance(minutes=5)
    view = world.do(web, lifecycle.publish_benchmark, bm)
    assert (view.visibility, utc(view.published_at)) == ("published", published_at)
    clock.advance(minutes=5)
    before = counts(world)
    again = world.do(web, lifecycle.publish_benchmark, bm)
    assert (again.visibility, utc(again.published_at)) == ("published", published_at)
    assert counts(world) == before


def test_collaborator_may_publish_but_not_unpublish(world: World, cast: Cast) -> None:
    collab = Principal.web(cast.collaborator)
    assert world.do(collab, lifecycle.publish_benchmark, cast.bm).visibility == "published"
    with pytest.raises(PermissionDenied):
        world.do(collab, lifecycle.unpublish_benchmark, cast.bm)
    with pytest.raises(PermissionDenied):
        world.do(collab, lifecycle.delete_benchmark, cast.bm)


def test_unpublish_hides_it_again_and_is_idempotent(world: World, cast: Cast) -> None:
    owner = Principal.web(cast.owner)
    world.do(owner, lifecycle.publish_benchmark, cast.bm)
    assert world.do(Principal.web(cast.stranger), lifecycle.get_benchmark, cast.bm)
    view = world.do(owner, lifecycle.unpublish_benchmark, cast.bm)
    assert (view.visibility, view.published_at) == ("private", None)
    with pytest.raises(NotFound):
        world.do(Principal.web(cast.stranger), lifecycle.get_benchmark, cast.bm)
    before = counts(world)
    assert world.do(owner, lifecycle.unpublish_benchmark, cast.bm).visibility == "private"
    assert counts(world) == before
    assert world.do(Principal.web(cast.participant), lifecycle.get_benchmark, cast.bm)


@pytest.mark.both_backends
def test_deleted_benchmark_is_not_found_for_everyone(world: World, cast: Cast) -> None:
    owner = Principal.web(cast.owner)
    world.do(owner, lifecycle.publish_benchmark, cast.bm)
    world.do(owner, lifecycle.delete_benchmark, cast.bm)
    users = (cast.owner, cast.collaborator, cast.participant, cast.stranger)
    for user in users:
        who = Principal.web(user)
        for call in (lifecycle.get_benchmark, lifecycle.list_questions, phases.list_phases):
            with pytest.raises(NotFound):
                world.do(who, call, cast.bm)
        assert world.do(who, lifecycle.list_benchmarks) == []
    for call, args in [
        (lifecycle.edit_benchmark, ({"title": "x"},)),
        (lifecycle.preview_benchmark_change, ({"title": "x"},)),
        (lifecycle.publish_benchmark, ()),
        (lifecycle.unpublish_benchmark, ()),
        (lifecycle.delete_benchmark, ()),
        (lifecycle.freeze_questions, ()),
    ]:
        with pytest.raises(NotFound):
            world.do(owner, call, cast.bm, *args)
    # Soft delete: the rows stay for the audit trail.
    row = world.ctx_call(OPERATOR, lambda ctx: ctx.session.get(Benchmark, cast.bm))
    assert row is not None and row.deleted_at is not None
    stored = world.ctx_call(
        OPERATOR,
        lambda ctx: ctx.session.scalar(
            select(func.count()).select_from(Question).where(Question.benchmark_id == cast.bm)
        ),
    )
    assert stored == 2


# --- phases -----------------------------------------------------------------------------------


@pytest.mark.both_backends
@pytest.mark.parametrize("spec", [QA, MCQ], ids=["qa", "mcq"])
def test_a_new_benchmark_has_one_phase_with_one_task(
    world: World, owner: str, web: Principal, spec: dict[str, Any]
) -> None:
    bm = world.benchmark(owner, spec)
    [phase] = world.do(web, phases.list_phases, bm)
    assert (phase.name, phase.position, phase.starts_at, phase.ends_at) == ("Main", 0, None, None)
    tasks = world.ctx_call(
        OPERATOR,
        lambda ctx: [
            (t.id, t.name) for t in ctx.session.scalars(select(Task).where(Task.benchmark_id == bm))
        ],
    )
    assert len(tasks) == 1
    assert phase.task_ids == [tasks[0][0]]
    assert tasks[0][1] == "Questions"


@pytest.mark.both_backends
def test_add_and_remove_phases(world: World, owner: str, web: Principal) -> None:
    bm = world.benchmark(owner, QA)
    [main] = world.do(web, phases.list_phases, bm)
    start = datetime(2026, 2, 1, tzinfo=UTC)
    end = datetime(2026, 3, 1, tzinfo=UTC)
    final = world.do(web, phases.add_phase, bm, "  Final  ", start, end, main.task_ids)
    assert (final.name, final.position, final.task_ids) == ("Final", 1, main.task_ids)
    assert (utc(final.starts_at), utc(final.ends_at)) == (start, end)
    bonus = world.do(web, phases.add_phase, bm, "Bonus")
    assert (bonus.position, bonus.task_ids) == (2, [])
    listed = world.do(web, phases.list_phases, bm)
    assert [(p.id, p.name, p.position) for p in listed] == [
        (main.id, "Main", 0),
        (final.id, "Final", 1),
        (bonus.id, "Bonus", 2),
    ]
    assert (utc(listed[1].starts_at), utc(listed[1].ends_at)) == (start, end)
    world.do(web, phases.remove_phase, bm, main.id)
    world.do(web, phases.remove_phase, bm, bonus.id)
    assert [p.id for p in world.do(web, phases.list_phases, bm)] == [final.id]
    before = counts(world)
    with pytest.raises(Conflict):
        world.do(web, phases.remove_phase, bm, final.id)
    assert counts(world) == before
    assert [p.id for p in world.do(web, phases.list_phases, bm)] == [final.id]


def test_a_phase_with_runs_is_not_removed(world: World, owner: str, web: Principal) -> None:
    """Removing it broke the runs' foreign key: a 500 in the web app."""
    bm = world.benchmark(owner, QA)
    [main] = world.do(web, phases.list_phases, bm)
    second = world.do(web, phases.add_phase, bm, "Second", None, None, main.task_ids)
    world.do(web, launch.start_run, bm, "mdl_builtin_echo", phase_id=second.id)
    before = counts(world)
    with pytest.raises(Conflict, match="'Second' has 1 run"):
        world.do(web, phases.remove_phase, bm, second.id)
    assert counts(world) == before
    world.do(web, phases.remove_phase, bm, main.id)  # no runs there: it goes
    assert [p.id for p in world.do(web, phases.list_phases, bm)] == [second.id]


def test_the_last_phase_cannot_be_removed(world: World, owner: str, web: Principal) -> None:
    bm = world.benchmark(owner, MCQ)
    [main] = world.do(web, phases.list_phases, bm)
    with pytest.raises(Conflict):
        world.do(web, phases.remove_phase, bm, main.id)
    assert [p.id for p in world.do(web, phases.list_phases, bm)] == [main.id]


@pytest.mark.parametrize(
    ("name", "days", "loc"),
    [("Late", -1, ["ends_at"]), ("Instant", 0, ["ends_at"]), ("   ", 1, ["name"])],
    ids=["end before start", "end at start", "blank name"],
)
def test_add_phase_refuses_bad_input(
    world: World, owner: str, web: Principal, name: str, days: int, loc: list[str]
) -> None:
    bm = world.benchmark(owner, QA)
    start = datetime(2026, 2, 1, tzinfo=UTC)
    before = counts(world)
    with pytest.raises(InvalidInput) as err:
        world.do(web, phases.add_phase, bm, name, start, start + timedelta(days=days))
    assert [e["loc"] for e in err.value.errors] == [loc]
    # Read beside the "Ends at" field of the page too: in words, not the API's field names.
    assert "_" not in err.value.errors[0]["msg"]
    assert counts(world) == before
    assert len(world.do(web, phases.list_phases, bm)) == 1


@pytest.mark.both_backends
def test_phases_only_use_and_remove_their_own_benchmarks_parts(
    world: World, owner: str, web: Principal
) -> None:
    first = world.benchmark(owner, QA)
    second = world.benchmark(owner, MCQ)
    [other_phase] = world.do(web, phases.list_phases, second)
    world.do(web, phases.add_phase, first, "Extra")
    before = counts(world)
    with pytest.raises(NotFound):
        world.do(web, phases.add_phase, first, "Borrowed", task_ids=other_phase.task_ids)
    with pytest.raises(NotFound):
        world.do(web, phases.remove_phase, first, other_phase.id)
    assert counts(world) == before


def test_only_the_owner_manages_phases(world: World, cast: Cast) -> None:
    [main] = world.do(Principal.web(cast.owner), phases.list_phases, cast.bm)
    with pytest.raises(PermissionDenied):
        world.do(Principal.web(cast.collaborator), phases.add_phase, cast.bm, "Mine")
    with pytest.raises(PermissionDenied):
        world.do(Principal.web(cast.collaborator), phases.remove_phase, cast.bm, main.id)
    with pytest.raises(NotFound):
        world.do(Principal.web(cast.stranger), phases.add_phase, cast.bm, "Mine")


@pytest.mark.both_backends
@pytest.mark.parametrize(
    ("question", "loc"),
    [
        ({"prompt": "a\x00b", "answer": "x"}, ["questions", 0, "prompt"]),
        (
            {"prompt": "ok", "answer": "x", "metadata": {"w": float("nan")}},
            ["questions", 0, "metadata", "w"],
        ),
    ],
)
def test_values_no_database_keeps_are_refused_at_every_door(
    world: World, question: dict[str, Any], loc: list[Any]
) -> None:
    owner = world.user("nul@example.com")
    with pytest.raises(InvalidInput) as err:
        world.do(
            Principal.web(owner),
            lifecycle.create_benchmark,
            {"title": "t", "format": "qa", "questions": [question]},
        )
    assert err.value.errors[0]["loc"] == loc


def test_question_notes_are_shown_to_the_team_only(world: World) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    noted = {"prompt": "2+2?", "answer": "4", "metadata": {"source": "primer, p. 3"}}
    bm = world.benchmark(ana, {"title": "Notes", "format": "qa", "questions": [noted]})
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    mine = world.do(Principal.web(ana), lifecycle.list_questions, bm)
    assert mine[0]["metadata"] == {"source": "primer, p. 3"}
    theirs = world.do(Principal.web(bob), lifecycle.list_questions, bm)
    assert "metadata" not in theirs[0] and "answer" not in theirs[0]


def test_a_published_benchmark_keeps_at_least_one_question(world: World, web: Principal) -> None:
    """Publishing refuses an empty benchmark; emptying one after publishing (an edit, or its
    last question removed) is refused the same way and changes nothing."""
    bm = world.benchmark(web.user_id or "", QA)
    world.do(web, lifecycle.publish_benchmark, bm)
    with pytest.raises(Conflict, match="keeps at least one question"):
        world.do(web, lifecycle.edit_benchmark, bm, {"questions": []})
    world.do(web, question_edits.remove_question, bm, 0)
    with pytest.raises(Conflict, match="keeps at least one question"):
        world.do(web, question_edits.remove_question, bm, 0)
    assert len(world.do(web, lifecycle.list_questions, bm)) == 1
    world.do(web, lifecycle.unpublish_benchmark, bm)
    world.do(web, question_edits.remove_question, bm, 0)  # a private draft may be empty
