"""Questions and a title written in a chat message, read by the offline planner: `Q:`/`A:` pairs,
numbered questions with lettered choices (`a)`, `B.`) and an `Answer:` line, one-line pairs
(`France -> Paris`, `1. Capital of France? Paris`, and where the message is clearly giving
questions `France: Paris` or `France | Paris`), or a pasted JSON list, CSV or `|` table. Lines
that could not be read are named, never dropped unsaid."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from benchgen.agent.brains.offline.loose_pairs import readable
from benchgen.agent.brains.offline.question_tables import read_table
from benchgen.agent.brains.offline.second_requests import following, split_off

_Q = re.compile(r"^(?:q|question)\s*\d*\s*[:.)]\s*(?P<text>.*)$", re.I)
_NUMBERED = re.compile(r"^\(?\d{1,3}[.)]\s+(?P<text>.+)$")
_ANSWER = re.compile(r"^(?:a|ans|answer|correct(?:\s+answer)?)\s*\d*\s*:\s*(?P<text>.+)$", re.I)
# "France -> Paris", "2+2 => 4", "France<TAB>Paris", numbered or not.
_PAIR = re.compile(r"^(?:\(?\d{1,3}[.)]\s+)?(?P<q>\S.*?)\s*(?:->|=>|→|\t)\s*(?P<a>\S.*)$")
# "1. Capital of France? Paris": the answer after the question mark, on the same line.
_ASKED_AND_ANSWERED = re.compile(r"^(?P<q>.+\?)\s+(?P<a>[^?]+)$")
_CHOICE = re.compile(r"^[-*•]?\s*\(?(?P<label>[a-zA-Z])[.)]\s+(?P<text>.+)$")
# Markers written inline ("Q: 2+2? A: 4", "Colour? a) red b) blue") start a line of their own.
_INLINE = re.compile(
    # "Correct answer:" is one marker: no line starts at its "answer:".
    r"\s+(?=(?:q|question)\s*\d*\s*:\s)"
    r"|(?<!correct)\s+(?=(?:a|ans|answer|correct answer)\s*\d*\s*:\s)",
    re.I,
)
_INLINE_CHOICE = re.compile(r"\s+(?=\(?[a-hA-H]\)\s)")
_QUOTED_TITLE = re.compile(
    r"\b(?:called|titled|entitled|named|name it|call it|title)\s*[:=]?\s*"
    r"[\"“'‘«](?P<t>[^\"”'’»\n]+)[\"”'’»]",
    re.I,
)
_TITLE_LINE = re.compile(
    r"^\s*(?:the\s+)?(?:title|name)\s*(?:is\b\s*:?|[:=])\s*(?P<t>.+?)[.!]?\s*$", re.I | re.M
)
_BARE_TITLE = re.compile(
    r"\b(?:called|titled|entitled|named|name it|call it)\s+(?P<t>[^\n]+?)"
    r"(?=\s*(?:[:;,.!?](?:\s|$)|$|\s+(?:with|using|from|containing|having|that)\b))",
    re.I | re.M,
)
# "create benchmark Fruit", "new mcq quiz 'Planets'": the words right after the thing made,
# unless they start saying what it is made from or about ("make a benchmark with these …").
# Spaces only, never a line break: the next line is a question, not the title.
_MADE_TITLE = re.compile(
    r"^[ \t]*(?:please[ \t]+)?(?:create|make|new|build)[ \t]+(?:me[ \t]+)?(?:an?[ \t]+)?"
    r"(?:new[ \t]+)?(?:(?:qa|mcq|multiple[- ]choice)[ \t]+)?(?:benchmark|quiz)[ \t]+"
    r"(?!(?:with|from|of|for|using|containing|having|that|about|on|in|to|and|out|based|like"
    r"|please|now)\b)"
    r"(?P<t>[^\n]+?)"
    r"(?=\s*(?:[:;,.!?](?:\s|$)|$|\s+(?:with|using|from|containing|having|that)\b))",
    re.I | re.M,
)
_QUOTES = " \"'“”‘’"
_ANY_QUOTED = re.compile(r"[\"“«](?P<t>[^\"”»\n]{1,200})[\"”»]")


@dataclass
class Question:
    """One question as written: its prompt lines, lettered choices and answer."""

    prompt: str
    choices: list[str] = field(default_factory=list)
    answer: str = ""


@dataclass
class Draft:
    """What a message asks to create: a title (may be empty), the format and the questions,
    with the words written before them (which may ask to add them to a benchmark instead),
    and a second request written after the title (`then`), to be asked on its own."""

    title: str
    format: str
    questions: list[dict[str, Any]]
    problems: list[str]
    header: str = ""
    then: str = ""


def read_draft(text: str) -> Draft | None:
    """The questions written in `text`, with the title from the words before them; None when the
    message holds no question."""
    table = read_table(text)
    if table is not None:
        header, unread = table.header, table.unread
        found = [Question(prompt, choices, answer) for prompt, choices, answer in table.rows]
    else:
        header, found, unread = _read_questions(text)
    if not found:
        return None
    fmt = "mcq" if any(len(q.choices) >= 2 for q in found) else "qa"
    problems = [_problem(i, q, fmt) for i, q in enumerate(found, 1)]
    if unread:
        problems.append(
            "these could not be read as questions: " + "; ".join(unread) + " (write each like "
            "`France -> Paris` or `Q: …` then `A: …`)"
        )
    questions = [_as_argument(q, fmt) for q in found]
    title, then = read_titled(header)
    return Draft(title, fmt, questions, [p for p in problems if p], header, then)


def read_title(text: str) -> str:
    """A title the user gave in words (`called "X"`, `titled X`, `title: X`), or ""."""
    return read_titled(text)[0]


def read_titled(text: str) -> tuple[str, str]:
    """A title the user gave in words, and a second request written after it ("… called Space
    Quiz and run random on it" is "Space Quiz" and "run random on it"); ("", "") for none."""
    for pattern in (_QUOTED_TITLE, _TITLE_LINE, _BARE_TITLE, _ANY_QUOTED, _MADE_TITLE):
        found = pattern.search(text)
        if found is None:
            continue
        title, then = split_off(found.group("t"))
        title = title.strip(_QUOTES)
        if title:
            return title, then or following(text[found.end() :])
    return "", ""


def _read_questions(text: str) -> tuple[str, list[Question], list[str]]:
    """The header, the questions, and the lines after the first question that belong to none."""
    header: list[str] = []
    found: list[Question] = []
    unread: list[str] = []
    lines = _lines(text)
    loose = _loose_pairs([line for _, line in lines])
    for index, (number, line) in enumerate(lines):
        current = found[-1] if found else None
        started = _Q.match(line) or (None if _PAIR.match(line) else _NUMBERED.match(line))
        pair = None if started or _ANSWER.match(line) else _PAIR.match(line)
        if index in loose:
            prompt, answer = loose[index]
            found.append(Question(prompt, answer=answer))
        elif pair:
            found.append(Question(pair.group("q").strip(), answer=pair.group("a").strip()))
        elif started and not (current is not None and _is_choice(current, line)):
            found.append(Question(started.group("text").strip()))
        elif current is None:
            header.append(line)
        elif not _add_line(current, line):
            unread.append(f"line {number} ({line[:60]})")
    for question in found:
        _answer_on_the_same_line(question)
    return "\n".join(header), [q for q in found if q.prompt or q.answer], unread


def _loose_pairs(lines: list[str]) -> dict[int, tuple[str, str]]:
    """`France: Paris` and `France | Paris` lines, where the message is clearly giving
    questions and writes none with `Q:`/`A:` markers (whose lines hold colons of their own)."""
    if any(_Q.match(line) or _ANSWER.match(line) for line in lines):
        return {}
    return readable(lines, lambda line: _TITLE_LINE.match(line) is not None)


def _answer_on_the_same_line(question: Question) -> None:
    """ "Capital of France? Paris" with nothing after it: the words after the "?" answer it."""
    same_line = _ASKED_AND_ANSWERED.match(question.prompt)
    if same_line and not question.answer and not question.choices:
        question.prompt, question.answer = same_line.group("q"), same_line.group("a").strip()


def _lines(text: str) -> list[tuple[int, str]]:
    """The message's lines, numbered as written; inline markers start lines of their own."""
    lines: list[tuple[int, str]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        for part in _INLINE.split(raw):
            # "Answer: B) dog" is one answer, not a choice.
            pieces = [part] if _ANSWER.match(part.strip()) else _INLINE_CHOICE.split(part)
            lines += [(number, piece.strip()) for piece in pieces if piece.strip()]
    return lines


def _is_choice(question: Question, line: str) -> bool:
    found = _CHOICE.match(line)
    expected = chr(ord("a") + len(question.choices))
    return found is not None and found.group("label").casefold() == expected


def _add_line(question: Question, line: str) -> bool:
    """Add a line to the question it follows; False when it is none of its parts."""
    answer = _ANSWER.match(line)
    if answer and not question.answer:
        question.answer = answer.group("text").strip()
    elif _is_choice(question, line) and not question.answer:
        choice = _CHOICE.match(line)
        assert choice is not None
        question.choices.append(choice.group("text").strip())
    elif not question.answer and not question.choices:
        # A prompt may run over several lines.
        question.prompt = f"{question.prompt}\n{line}".strip()
    else:
        return False
    return True


def _problem(number: int, question: Question, fmt: str) -> str:
    if not question.prompt:
        return f"question {number} has no text"
    if not question.answer and not (fmt == "qa" and len(question.choices) == 1):
        return f"question {number} has no answer (add a line like `Answer: …`)"
    if fmt == "mcq" and len(question.choices) < 2:
        return f"question {number} has no choices, but others do (add `a) …`, `b) …` lines)"
    return ""


def _as_argument(question: Question, fmt: str) -> dict[str, Any]:
    if fmt == "qa":
        # One lettered line and no answer line: the line was the answer ("A. Paris").
        answer = question.answer or (question.choices[0] if question.choices else "")
        accepted = [part.strip() for part in answer.split("|") if part.strip()]
        return {
            "prompt": question.prompt,
            "answer": accepted[0] if len(accepted) == 1 else accepted,
        }
    return {
        "prompt": question.prompt,
        "choices": question.choices,
        "answer": letter_of(question.answer, question.choices),
    }


def letter_of(answer: str, choices: list[str]) -> str:
    """The answer as a choice letter: "b", "(B)", "B) Blue" and "Blue" all read as "B"."""
    lettered = re.match(r"^\(?([a-zA-Z])\)?(?:[.):]|\s|$)", answer.strip())
    if lettered and ord(lettered.group(1).casefold()) - ord("a") < len(choices):
        return lettered.group(1).upper()
    for index, choice in enumerate(choices):
        if choice.casefold() == answer.strip().casefold():
            return chr(ord("A") + index)
    return answer.strip()
