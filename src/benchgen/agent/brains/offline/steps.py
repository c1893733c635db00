"""The offline planner's next step for each kind of request, given the tool results so far this
turn: more tool calls, or the reply. Every step is a pure function of the request and results."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchgen.agent.brains.offline import render, run_words
from benchgen.agent.brains.offline.forms import read_part
from benchgen.agent.brains.offline.parse import Intent, find, find_id, mentioned, words
from benchgen.agent.brains.offline.questions import Draft, read_titled
from benchgen.agent.brains.offline.run_words import read_run_words, unread_reply
from benchgen.agent.never import refusal
from benchgen.core.config import Settings
from benchgen.core.permissions import Action
from benchgen.core.text import plural

Call = tuple[str, dict[str, Any]]
Step = str | list[Call]
MAX_OPTIONS = 10
MAX_LABEL_NAME = 60
MODEL_KEYS = ("name", "endpoint_model", "id")
TITLE_KEYS = ("title", "id")
# The words of a run request that leave the model open ("run something on Capitals").
_OPEN_CHOICE = frozenset(("any", "some", "something", "anything", "best", "good", "whatever"))
_SLOTS = re.compile(r"(?:^|\s+)(?:on|against|over|with|using|in)\s+", re.I)
# "show my runs on Capitals": the benchmark the runs are on, named after them.
_RUNS_ON = re.compile(r"\bruns?\b.*?\s(?:on|of|for|in)\s+(?P<bm>.+?)[\s.!?]*$", re.I)
# Where the web page for an A13 action lives: the kind of id its link is built from.
_TARGETS = {
    Action.RUN_EDIT_SCORE: "run",
    Action.LEADERBOARD_MANAGE: "run",
    Action.MODEL_DELETE: "mdl",
    Action.DATASET_DELETE: "ds",
    Action.TRAINING_DELETE: "tr",
    Action.BILLING_MANAGE: "",
    Action.TOKENS_MANAGE: "",
    Action.NOTIFICATIONS_MANAGE: "",
}


@dataclass
class Ask:
    """One request and what the tools have answered so far this turn."""

    text: str
    settings: Settings
    history: list[tuple[str, str]] = field(default_factory=list)
    results: list[tuple[str, Any]] = field(default_factory=list)

    def result(self, tool: str) -> Any:
        """The latest result of `tool` this turn, or None when it was not called yet."""
        for name, content in reversed(self.results):
            if name == tool:
                return content
        return None


def step_list(ask: Ask, intent: Intent) -> Step:
    """List benchmarks, models or runs."""
    tool = intent.kind
    got = ask.result(tool)
    if got is None:
        args: dict[str, Any] = {}
        if tool == "list_benchmarks":
            args = {"mine_only": intent.mine}
        elif tool == "list_runs":
            wanted = runs_filter(ask)
            if not isinstance(wanted, dict):
                return wanted
            args = wanted
        return [(tool, args)]
    if tool == "list_benchmarks":
        return render.benchmarks(got, intent.mine)
    return render.models(got) if tool == "list_models" else render.runs(got)


def runs_filter(ask: Ask) -> dict[str, Any] | Step:
    """The `list_runs` arguments for the runs a request means: those on the benchmark it names
    (by id, or by title after "runs on"), else all; or the step that finds that benchmark."""
    benchmark_id = find_id(ask.text, "bm")
    if benchmark_id is not None:
        return {"benchmark_id": benchmark_id}
    on = _RUNS_ON.search(ask.text)
    if on is None:
        return {}
    listed = ask.result("list_benchmarks")
    if listed is None:
        return [("list_benchmarks", {"mine_only": False})]
    found = find(on.group("bm"), listed["benchmarks"], TITLE_KEYS)
    if len(found) == 1:
        return {"benchmark_id": found[0]["id"]}
    names = ", ".join(titled(b) for b in (found or listed["benchmarks"])[:MAX_OPTIONS])
    known = f" Benchmarks you can see: {names}." if names else ""
    return f'I found no single benchmark called "{on.group("bm")}".{known}'


def step_show(ask: Ask, intent: Intent) -> Step:
    """Show one benchmark, named by id or title; offer the candidates when it is unclear."""
    shown = ask.result("show_benchmark")
    if shown is not None:
        return render.benchmark(shown)
    benchmark_id = find_id(ask.text, "bm")
    if benchmark_id is None:
        listed = ask.result("list_benchmarks")
        if listed is None:
            return [("list_benchmarks", {"mine_only": False})]
        found = find(intent.phrase, listed["benchmarks"], TITLE_KEYS)
        if len(found) != 1:
            return _offer_benchmarks(intent.phrase, found or listed["benchmarks"], "show", "Show")
        benchmark_id = found[0]["id"]
    return [("show_benchmark", {"benchmark_id": benchmark_id, "limit": render.MAX_SHOWN})]


def step_status(ask: Ask, intent: Intent) -> Step:
    """Whether a run is done and how it did: the one named, else the latest."""
    got = ask.result("run_status")
    if got is not None:
        return render.status(got)
    run_id = find_id(ask.text, "run")
    return [("run_status", {"run_id": run_id} if run_id else {})]


def step_results(ask: Ask, intent: Intent) -> Step:
    """A run's per-question results: the one named, else the latest."""
    got = ask.result("run_results")
    if got is not None:
        return render.results(got)
    run_id = find_id(ask.text, "run")
    if run_id is None:
        latest = ask.result("run_status")
        if latest is None:
            return [("run_status", {})]
        if not latest.get("run"):
            return render.status(latest)
        run_id = latest["run"]["id"]
    return [("run_results", {"run_id": run_id, "limit": 20})]


