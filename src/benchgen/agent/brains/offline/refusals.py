"""The offline planner's reply to a tool call refused for its arguments: which value broke
which rule, in the words of the API's 422 ("epochs must be at most 100")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from benchgen.agent.brains.offline.render import doing

MAX_PROBLEMS = 5
MAX_REASON_CHARS = 500
# Longer numbers are not echoed: the rule says enough, and the reply stays short.
MAX_ECHO_CHARS = 20
_BOUNDS = {
    "Input should be less than or equal to": "must be at most",
    "Input should be greater than or equal to": "must be at least",
}
# Pydantic says "Input should …", "String should …"; the sentence names the value itself.
_SHOULD = re.compile(r"^\w+ should\b")
_PLAIN = {
    "int_from_float": "must be a whole number",
    "missing": "is missing",
    "extra_forbidden": "is not accepted",
}
# The settings whose own name says little in a sentence.
_NAMES = {"n": "the number of questions", "gpus": "the number of GPUs"}


def refused_call(tool: str | None, problems: Any) -> str:
    """Why the call of `tool` was refused before it ran: each value and its rule."""
    if isinstance(problems, list):
        reasons = [_reason(p) for p in problems[:MAX_PROBLEMS] if isinstance(p, dict)]
        more = len(problems) - MAX_PROBLEMS
        reason = "; ".join(reasons) + (f"; and {more} more" if more > 0 else "")
    else:
        reason = str(problems).removesuffix("Fix the errors and try again.").strip()
    reason = reason[:MAX_REASON_CHARS] or "its arguments were not valid"
    return f"I could not {doing(tool or 'do that')}: {reason}. Nothing was done."


def _reason(problem: dict[str, Any]) -> str:
    rule = _PLAIN.get(str(problem.get("type")))
    if rule is None:
        rule = str(problem.get("msg") or "is not valid").removeprefix("Value error, ")
        for said, plain in _BOUNDS.items():
            rule = rule.replace(said, plain, 1)
        rule = _SHOULD.sub("must", rule, count=1)
    # "epochs must be at most 100", but "subset: a 'first' subset needs n" for a rule that is
    # a sentence of its own.
    joint = " " if rule.startswith(("must", "is ")) else ": "
    return f"{_where(problem.get('loc') or ())}{joint}{rule}{_echo(problem.get('input'))}"


def _where(loc: Sequence[Any]) -> str:
    """The setting's own name ("epochs", not "hyperparameters.epochs"); a question by its
    number, counted from 1 as people count (the call counts from 0)."""
    names = [str(part) for part in loc if isinstance(part, str)]
    name = names[-1] if names else "a value"
    said = _NAMES.get(name, name.replace("_", " "))
    positions = [part for part in loc if isinstance(part, int)]
    if "questions" in names and positions:
        return f"the {said} of question {positions[0] + 1}"
    return said


def _echo(value: Any) -> str:
    # Only numbers are echoed: text may be long, or hold what a filter would have to withhold.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    said = f"{value:g}" if isinstance(value, float) else str(value)
    return f" (you asked for {said})" if len(said) <= MAX_ECHO_CHARS else ""
