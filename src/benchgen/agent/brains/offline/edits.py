"""The offline planner's benchmark edits, each proposed with `propose_edit_benchmark` so the
user sees the validated diff: rename, a new description, adding, replacing or removing
questions, and changing one question's answer. Adding, removing and changing an answer read
every current question first, since the tool takes the full new list; the service refuses
changes to frozen questions, and the reply says why."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from benchgen.agent.brains.offline import render
from benchgen.agent.brains.offline.answer_words import answer_label
from benchgen.agent.brains.offline.ask import Ask, Step
from benchgen.agent.brains.offline.forms import Form
from benchgen.agent.brains.offline.labels import MAX_OPTIONS, titled
from benchgen.agent.brains.offline.naming import TITLE_KEYS, find, find_id
from benchgen.agent.brains.offline.parse import Intent
from benchgen.agent.brains.offline.questions import letter_of
from benchgen.core.text import plural

PAGE = 50  # questions per show_benchmark call: well under the tool result's size limit
_BENCHMARK_ID = re.compile(r"\bbm_[A-Za-z0-9_]+")


def step_edit(ask: Ask, intent: Intent) -> Step:
    """Propose the edit on the one benchmark of the user's that the request names."""
    assert intent.form is not None
    if intent.kind in ("add_questions", "replace_questions"):
        problem = _draft_problem(intent)
        if problem:
            return problem
    target = _target(ask, intent.phrase) if intent.phrase.strip() else _unnamed(ask, intent.form)
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
    then = render.short(form.then)
    question = (
        f'Your message asks for two things: rename {named} to "{form.new}", and '
        f'"{then}". I do one request at a time: choose the rename below, then ask me '
        f'"{then}" once it is done.'
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
        count = plural(len(draft.questions), f"{draft.format} question")
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
    if intent.kind == "set_answer":
        assert intent.form is not None
        return _set_answer(intent.form, shown, kept)
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
        have = plural(count, "question")
        absent = ", ".join(str(n) for n in missing)
        return f"{titled(shown)} has {have}: there is no question {absent}. Nothing was proposed."
    left = [question for number, question in enumerate(kept, 1) if number not in numbers]
    return [_propose(shown["id"], questions=left)]


def _unnamed(ask: Ask, form: Form) -> dict[str, Any] | Step:
    """The benchmark of a change that names none ("change the answer of question 3 to Paris"):
    the user's only one, or the only one of theirs the last reply named (after "show
    Capitals"); else the user chooses, with buttons that ask again naming it."""
    listed = ask.result("list_benchmarks")
    if listed is None:
        return [("list_benchmarks", {"mine_only": True})]
    mine: list[dict[str, Any]] = listed.get("benchmarks", [])
    if not mine:
        return "You have no benchmarks that you can change. Nothing was proposed."
    replies = [text for who, text in ask.history if who == "agent"]
    said = set(_BENCHMARK_ID.findall(replies[-1])) if replies else set()
    named = [benchmark for benchmark in mine if benchmark["id"] in said]
    if len(mine) == 1 or len(named) == 1:
        return (named or mine)[0]
    number = form.numbers[0]
    which = "the last question" if number == -1 else f"question {number}"
    if len(form.new) > render.MAX_PROMPT_CHARS:
        names = "\n".join(f"- {titled(b)}" for b in mine[:MAX_OPTIONS])
        return (
            f"Which benchmark's {which} should I change? Say it again with its title, for "
            f"example `change the answer of {which} of Capitals to …`:\n{names}\n"
            "Nothing was proposed."
        )
    options = [answer_label(number, titled(b), form.new) for b in (named or mine)[:MAX_OPTIONS]]
    return [
        (
            "ask_user",
            {"question": f"Which benchmark's {which} should I change?", "options": options},
        )
    ]


def _set_answer(form: Form, shown: dict[str, Any], kept: list[dict[str, Any]]) -> Step:
    """Propose the benchmark's questions with one answer changed, in the shape its format takes:
    a choice's letter for mcq ("b", "Blue" and "B) Blue" are "B"), accepted answers for qa."""
    number = len(kept) if form.numbers[0] == -1 else form.numbers[0]
    if not 1 <= number <= len(kept):
        have = plural(len(kept), "question")
        return f"{titled(shown)} has {have}: there is no question {number}. Nothing was proposed."
    question = dict(kept[number - 1])
    choices = question.get("choices") or []
    if choices:
        answer: str | list[str] = letter_of(form.new, choices)
        if answer not in [chr(ord("A") + i) for i in range(len(choices))]:
            listed = ", ".join(f"{chr(ord('A') + i)}) {c}" for i, c in enumerate(choices))
            return (
                f"Question {number} of {titled(shown)} has the choices {listed}: give the "
                "answer as one of their letters or texts. Nothing was proposed."
            )
    else:
        accepted = [part.strip() for part in form.new.split("|") if part.strip()]
        answer = accepted[0] if len(accepted) == 1 else accepted
    if _as_list(answer) == _as_list(question["answer"]):
        return (
            f'Question {number} of {titled(shown)} already has the answer "{form.new}". '
            "Nothing was proposed."
        )
    question["answer"] = answer
    changed = [*kept[: number - 1], question, *kept[number:]]
    return [_propose(shown["id"], questions=changed)]


def _as_list(answer: Any) -> list[str]:
    return [str(a) for a in answer] if isinstance(answer, list) else [str(answer)]


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
    for kind in (
        *("rename", "describe", "add_questions", "replace_questions", "remove_questions"),
        "set_answer",
    )
}