def step_publish(ask: Ask, intent: Intent) -> Step:
    """Propose publishing the user's benchmark; offer their unpublished ones when unclear."""
    benchmark_id = find_id(ask.text, "bm")
    if benchmark_id is None:
        listed = ask.result("list_benchmarks")
        if listed is None:
            return [("list_benchmarks", {"mine_only": True})]
        found = find(intent.phrase, listed["benchmarks"], TITLE_KEYS)
        if len(found) != 1:
            pool = found or listed["benchmarks"]
            unpublished = [b for b in pool if b.get("visibility") != "published"]
            if not unpublished:
                return _nothing_to_publish(listed["benchmarks"])
            return _offer_benchmarks(intent.phrase, unpublished, "publish", "Publish")
        benchmark_id = found[0]["id"]
    return [("propose_publish", {"benchmark_id": benchmark_id})]


def _nothing_to_publish(mine: list[dict[str, Any]]) -> str:
    if not mine:
        return "You have no benchmarks to publish yet."
    return "All your benchmarks are already published; there is nothing to publish."


def _offer_benchmarks(phrase: str, pool: list[dict[str, Any]], verb: str, label: str) -> Step:
    if not pool:
        return render.benchmarks({"benchmarks": []}, mine=verb == "publish")
    lead = f'I found no single benchmark called "{phrase.strip()}". ' if phrase.strip() else ""
    options = [f"{label} {titled(b)}" for b in pool[:MAX_OPTIONS]]
    return [
        ("ask_user", {"question": f"{lead}Which benchmark should I {verb}?", "options": options})
    ]


def step_never(ask: Ask, intent: Intent) -> Step:
    """A13: refuse, with the page where the user can do it, naming the object when known."""
    assert intent.action is not None
    kind = _TARGETS.get(intent.action, "bm")
    object_id = find_id(ask.text, kind) if kind else None
    if object_id is None and kind == "bm":
        listed = ask.result("list_benchmarks")
        if listed is None:
            return [("list_benchmarks", {"mine_only": True})]
        named = mentioned(ask.text, listed.get("benchmarks", []), ("title",))
        object_id = named[0]["id"] if len(named) == 1 else None
    return refusal(ask.settings, intent.action, object_id or "")


