"""The offline brain: a deterministic planner that reads plain-English requests, calls the same
tools as any other brain through the same harness, and writes its replies from their results."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from benchgen.agent.brains.offline import (
    create_steps,
    edits,
    elsewhere,
    insights,
    lookups,
    refusals,
    render,
    run_steps,
    small_talk,
    steps,
    training,
)
from benchgen.agent.brains.offline.ask import Ask, Step
from benchgen.agent.brains.offline.create_steps import create_label
from benchgen.agent.brains.offline.parse import Intent, read_intent, rests_on_words
from benchgen.agent.brains.offline.questions import read_title
from benchgen.core.config import Settings

MAX_TITLE = 200
Event = tuple[str, Any]
_WAITING_TOOLS = (
    "ask_user",
    "propose_create_benchmark",
    "propose_edit_benchmark",
    "propose_publish",
    "propose_run",
    "propose_training",
)
STEPS = {
    **steps.STEPS,
    **run_steps.STEPS,
    **create_steps.STEPS,
    **insights.STEPS,
    **edits.STEPS,
    **training.STEPS,
    **elsewhere.STEPS,
    **lookups.STEPS,
    **small_talk.STEPS,
}


def offline_model(settings: Settings) -> FunctionModel:
    """The planner as a pydantic-ai model: each step is tool calls or the final reply."""

    def think(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        events = _events(messages)
        step = _step(events, settings)
        if isinstance(step, str):
            return ModelResponse(parts=[TextPart(step)])
        return ModelResponse(parts=[ToolCallPart(name, args) for name, args in step])

    return FunctionModel(think, model_name="offline")


def _events(messages: list[ModelMessage]) -> list[Event]:
    """The conversation as (who, what): user and agent words, tool results, and the calls
    refused for their arguments."""
    events: list[Event] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            said = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            events += [("agent", said)] if said else []
            continue
        assert isinstance(message, ModelRequest)
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                events.append(("user", part.content if isinstance(part.content, str) else ""))
            elif isinstance(part, ToolReturnPart):
                # A call the loop refused (arguments out of range…) comes back as the call's
                # own return, `retried`: its content is why, never a result to go on from.
                refused = getattr(part, "outcome", "success") != "success"
                events.append(("retry" if refused else "tool", (part.tool_name, part.content)))
            elif isinstance(part, RetryPromptPart):  # the same, from older pydantic-ai
                events.append(("retry", (part.tool_name, part.content)))
    return events


def _step(events: list[Event], settings: Settings) -> Step:
    asked = max((i for i, (who, _) in enumerate(events) if who == "user"), default=-1)
    if asked < 0:
        return render.help_text()
    later = events[asked + 1 :]
    refused = [what for who, what in later if who == "retry"]
    if refused:
        # A call the loop refused (bad arguments): say why rather than try again and again.
        return refusals.refused_call(*refused[0])
    history = [(who, str(what)) for who, what in events[:asked] if who in ("user", "agent")]
    results = [what for who, what in later if who == "tool"]
    return plan(Ask(str(events[asked][1]), settings, history, results))


def plan(ask: Ask) -> Step:
    """The next step for a request, given this turn's tool results so far."""
    if ask.results:
        tool, content = ask.results[-1]
        if isinstance(content, dict) and "error" in content:
            return render.error(tool, content)
        if tool in _WAITING_TOOLS:
            return "Waiting for your answer."
    read = _titles_first(ask, _in_context(ask))
    if not isinstance(read, Intent):
        return read
    intent = read
    if intent.kind == "continue":
        return _continue(ask)
    step = STEPS.get(intent.kind)
    if step is not None:
        return step(ask, intent)
    return _answer(intent)


def _titles_first(ask: Ask, intent: Intent) -> Intent | Step:
    """A reading that may rest on a word of a title ("show Leaderboard Basics", "run random on
    Status Quo") is made again once the titles the user can see are known: a known title wins
    over the request words it holds."""
    if not rests_on_words(ask.text, intent):
        return intent
    listed = ask.result("list_benchmarks")
    if listed is None:
        return [("list_benchmarks", {"mine_only": False})]
    titles = [str(b.get("title") or "") for b in listed.get("benchmarks", [])]
    return read_intent(ask.text, titles)


def _answer(intent: Intent) -> str:
    if intent.kind == "cancel":
        return "OK, I left it. Nothing was done."
    return render.not_understood(intent.text)


def _in_context(ask: Ask) -> Intent:
    """The request read with the conversation: an answer to the title question is the title of
    the benchmark asked for just before; questions sent after being asked for them take the
    title given with that earlier request; the creation button offered beside a second request
    creates from the questions of the message before it."""
    intent = read_intent(ask.text)
    if len(ask.history) < 2 or [who for who, _ in ask.history[-2:]] != ["user", "agent"]:
        return intent
    before, last = ask.history[-2][1], ask.history[-1]
    earlier = read_intent(before)
    if earlier.draft is not None and earlier.draft.then and ask.text == create_label(earlier.draft):
        # The creation button offered beside a second request: the questions are the earlier
        # message's, and the second request waits until the user asks it.
        return replace(earlier, draft=replace(earlier.draft, then=""))
    if last[1].startswith(render.TITLE_QUESTION) and earlier.draft is not None:
        title = read_title(ask.text) or (_as_title(ask.text) if intent.kind == "unknown" else "")
        if title:
            return replace(earlier, draft=replace(earlier.draft, title=title))
    asked_questions = last[1].startswith(render.QUESTIONS_QUESTION)
    if asked_questions and intent.draft is not None and not intent.draft.title:
        return replace(intent, draft=replace(intent.draft, title=read_title(before)))
    return intent


def _as_title(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first.strip(" \"'“”‘’.!")[:MAX_TITLE]


def _continue(ask: Ask) -> Step:
    """Go on with the latest request only when its turn ended without the agent's answer (it
    stopped at the time cap): a request that was answered, approved or declined is done, and
    planning it again would propose it twice. The part-by-part plan is the harness's own."""
    for index in range(len(ask.history) - 1, -1, -1):
        who, text = ask.history[index]
        if who == "agent":
            return render.nothing_to_continue(text)
        if read_intent(text).kind != "continue":
            return plan(replace(ask, text=text, history=ask.history[:index]))
    return "There is nothing earlier to continue. " + render.help_text()
