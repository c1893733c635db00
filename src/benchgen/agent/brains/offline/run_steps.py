"""The offline planner's steps for a run request: read the model, the benchmark, the part of it
and the settings asked for, and propose the run when both are clear, else offer candidates."""

from __future__ import annotations

import re
from collections.abc import Callable
from difflib import SequenceMatcher
from typing import Any

from benchgen.agent.brains.offline import render, run_words
from benchgen.agent.brains.offline.ask import Ask, Call, Step
from benchgen.agent.brains.offline.forms import read_part
from benchgen.agent.brains.offline.labels import MAX_OPTIONS, named, titled
from benchgen.agent.brains.offline.naming import MODEL_KEYS, TITLE_KEYS, find, find_id, words
from benchgen.agent.brains.offline.parse import Intent, read_intent
from benchgen.agent.brains.offline.run_words import read_run_words, unread_reply
from benchgen.agent.brains.offline.second_requests import split_off

# The words of a run request that leave the model open ("run something on Capitals").
_OPEN_CHOICE = frozenset(("any", "some", "something", "anything", "best", "good", "whatever"))
# Words that point at a benchmark without naming one ("on it", "on all my benchmarks").
_POINTING = frozenset(
    (*_OPEN_CHOICE, "it", "this", "that", "them", "one", "all", "every", "everything", "my"),
)
_BENCHMARK_WORDS = frozenset(("the", "benchmark", "benchmarks", "quiz", "test", "of", "and"))
_ABOUT_THE_RUN = ("unknown", "status", "results")
_SLOTS = re.compile(r"(?:^|\s+)(?:on|against|over|with|using|in)\s+", re.I)


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
    missing = [(tool, args) for tool, args in needed if ask.result(tool) is None]
    if missing:
        return missing
    # "run random on Capitals and then publish it": the second request is never read as names;
    # "… and tell me the score" asks for the run's outcome, which its card and status give.
    named_part, then = split_off(part.phrase)
    then = "" if read_intent(then).kind in _ABOUT_THE_RUN else then
    first, second = _slots(named_part)
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
    # The buttons keep the settings and the part in words: a label is read back as a request.
    how = run_words.said(written.settings)
    for models, benchmarks in tried:
        if len(models) == 1 and len(benchmarks) == 1:
            if then:
                label = f"Run {named(models[0])}{how} on {part.said}{titled(benchmarks[0])}"
                return _run_first(label, then)
            arguments = {"benchmark_id": benchmarks[0]["id"], "model_id": models[0]["id"]}
            return [("propose_run", {**arguments, **extra})]
    missing_model = _no_such_model(first if second else "", tried[0][0])
    missing_benchmark = _no_such_benchmark(second, tried[0][1])
    lead = ". ".join(said for said in (missing_model, missing_benchmark) if said)
    typed = (first if missing_model else "", second if missing_benchmark else "")
    return _offer_run(ask, *tried[0], part.said, how, lead, typed)


def _run_first(label: str, then: str) -> Step:
    """Two requests in one message: offer the run as a button and say the second one is to be
    asked once it is done, rather than drop it unsaid."""
    then = render.short(then)
    question = (
        f'Your message asks for two things: a run, and "{then}". I do one request at a time: '
        f'choose the run below, then ask me "{then}" once it is done.'
    )
    return [("ask_user", {"question": question, "options": [label]})]


def _no_such_model(model_part: str, models: list[dict[str, Any]]) -> str:
    """ "run gpt-4 on Capitals" where no model is called gpt-4: said plainly before the models
    that can run are offered, rather than offered as if no model had been named."""
    if models or not words(model_part) - _OPEN_CHOICE:
        return ""
    return f'There is no model called "{model_part.strip()}" here'


def _no_such_benchmark(benchmark_part: str, benchmarks: list[dict[str, Any]]) -> str:
    """ "run random on Captials" where no title holds those words: said plainly, so the
    benchmarks offered next are not taken for a reading of the title typed."""
    if benchmarks or not words(benchmark_part) - _POINTING - _BENCHMARK_WORDS:
        return ""
    return f'There is no benchmark called "{benchmark_part.strip()}" here'


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
    typed: tuple[str, str],
) -> Step:
    """Ask for what is unclear; `typed` is what was written for a model and a benchmark that
    no name holds, the closest of them offered first."""
    if len(benchmarks) != 1:
        model = models[0] if len(models) == 1 else None
        offered = _offer_benchmarks_for(ask, model, benchmarks, said, how, typed[1])
        if lead and isinstance(offered, list):
            (tool, args), *rest = offered
            return [(tool, {**args, "question": f"{lead}. {args['question']}"}), *rest]
        return offered
    benchmark = benchmarks[0]
    listed = ask.result("list_models")["models"]
    if not listed:
        return "There are no models you can run yet."
    # Only models that can answer its questions: a choice-only baseline is no use on qa.
    pool = _answering(models, benchmark) or _answering(_closest_first(listed, typed[0]), benchmark)
    if not pool:
        return f"None of the models you can run answers {titled(benchmark)}'s questions."
    options = [f"Run {named(m)}{how} on {said}{titled(benchmark)}" for m in pool[:MAX_OPTIONS]]
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
    typed: str,
) -> Step:
    listed = ask.result("list_benchmarks")["benchmarks"]
    if not listed:
        return "There is no benchmark to run on yet. " + render.benchmarks({"benchmarks": []}, True)
    pool = benchmarks or _closest_first(listed, typed)
    if model is not None:
        pool = [b for b in pool if _answers(model, b)] or [b for b in listed if _answers(model, b)]
        if not pool:
            formats = " or ".join(model.get("formats") or ["no"])
            return f"{named(model)} answers only {formats} benchmarks, and you can see none."
    who = f" {named(model)}" if model is not None else ""
    options = [f"Run{who}{how} on {said}{titled(b)}" for b in pool[:MAX_OPTIONS]]
    question = f"Which benchmark should I run{who or ' it'} on?"
    return [("ask_user", {"question": question, "options": options})]


def _closest_first(listed: list[dict[str, Any]], typed: str) -> list[dict[str, Any]]:
    """The entries, those whose name is spelled most like what was typed first: a slip
    ("Captials", "radnom") puts the one meant on the first button, and still only a button the
    user presses picks it."""
    typed = typed.casefold().strip()
    if not typed:
        return listed

    def likeness(entry: dict[str, Any]) -> float:
        name = str(entry.get("title") or entry.get("name") or "").casefold()
        return max(SequenceMatcher(None, typed, part).ratio() for part in [name, *name.split()])

    return sorted(listed, key=likeness, reverse=True)


def _answering(models: list[dict[str, Any]], benchmark: dict[str, Any]) -> list[dict[str, Any]]:
    return [model for model in models if _answers(model, benchmark)]


def _answers(model: dict[str, Any], benchmark: dict[str, Any]) -> bool:
    """Whether the catalogue says `model` can answer `benchmark`'s format; an id the user typed
    that no list holds carries neither, and is left to the launch's own check."""
    formats, fmt = model.get("formats"), benchmark.get("format")
    return formats is None or fmt is None or fmt in formats


STEPS: dict[str, Callable[[Ask, Intent], Step]] = {"run": step_run}