def step_create(ask: Ask, intent: Intent) -> Step:
    """Propose a qa or mcq benchmark from the questions in the message; ask for a title first."""
    draft = intent.draft
    if draft is None:
        question = (
            f"{render.QUESTIONS_QUESTION} Write them in your message, one per line, for "
            f"example:\n{render.EXAMPLE_QA}\nor, with choices:\n{render.EXAMPLE_MCQ}"
        )
        then = read_titled(ask.text)[1]
        if then:
            question += f'\n\nYou also asked "{render.short(then)}": {render.ONE_AT_A_TIME}'
        return [("ask_user", {"question": question})]
    count = f"{len(draft.questions)} {draft.format} question{'s' * (len(draft.questions) != 1)}"
    if draft.problems:
        return f"I read {count}, but " + "; ".join(draft.problems) + ". Nothing was proposed."
    if not draft.title:
        question = f"{render.TITLE_QUESTION} I read {count}; reply with just the title."
        return [("ask_user", {"question": question})]
    if draft.then:
        return _create_first(draft, count)
    arguments = {"title": draft.title, "format": draft.format, "questions": draft.questions}
    return [("propose_create_benchmark", arguments)]


def create_label(draft: Draft) -> str:
    """The button that creates a benchmark whose request went on with another one; pressed, it
    is read with the message before it (see `planner`)."""
    return f'Create "{draft.title}" from the {plural(len(draft.questions), "question")} you wrote'


def _create_first(draft: Draft, count: str) -> Step:
    """Two requests in one message: offer the creation as a button and say the second one is to
    be asked once it is done, rather than glue it into the title or drop it unsaid."""
    then = render.short(draft.then)
    question = (
        f'Your message asks for two things: create "{draft.title}" with {count}, and "{then}". '
        f'I do one request at a time: choose the creation below, then ask me "{then}" once it '
        "is done."
    )
    return [("ask_user", {"question": question, "options": [create_label(draft)]})]


def step_run(ask: Ask, intent: Intent) -> Step:
    """Propose a run (on the part of the benchmark asked for, if any) when both the model and
    the benchmark are clear; else offer candidates, whose buttons keep the part in words."""
    written = read_run_words(intent.phrase)
    if written.unread:
        # Proposing with the defaults instead would run something the user did not ask for.
        return unread_reply(written.unread)
    part = read_part(written.rest)
    if part.problems:
        return "I could not read that subset: " + "; ".join(part.problems) + "."
    extra: dict[str, Any] = {"subset": part.subset} if part.subset else {}
    if written.settings:
        extra["settings"] = written.settings
    model_id, benchmark_id = find_id(ask.text, "mdl"), find_id(ask.text, "bm")
    if model_id and benchmark_id:
        return [("propose_run", {"benchmark_id": benchmark_id, "model_id": model_id, **extra})]
    # Both lists, even for a side given by id: the question then names it in words.
    needed: list[Call] = [("list_models", {}), ("list_benchmarks", {"mine_only": False})]
    if any(ask.result(tool) is None for tool, _ in needed):
        return needed
    first, second = _slots(part.phrase)
    # "run A on B" names the model first; "run B with A" the other way round; a phrase with no
    # connector ("run Capitals") may name either.
    orders = [(first, second), (second, first)] if second else [(first, first)]
    tried = [
        (
            _pick(ask, "list_models", "models", model_id, model_part, MODEL_KEYS),
            _pick(ask, "list_benchmarks", "benchmarks", benchmark_id, benchmark_part, TITLE_KEYS),
        )
        for model_part, benchmark_part in orders
    ]
    for models, benchmarks in tried:
        if len(models) == 1 and len(benchmarks) == 1:
            arguments = {"benchmark_id": benchmarks[0]["id"], "model_id": models[0]["id"]}
            return [("propose_run", {**arguments, **extra})]
    # The buttons keep the settings and the part in words: a label is read back as a request.
    how = run_words.said(written.settings)
    lead = _no_such_model(first if second else "", tried[0][0])
    return _offer_run(ask, *tried[0], part.said, how, lead)


def _no_such_model(model_part: str, models: list[dict[str, Any]]) -> str:
    """ "run gpt-4 on Capitals" where no model is called gpt-4: said plainly before the models
    that can run are offered, rather than offered as if no model had been named."""
    if models or not words(model_part) - _OPEN_CHOICE:
        return ""
    return f'There is no model called "{model_part.strip()}" here'


def _slots(phrase: str) -> tuple[str, str]:
    """ "first-choice on Capitals" → the model's part and the benchmark's part."""
    parts = _SLOTS.split(phrase.strip(), maxsplit=1)
    return (parts[0], parts[1]) if len(parts) == 2 else (phrase, "")


