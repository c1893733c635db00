"""The agent's tools: each is one service call made with the turn's credential, nothing more.

There is deliberately no tool for any action in A13 (see `never.py`): a brain that names one gets
"unknown tool" from the loop, and the credential could not carry it anyway.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic_ai import RunContext, Tool

from benchgen.agent import parts
from benchgen.agent.brains.offline.naming import names
from benchgen.agent.state import Staged, TurnState, plain
from benchgen.core.context import Context
from benchgen.core.text import MAX_DESCRIPTION, MAX_TITLE
from benchgen.services import models
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat import proposals
from benchgen.services.runs import launch, results
from benchgen.services.runs.settings import RunSettings, Subset
from benchgen.services.specs import MAX_QUESTIONS, QuestionIn

MAX_OPTIONS = 10
MAX_OPTION_CHARS = 300
MAX_QUESTION_CHARS = 1000
# Every argument has a range or a length: a value outside it is a validation error the brain
# reads and may correct (pydantic-ai retries), never an exception from deeper down.
Id = Annotated[str, Field(min_length=1, max_length=64)]
Offset = Annotated[int, Field(ge=0, le=1_000_000)]
Limit = Annotated[int, Field(ge=1, le=100)]
Search = Annotated[str, Field(max_length=200)]
Title = Annotated[str, Field(max_length=MAX_TITLE)]
Description = Annotated[str, Field(max_length=MAX_DESCRIPTION)]
Questions = Annotated[list[QuestionIn], Field(max_length=MAX_QUESTIONS)]
Option = Annotated[str, Field(min_length=1, max_length=MAX_OPTION_CHARS)]
_BENCHMARK_FIELDS = (
    "id",
    "title",
    "format",
    "visibility",
    "question_count",
    "questions_frozen",
    "roles",
)
_RUN_FIELDS = (
    "id",
    "benchmark_id",
    "model_id",
    "model_name",
    "status",
    "question_count",
    "done_count",
    "error_count",
    "summary",
    "scores",
    "score_edited",
    "estimated_cost",
    "cost",
    "error",
    "created_at",
    "finished_at",
)

Deps = RunContext[TurnState]


def list_benchmarks(ctx: Deps, search: Search = "", mine_only: bool = False) -> Any:
    """List benchmarks the user can see (their own, shared with them, and published ones).

    Args:
        search: words that must appear in the title; empty lists all.
        mine_only: only the user's own and shared benchmarks, not everything published.
    """
    args = {"search": search, "mine_only": mine_only}

    def work(c: Context) -> dict[str, Any]:
        found = lifecycle.list_benchmarks(c, mine_only=mine_only, search=search, limit=50)
        return {"benchmarks": [_pick(plain(b), _BENCHMARK_FIELDS) for b in found]}

    return ctx.deps.call("list_benchmarks", args, work, write=False)


def show_benchmark(ctx: Deps, benchmark_id: Id, offset: Offset = 0, limit: Limit = 50) -> Any:
    """Show one benchmark and a page of its questions (with answers where the user may see them).

    Args:
        benchmark_id: the benchmark's id (bm_…).
        offset: the first question to show, counting from 0.
        limit: how many questions to show (at most 100).
    """
    args = {"benchmark_id": benchmark_id, "offset": offset, "limit": limit}

    def work(c: Context) -> dict[str, Any]:
        shown = lifecycle.get_benchmark(c, benchmark_id)
        window = lifecycle.list_questions(c, benchmark_id, limit=limit, offset=offset)
        return {"benchmark": plain(shown), "questions": plain(window)}

    return ctx.deps.call("show_benchmark", args, work, write=False)


def list_models(ctx: Deps, benchmark_id: Id | None = None) -> Any:
    """List the models the user can run: the platform's catalogue and their own.

    Args:
        benchmark_id: only the models that can answer this benchmark's questions (bm_…).
    """
    args = {"benchmark_id": benchmark_id} if benchmark_id else {}

    def work(c: Context) -> dict[str, Any]:
        return {"models": plain(models.list_models(c, benchmark_id))}

    return ctx.deps.call("list_models", args, work, write=False)


def list_runs(ctx: Deps, benchmark_id: Id | None = None) -> Any:
    """List runs, newest first: those the user launched; with a benchmark, every run on it
    the user may see (on their own benchmark, participants' too).

    Args:
        benchmark_id: only runs on this benchmark (bm_…); omit for the user's own runs.
    """

    def work(c: Context) -> dict[str, Any]:
        # Without a benchmark, "my runs": a participant's run on the user's benchmark is not
        # one of theirs, and "compare my last two runs" compared a stranger's.
        mine = benchmark_id is None
        found = launch.list_runs(c, benchmark_id=benchmark_id, limit=20, mine=mine)
        return {"runs": [_pick(plain(run), _RUN_FIELDS) for run in found]}

    return ctx.deps.call("list_runs", {"benchmark_id": benchmark_id}, work, write=False)


def run_status(ctx: Deps, run_id: Id | None = None) -> Any:
    """Say whether a run is done and how it did; without an id, the user's latest run.

    Args:
        run_id: the run's id (run_…); omit for the latest run.
    """

    def work(c: Context) -> dict[str, Any]:
        if run_id is None:  # the user's own latest: "is it done?" meant a stranger's run
            latest = launch.list_runs(c, limit=1, mine=True)
            if not latest:
                return {"run": None, "message": "The user has no runs yet."}
            return {"run": _pick(plain(latest[0]), _RUN_FIELDS)}
        return {"run": _pick(plain(launch.get_run(c, run_id)), _RUN_FIELDS)}

    return ctx.deps.call("run_status", {"run_id": run_id}, work, write=False)


def run_results(ctx: Deps, run_id: Id, offset: Offset = 0, limit: Limit = 20) -> Any:
    """Show a page of a run's per-question results.

    Args:
        run_id: the run's id (run_…).
        offset: the first question, counting from 0.
        limit: how many results (at most 100).
    """
    args = {"run_id": run_id, "offset": offset, "limit": limit}

    def work(c: Context) -> dict[str, Any]:
        page = results.list_results(c, run_id, limit=limit, offset=offset)
        return {"run": _pick(plain(launch.get_run(c, run_id)), _RUN_FIELDS), "results": plain(page)}

    return ctx.deps.call("run_results", args, work, write=False)


def propose_create_benchmark(
    ctx: Deps,
    title: Title,
    format: Literal["qa", "mcq"],
    questions: Questions,
    description: Description = "",
) -> Any:
    """Propose a new private benchmark. Nothing is created until the user approves the preview.

    Args:
        title: the benchmark's title, as the user gave it.
        format: "qa" (free answers) or "mcq" (choices; the answer is a letter or a choice).
        questions: every question with its answer.
        description: an optional description.
    """
    drafted = [question.model_dump() for question in questions]
    arguments = {"title": title, "format": format, "description": description, "questions": drafted}
    part_size = ctx.deps.part_size
    if len(questions) <= part_size:
        return propose_action(ctx.deps, "propose_create_benchmark", "create_benchmark", arguments)
    # A18: a large benchmark is proposed part by part; the rest waits in the conversation's plan
    # and is proposed as an edit after each approved part, so it is created (and counted
    # against the creation limit) once.
    first = {**arguments, "questions": drafted[:part_size]}
    answer = propose_action(ctx.deps, "propose_create_benchmark", "create_benchmark", first)
    if "proposal_id" in answer:  # this call's proposal, not a refusal
        parts.start_plan(ctx.deps, title, drafted)
    return answer


def propose_edit_benchmark(
    ctx: Deps,
    benchmark_id: Id,
    title: Title | None = None,
    description: Description | None = None,
    questions: Questions | None = None,
) -> Any:
    """Propose a change to a benchmark; the user sees the validated diff and decides.

    Args:
        benchmark_id: the benchmark's id (bm_…).
        title: a new title, or omit to keep it.
        description: a new description, or omit to keep it.
        questions: the full new list of questions, or omit to keep them.
    """
    change: dict[str, Any] = {"title": title, "description": description}
    if questions is not None:
        change["questions"] = [question.model_dump() for question in questions]
    arguments = {"benchmark_id": benchmark_id, "change": change}
    return propose_action(ctx.deps, "propose_edit_benchmark", "edit_benchmark", arguments)


def propose_publish(ctx: Deps, benchmark_id: Id) -> Any:
    """Propose publishing a benchmark, which makes it visible to everyone.

    Args:
        benchmark_id: the benchmark's id (bm_…).
    """
    arguments = {"benchmark_id": benchmark_id}
    return propose_action(ctx.deps, "propose_publish", "publish_benchmark", arguments)


def propose_run(
    ctx: Deps,
    benchmark_id: Id,
    model_id: Id,
    settings: RunSettings | None = None,
    subset: Subset | None = None,
) -> Any:
    """Propose running a model on a benchmark; the user sees the estimated credits, the
    settings and the subset, and decides. When the user did not say which model or benchmark,
    ask with `ask_user` first.

    Args:
        benchmark_id: the benchmark's id (bm_…).
        model_id: the model's id (mdl_…).
        settings: only what the user asked for (temperature, samples, few-shot…); omit for the
            defaults.
        subset: only when the user asked for part of the benchmark, e.g. the first 20
            questions: {"kind": "first", "n": 20}.
    """
    arguments: dict[str, Any] = {"benchmark_id": benchmark_id, "model_id": model_id}
    if settings is not None:
        arguments["settings"] = settings.model_dump()
    if subset is not None:
        arguments["subset"] = subset.model_dump()
    return propose_action(ctx.deps, "propose_run", "start_run", arguments)


def ask_user(
    ctx: Deps,
    question: Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS)],
    options: Annotated[list[Option], Field(max_length=MAX_OPTIONS)] | None = None,
) -> Any:
    """Ask the user something and end the turn. Options become buttons; choosing one only
    answers the question, it never approves anything.

    Args:
        question: the question, in plain words.
        options: up to 10 short choices; omit for a free answer.
    """
    state = ctx.deps
    args = {"question": question, "options": options or []}
    with state.asking:
        if state.waiting:
            return state.remember("ask_user", args, "waiting_for_user")
        state.log("ask_user", args)
        # The question becomes the reply and the options button labels: finish_turn screens
        # both.
        state.question = question
        state.options = [option for option in options or [] if option.strip()]
    return {"asked": True, "note": "The user sees the question; the turn ends."}


def propose_action(state: TurnState, tool: str, kind: str, arguments: dict[str, Any]) -> Any:
    with state.asking:
        if state.waiting:
            return state.remember(tool, arguments, "waiting_for_user")
        return _proposed(state, tool, kind, arguments)


def _proposed(state: TurnState, tool: str, kind: str, arguments: dict[str, Any]) -> Any:
    # Staged: a bundle change's programs run between the check and the short write that stores
    # the proposal, with no unit of work open.
    def store(c: Context, checked: proposals.Checked) -> dict[str, Any]:
        agent_pick = kind == "start_run" and _agent_pick(c, state.request, arguments["model_id"])
        made = proposals.propose(
            c, state.conversation_id, kind, arguments, agent_pick=agent_pick, checked=checked
        )
        state.proposal = made
        return {
            "proposal_id": made.id,
            "kind": made.kind,
            "preview": made.preview["text"],
            "note": "Shown to the user with approve and decline buttons. Nothing has been done; "
            "the turn ends here and the user's next message decides.",
        }

    def check(c: Context) -> proposals.Pending:
        return proposals.check_proposal(c, state.conversation_id, kind, arguments)

    return state.call(tool, arguments, Staged(check, proposals.Pending.inspect, store))


def _agent_pick(c: Context, request: str, model_id: str) -> bool:
    # Decided by code from the user's own words, never by the brain's say-so: a model the user
    # named neither by id nor by name is marked as the agent's pick in the preview (§2.2). The
    # rule is the offline planner's own ("run random on …" names "Baseline: seeded random"), so
    # the preview never calls a model the planner matched by name the agent's pick.
    if _named(model_id, request.casefold()):
        return False
    listed = plain(models.list_models(c, None))
    return not names(request, model_id, listed, _MODEL_KEYS)


_MODEL_KEYS = ("name", "endpoint_model", "id")


def _named(name: str, words: str) -> bool:
    # Whole, with hyphens and inner dots part of a name: "GPT-4" is not named by "GPT-4o",
    # "GPT-4-turbo" or "GPT-4.1", nor "mini" by "gpt-4o-mini".
    found = rf"(?<![\w.-]){re.escape(name.casefold())}(?![\w-]|\.\w)"
    return re.search(found, words) is not None


def _pick(data: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {name: data[name] for name in fields if name in data}


TOOLS: list[Tool[TurnState]] = [
    Tool(function, takes_ctx=True)
    for function in (
        list_benchmarks,
        show_benchmark,
        list_models,
        list_runs,
        run_status,
        run_results,
        propose_create_benchmark,
        propose_edit_benchmark,
        propose_publish,
        propose_run,
        ask_user,
    )
]
