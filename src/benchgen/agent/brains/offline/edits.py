"""The offline planner's benchmark edits, each proposed with `propose_edit_benchmark` so the
user sees the validated diff: rename, a new description, and adding, replacing or removing
questions. Adding and removing read every current question first, since the tool takes the
full new list; the service refuses changes to frozen questions, and the reply says why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchgen.agent.brains.offline import render
from benchgen.agent.brains.offline.forms import Form
from benchgen.agent.brains.offline.parse import Intent, find, find_id
from benchgen.agent.brains.offline.steps import MAX_OPTIONS, TITLE_KEYS, Ask, Step, titled

PAGE = 50  # questions per show_benchmark call: well under the tool result's size limit


def step_edit(ask: Ask, intent: Intent) -> Step:
    """Propose the edit on the one benchmark of the user's that the request names."""
    assert intent.form is not None
    if intent.kind in ("add_questions", "replace_questions"):
        problem = _draft_problem(intent)
        if problem:
            return problem
    target = _target(ask, intent.phrase)
    if not isinstance(target, dict):
        return target
    benchmark_id = target["id"]
    if intent.kind == "rename":
        if intent.form.then:
            return _one_at_a_time(target, intent.form)
        return [_propose(benchmark_id, title=intent.form.new)]
    if intent.kind == "describe":
        return [_propose(benchmark_id, description=intent.form.new)]
    if intent.kind == "replace_questions":
        assert intent.draft is not None
        mismatch = _format_problem(target, intent.draft.format)
        return mismatch or [_propose(benchmark_id, questions=intent.draft.questions)]
    return _with_current(ask, intent, benchmark_id)


def _one_at_a_time(target: dict[str, Any], form: Form) -> Step:
    """Two requests in one message: offer the rename as a button and say the second one is to
    be asked once it is done, rather than glue it into the title or drop it unsaid."""
    rename = f'Rename {target["id"]} to "{form.new}"'
    named = titled(target) if "title" in target else target["id"]
    question = (
        f'Your message asks for two things: rename {named} to "{form.new}", and '
        f'"{form.then}". I do one request at a time: choose the rename below, then ask me '
        f'"{form.then}" once it is done.'
    )
    return [("ask_user", {"question": question, "options": [rename]})]


def _draft_problem(intent: Intent) -> str:
    draft = intent.draft
    if draft is None:
        return (
            "Write the questions in the same message, after the request, for example:\n"
            f"add these questions to Capitals:\n{render.EXAMPLE_QA}\nor, with choices:\n"
            f"{render.EXAMPLE_MCQ}\nNothing was proposed."
        )
    if draft.problems:
        count = render.plural(len(draft.questions), f"{draft.format} question")
        return f"I read {count}, but " + "; ".join(draft.problems) + ". Nothing was proposed."
    return ""


def _target(ask: Ask, phrase: str) -> dict[str, Any] | Step:
    """The benchmark to change: the id given, else the one of the user's own and shared
    benchmarks its title names; a reply when none or several match."""
    given = find_id(phrase, "bm")
    if given is not None:
        return {"id": given}
    listed = ask.result("list_benchmarks")
    if listed is None:
        return [("list_benchmarks", {"mine_only": True})]
    mine = listed.get("benchmarks", [])
    found = find(phrase, mine, TITLE_KEYS)
    if len(found) == 1:
        return found[0]
    if not mine:
        return "You have no benchmarks that you can change. Nothing was proposed."
    names = "\n".join(f"- {titled(b)}" for b in (found or mine)[:MAX_OPTIONS])
    return (
        f'I found no single benchmark of yours called "{phrase.strip()}". Say it again with '
        f"the title or id of one of these:\n{names}\nNothing was proposed."
    )


def _format_problem(benchmark: dict[str, Any], written: str) -> str:
    fmt = benchmark.get("format")
    if fmt is None or fmt == written:
        return ""
    needs = "lettered choices and the answer's letter" if fmt == "mcq" else "no choices"
    return (
        f"{titled(benchmark)} is a {fmt} benchmark: its questions need {needs}, but the "
        f"questions you wrote are {written}. Nothing was proposed."
    )


def _with_current(ask: Ask, intent: Intent, benchmark_id: str) -> Step:
    """Add or remove questions once every current question has been read."""
    pages = [content for tool, content in ask.results if tool == "show_benchmark"]
    if not pages:
        return [_page(benchmark_id, 0)]
    shown = pages[0]["benchmark"]
    # Pages may come back in any order: positions put them in place.
    current = sorted(
        {q["position"]: q for page in pages for q in page["questions"]}.values(),
        key=lambda q: int(q["position"]),
    )
    if len(current) < shown["question_count"]:
        return [
            _page(benchmark_id, at) for at in range(len(current), shown["question_count"], PAGE)
        ]
    if any("answer" not in question for question in current):
        return f"I cannot see the answer key of {titled(shown)}, so I cannot change its questions."
    kept = [_as_input(question) for question in current]
    if intent.kind == "add_questions":
        assert intent.draft is not None
        mismatch = _format_problem(shown, intent.draft.format)
        return mismatch or [_propose(benchmark_id, questions=kept + intent.draft.questions)]
    return _remove(intent, shown, kept)


def _remove(intent: Intent, shown: dict[str, Any], kept: list[dict[str, Any]]) -> Step:
    assert intent.form is not None
    count = len(kept)
    numbers = {count if n == -1 else n for n in intent.form.numbers}
    missing = sorted(n for n in numbers if not 1 <= n <= count)
    if missing:
        have = render.plural(count, "question")
        absent = ", ".join(str(n) for n in missing)
        return f"{titled(shown)} has {have}: there is no question {absent}. Nothing was proposed."
    left = [question for number, question in enumerate(kept, 1) if number not in numbers]
    return [_propose(shown["id"], questions=left)]


def _as_input(question: dict[str, Any]) -> dict[str, Any]:
    """A question as show_benchmark gives it, in the shape propose_edit_benchmark takes."""
    sent: dict[str, Any] = {
        "prompt": question["prompt"],
        "answer": question["answer"],
        "tags": question.get("tags", []),
    }
    # Kept as they were: an edit that adds or removes other questions changes nothing else.
    if question.get("metadata"):
        sent["metadata"] = question["metadata"]
    choices = question.get("choices")
    if isinstance(choices, dict):
        sent["choices"] = list(choices.values())  # in label order, as the tool gives them
    elif choices is not None:
        sent["choices"] = list(choices)
    return sent


def _page(benchmark_id: str, offset: int) -> tuple[str, dict[str, Any]]:
    return ("show_benchmark", {"benchmark_id": benchmark_id, "offset": offset, "limit": PAGE})


def _propose(benchmark_id: str, **change: Any) -> tuple[str, dict[str, Any]]:
    return ("propose_edit_benchmark", {"benchmark_id": benchmark_id, **change})


STEPS: dict[str, Callable[[Ask, Intent], Step]] = {
    kind: step_edit
    for kind in ("rename", "describe", "add_questions", "replace_questions", "remove_questions")
}
