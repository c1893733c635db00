"""The agent's read-only tools for making sense of runs: compare two runs, explain one item's
result. Each is one service call with the turn's credential; neither changes anything."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from pydantic_ai import Tool

from benchgen.agent.state import TurnState, plain
from benchgen.agent.tools import Deps, Id
from benchgen.core.context import Context
from benchgen.core.secrets import find_secrets
from benchgen.services.runs import compare

Position = Annotated[int, Field(ge=0, le=1_000_000)]
MAX_CHANGED = 50
# A result's long texts are cut to their start and end: a few-shot prompt of long questions,
# sent and echoed back, made one result larger than a tool result may be, and this tool has no
# smaller page to ask for.
MAX_TEXT_CHARS = 8_000
_TEXTS = ("prompt", "prompt_sent", "reply", "reasoning", "error")


def compare_runs(ctx: Deps, run_a: Id, run_b: Id) -> Any:
    """Compare two finished runs of the same benchmark question by question: each accuracy,
    the difference B − A with a 95% interval, the exact McNemar p-value (is it more than
    noise?), how many questions both got right, both wrong, only A or only B got right, per-tag
    figures and the questions that changed (first 50). Only for the benchmark's owner and
    collaborators.

    Args:
        run_a: the reference run's id (run_…).
        run_b: the id of the run compared with it.
    """

    def work(c: Context) -> dict[str, Any]:
        found = plain(compare.compare_runs(c, run_a, run_b))
        items = found.pop("items")
        # Only the questions that changed, and a page of them: a whole benchmark's table
        # would crowd out the conversation.
        changed = [item for item in items if item["category"] in ("only_a", "only_b")]
        found["changed_items"] = changed[:MAX_CHANGED]
        found["changed_items_total"] = len(changed)
        return {"comparison": found}

    return ctx.deps.call("compare_runs", {"run_a": run_a, "run_b": run_b}, work, write=False)


def explain_result(ctx: Deps, run_id: Id, position: Position) -> Any:
    """Show one question's result in a run, e.g. to say why it was wrong: the prompt sent, the
    model's reply and, for the benchmark's team, the extracted answer, the verdict, its
    reasoning and the expected answer.

    Args:
        run_id: the run's id (run_…).
        position: the question's position counting from 0 (question 1 is position 0).
    """

    def work(c: Context) -> dict[str, Any]:
        found = plain(compare.explain_result(c, run_id, position))
        return {"result": found | {name: _cut(found[name]) for name in _TEXTS if name in found}}

    args = {"run_id": run_id, "position": position}
    return ctx.deps.call("explain_result", args, work, write=False)


def _cut(text: Any) -> Any:
    """A long text as its start and end, saying how much was cut between them (the end of a
    reply is often where its answer is); anything else as it is."""
    if not isinstance(text, str) or len(text) <= MAX_TEXT_CHARS:
        return text
    head, tail = MAX_TEXT_CHARS // 2, len(text) - MAX_TEXT_CHARS // 2
    # A secret across a cut is kept whole: in part, the screening of the result would miss it.
    for found in find_secrets(text):
        if found.start < head < found.end:
            head = found.end
        if found.start < tail < found.end:
            tail = found.start
    if head >= tail:
        return text
    return f"{text[:head]}\n[… {tail - head} characters cut …]\n{text[tail:]}"


INSIGHT_TOOLS: list[Tool[TurnState]] = [
    Tool(function, takes_ctx=True) for function in (compare_runs, explain_result)
]