def _pick(
    ask: Ask, tool: str, key: str, given: str | None, part: str, keys: tuple[str, ...]
) -> list[dict[str, Any]]:
    """The candidates for one side of a run: the id given, else those its part names; several
    means it is unclear, none that it was left open."""
    entries: list[dict[str, Any]] = ask.result(tool)[key]
    if given is not None:
        listed = [entry for entry in entries if entry["id"] == given]
        return listed or [{"id": given, "name": given, "title": given}]
    return find(part, entries, keys)


def _offer_run(
    ask: Ask,
    models: list[dict[str, Any]],
    benchmarks: list[dict[str, Any]],
    said: str,
    how: str,
    lead: str,
) -> Step:
    if len(benchmarks) != 1:
        model = models[0] if len(models) == 1 else None
        offered = _offer_benchmarks_for(ask, model, benchmarks, said, how)
        if lead and isinstance(offered, list):
            (tool, args), *rest = offered
            return [(tool, {**args, "question": f"{lead}. {args['question']}"}), *rest]
        return offered
    benchmark = benchmarks[0]
    listed = ask.result("list_models")["models"]
    if not listed:
        return "There are no models you can run yet."
    # Only models that can answer its questions: a choice-only baseline is no use on qa.
    pool = _answering(models, benchmark) or _answering(listed, benchmark)
    if not pool:
        return f"None of the models you can run answers {titled(benchmark)}'s questions."
    options = [f"Run {_named(m)}{how} on {said}{titled(benchmark)}" for m in pool[:MAX_OPTIONS]]
    question = f"Which model should I run on {titled(benchmark)}?"
    if lead:
        question = f"{lead}; these can run on {titled(benchmark)}: choose one."
    return [("ask_user", {"question": question, "options": options})]


def _offer_benchmarks_for(
    ask: Ask,
    model: dict[str, Any] | None,
    benchmarks: list[dict[str, Any]],
    said: str,
    how: str,
) -> Step:
    listed = ask.result("list_benchmarks")["benchmarks"]
    if not listed:
        return "There is no benchmark to run on yet. " + render.benchmarks({"benchmarks": []}, True)
    pool = benchmarks or listed
    if model is not None:
        pool = [b for b in pool if _answers(model, b)] or [b for b in listed if _answers(model, b)]
        if not pool:
            formats = " or ".join(model.get("formats") or ["no"])
            return f"{_named(model)} answers only {formats} benchmarks, and you can see none."
    named = f" {_named(model)}" if model is not None else ""
    options = [f"Run{named}{how} on {said}{titled(b)}" for b in pool[:MAX_OPTIONS]]
    question = f"Which benchmark should I run{named or ' it'} on?"
    return [("ask_user", {"question": question, "options": options})]


def _answering(models: list[dict[str, Any]], benchmark: dict[str, Any]) -> list[dict[str, Any]]:
    return [model for model in models if _answers(model, benchmark)]


def _answers(model: dict[str, Any], benchmark: dict[str, Any]) -> bool:
    """Whether the catalogue says `model` can answer `benchmark`'s format; an id the user typed
    that no list holds carries neither, and is left to the launch's own check."""
    formats, fmt = model.get("formats"), benchmark.get("format")
    return formats is None or fmt is None or fmt in formats


def _named(model: dict[str, Any]) -> str:
    return _labelled(model["name"], model["id"])


def titled(benchmark: dict[str, Any]) -> str:
    """A benchmark's title and id, as a button or a list shows it."""
    return _labelled(benchmark["title"], benchmark["id"])


def _labelled(name: str, id_: str) -> str:
    """A name and its id for a button; long names are cut so the label (at most 200 characters,
    and read back as the next request) keeps its ids."""
    if name == id_:
        return id_
    short = name if len(name) <= MAX_LABEL_NAME else name[: MAX_LABEL_NAME - 1] + "…"
    return f"{short} ({id_})"


STEPS: dict[str, Callable[[Ask, Intent], Step]] = {
    "list_benchmarks": step_list,
    "list_models": step_list,
    "list_runs": step_list,
    "show": step_show,
    "results": step_results,
    "publish": step_publish,
    "never": step_never,
    "create": step_create,
    "ask_questions": step_create,
    "run": step_run,
}
