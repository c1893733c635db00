"""Questions written one a line as `France: Paris`, `France | Paris` or `Capital of France?
Paris`, read only where the message is clearly giving questions: after words that ask for a
benchmark or name questions ("create a quiz with these questions:"), or as at least two such
lines in a row opening the message. Prose with a colon ("Note: this is a test run.") is never
a question: its first word says so, or its answer is a sentence."""

from __future__ import annotations

import re
from collections.abc import Callable

MAX_ANSWER_WORDS = 6
MAX_PROMPT_WORDS = 30
MIN_IN_A_ROW = 2
_NUMBERING = re.compile(r"^\(?\d{1,3}[.)]\s+")
# The words that open a remark, a heading or a setting, not a question.
_REMARKS = frozenset(
    (
        *("note", "notes", "nb", "ps", "p.s.", "hint", "tip", "context", "description", "title"),
        *("name", "format", "type", "tags", "tag", "topic", "subject", "category", "level"),
        *("difficulty", "language", "instructions", "reminder", "update", "edit", "fyi", "btw"),
        *("important", "warning", "also", "example", "e.g.", "source", "author", "version"),
        *("purpose", "goal", "deadline", "date", "model", "benchmark", "samples", "temperature"),
        *("seed", "settings", "here", "this", "that", "it", "i", "we", "you", "my", "our"),
    )
)
# "Capital of France? Paris", "2+2? - 4": one question mark, then a short answer; no colon, so
# "Q: 2+2? 4" stays a marked question.
_ASKED = re.compile(r"^(?P<q>[^?:]{1,500}\?)\s+(?:[-–—=]\s+)?(?P<a>[^?:\s][^?:]*)$")
# Words before the lines that say questions follow, or ask for a benchmark made of them.
_GIVING = re.compile(
    r"\bquestions?\b|\bq\s*&\s*a\b|\bpairs\b|\bflash-?cards?\b"
    r"|\b(?:create|make|build|write|set up|generate|draft|prepare|new)\b.*"
    r"\b(?:benchmarks?|quiz\w*|tests?|exams?)\b",
    re.I,
)


def loose_pair(line: str) -> tuple[str, str] | None:
    """The question and answer of a `France: Paris` or `France | Paris` line, else None."""
    body = _NUMBERING.sub("", line.strip())
    if "|" in body:
        cells = [cell.strip() for cell in body.strip("|").split("|")]
        prompt, answers = cells[0], [cell for cell in cells[1:] if cell]
        # Alternatives, as a `Q:`/`A:` answer gives them: "Japan | Tokyo | Tōkyō".
        return (prompt, " | ".join(answers)) if prompt and answers else None
    asked = _ASKED.match(body)
    if asked:
        prompt, answer = asked.group("q").strip(), asked.group("a").strip()
        return None if _sentence(answer) else (prompt, answer)
    prompt, colon, answer = body.partition(": ")
    prompt, answer = prompt.strip(), answer.strip()
    if not colon or not prompt or not answer or ":" in prompt:
        return None
    first = prompt.split()[0].casefold().rstrip(",")
    if first in _REMARKS or _sentence(answer) or len(prompt.split()) > MAX_PROMPT_WORDS:
        return None
    return prompt, answer


def _sentence(answer: str) -> bool:
    """A reply in prose, not an answer to score against."""
    return len(answer.split()) > MAX_ANSWER_WORDS or (
        answer.endswith(".") and len(answer.split()) > 1
    )


def readable(lines: list[str], header_line: Callable[[str], bool]) -> dict[int, tuple[str, str]]:
    """The lines (by index) to read as loose pairs: all of them after words that give
    questions, or when at least two open the message (lines `header_line` accepts, a title,
    may come first); none otherwise."""
    pairs = {index: pair for index, line in enumerate(lines) if (pair := loose_pair(line))}
    if not pairs:
        return {}
    first = min(pairs)
    before = [line for line in lines[:first] if not header_line(line)]
    if _GIVING.search(" ".join(before)):
        return pairs
    in_a_row = all(index in pairs for index in range(first, first + MIN_IN_A_ROW))
    return pairs if not before and in_a_row else {}
