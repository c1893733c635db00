"""The offline planner's steps for creating a benchmark from the questions written in the
message: ask for the questions or the title when missing, then propose it."""

from __future__ import annotations

from collections.abc import Callable

from benchgen.agent.brains.offline import render
from benchgen.agent.brains.offline.ask import Ask, Step
from benchgen.agent.brains.offline.parse import Intent
from benchgen.agent.brains.offline.questions import Draft, read_titled
from benchgen.core.text import plural


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


STEPS: dict[str, Callable[[Ask, Intent], Step]] = {
    "create": step_create,
    "ask_questions": step_create,
}
