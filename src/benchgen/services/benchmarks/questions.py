"""Questions of qa/mcq benchmarks: validation beyond shape, canonical form and diffs
(storage is `_question_store`)."""

from __future__ import annotations

import difflib
import json
import re
import string
from dataclasses import dataclass, field
from typing import Any

from benchgen.core.errors import invalid_all
from benchgen.core.text import is_blank
from benchgen.services.specs import (
    MAX_ANSWER,
    MAX_ANSWERS,
    MAX_CHOICE,
    MAX_CHOICES,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_TAG,
    QuestionIn,
)

LABELS = string.ascii_uppercase
# Past this many pairs of questions to match, a change's diff compares them by position.
MAX_MATCHED_PAIRS = 1_000_000
# Said of a text made only of invisible characters (zero-width spaces and the like).
INVISIBLE = "must hold something visible, not only invisible characters"


@dataclass(frozen=True)
class Canonical:
    """A validated question, in the one form that is stored, compared and shown."""

    prompt: str
    answers: tuple[str, ...]
    choices: tuple[str, ...] | None = None
    tags: tuple[str, ...] = ()
    metadata: str = "{}"  # JSON with sorted keys, so questions stay hashable and comparable

    @property
    def answer(self) -> str | list[str]:
        """The answer as shown: an mcq question's label, a qa question's accepted answers."""
        return self.answers[0] if self.choices is not None else list(self.answers)

    def as_dict(self, with_answer: bool = True) -> dict[str, Any]:
        """The question as plain data; the answer only when the caller may see the key."""
        shown: dict[str, Any] = {"prompt": self.prompt, "tags": list(self.tags)}
        if self.choices is not None:
            shown["choices"] = dict(zip(LABELS, self.choices, strict=False))
        if with_answer:
            shown["answer"] = self.answer
            # The team's own notes on a question may explain its answer: theirs to see only
            # (and only when there are some, so plain questions keep their plain shape).
            notes = json.loads(self.metadata)
            if notes:
                shown["metadata"] = notes
        return shown


@dataclass
class Validated:
    """Questions that passed, plus warnings (duplicates) that do not block anything."""

    questions: list[Canonical]
    warnings: list[dict[str, Any]] = field(default_factory=list)


def validate_questions(fmt: str, items: list[QuestionIn]) -> Validated:
    """Check every question of a `fmt` benchmark; collect all problems before failing.

    Raises:
        InvalidInput: one entry per problem, each with its place (`questions.3.answer`).
    """
    errors: list[dict[str, Any]] = []
    result = Validated([])
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        loc: list[str | int] = ["questions", index]
        question = _validate_one(fmt, item, loc, errors, result.warnings)
        if question is None:
            continue
        result.questions.append(question)
        key = _normalise(question.prompt)
        if key in seen:
            result.warnings.append(
                {"loc": [*loc, "prompt"], "msg": f"same prompt as question {seen[key] + 1}"}
            )
        seen.setdefault(key, index)
    if errors:
        raise invalid_all(errors)
    return result


def _validate_one(
    fmt: str,
    item: QuestionIn,
    loc: list[str | int],
    errors: list[dict[str, Any]],
    warnings: list[dict[str, Any]],
) -> Canonical | None:
    before = len(errors)
    if not item.prompt:
        errors.append({"loc": [*loc, "prompt"], "msg": "must not be empty"})
    elif is_blank(item.prompt):
        errors.append({"loc": [*loc, "prompt"], "msg": INVISIBLE})
    tags = tuple(dict.fromkeys(tag for tag in item.tags if tag))
    if any(len(tag) > MAX_TAG for tag in tags):
        errors.append({"loc": [*loc, "tags"], "msg": f"each tag at most {MAX_TAG} characters"})
    _check_metadata(item, loc, errors)
    if fmt == "mcq":
        choices, answers = _check_mcq(item, loc, errors, warnings)
    else:
        choices, answers = None, _check_qa(item, loc, errors, warnings)
    if len(errors) > before:
        return None
    metadata = json.dumps(item.metadata, sort_keys=True)
    return Canonical(item.prompt, answers, choices, tags, metadata)


def _check_metadata(item: QuestionIn, loc: list[str | int], errors: list[dict[str, Any]]) -> None:
    # Metadata is free-form and stored with every question: without a cap one question could
    # carry the whole request body into every read of the benchmark.
    size = len(json.dumps(item.metadata, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES:
        errors.append(
            {
                "loc": [*loc, "metadata"],
                "msg": f"at most {MAX_METADATA_BYTES} bytes as JSON ({size} given)",
            }
        )
    # Deep nesting fits in few bytes, but every response that shows the question (a change's
    # diff, say) failed to serialise it, after the change it reported had been stored.
    if _depth(item.metadata) > MAX_METADATA_DEPTH:
        errors.append(
            {"loc": [*loc, "metadata"], "msg": f"at most {MAX_METADATA_DEPTH} levels deep"}
        )


def _depth(value: Any) -> int:
    """How many objects and lists are nested in `value`, at the deepest (0 for a scalar)."""
    level, current = 0, [value]
    while current:
        current = [
            child
            for item in current
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        level += 1
    return level - 1


def _check_qa(
    item: QuestionIn,
    loc: list[str | int],
    errors: list[dict[str, Any]],
    warnings: list[dict[str, Any]],
) -> tuple[str, ...]:
    if item.choices is not None:
        errors.append({"loc": [*loc, "choices"], "msg": "qa questions have no choices"})
    raw = [item.answer] if isinstance(item.answer, str) else item.answer
    answers = [answer.strip() for answer in raw if answer.strip()]
    if not answers:
        errors.append({"loc": [*loc, "answer"], "msg": "give at least one accepted answer"})
    elif any(is_blank(answer) for answer in answers):
        # No reply can ever match it, and nobody reading the question would see why.
        errors.append({"loc": [*loc, "answer"], "msg": f"each accepted answer {INVISIBLE}"})
    if any(len(answer) > MAX_ANSWER for answer in answers):
        errors.append({"loc": [*loc, "answer"], "msg": f"at most {MAX_ANSWER} characters each"})
    if len(answers) > MAX_ANSWERS:
        errors.append({"loc": [*loc, "answer"], "msg": f"at most {MAX_ANSWERS} accepted answers"})
    unique = tuple(dict.fromkeys(answers))
    if len(unique) < len(answers):
        warnings.append({"loc": [*loc, "answer"], "msg": "duplicate accepted answers were merged"})
    return unique


def _check_mcq(
    item: QuestionIn,
    loc: list[str | int],
    errors: list[dict[str, Any]],
    warnings: list[dict[str, Any]],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    choices = tuple(choice.strip() for choice in item.choices or [])
    if not 2 <= len(choices) <= MAX_CHOICES:
        errors.append({"loc": [*loc, "choices"], "msg": "mcq needs 2 to 26 choices"})
        return choices, ()
    for position, choice in enumerate(choices):
        if not choice:
            errors.append({"loc": [*loc, "choices", position], "msg": "must not be empty"})
        elif is_blank(choice):
            errors.append({"loc": [*loc, "choices", position], "msg": INVISIBLE})
        elif len(choice) > MAX_CHOICE:
            errors.append(
                {"loc": [*loc, "choices", position], "msg": f"at most {MAX_CHOICE} characters"}
            )
    same = _same_choices(choices)
    if same is not None and same[1] < len(LABELS):  # past Z the count is refused already
        said = f"two choices read the same ({LABELS[same[0]]} and {LABELS[same[1]]})"
        warnings.append({"loc": [*loc, "choices"], "msg": said})
    label = _answer_label(item.answer, choices)
    if label is None:
        allowed = f"A–{LABELS[len(choices) - 1]}"
        errors.append(
            {"loc": [*loc, "answer"], "msg": f"must be one choice label ({allowed}) or its text"}
        )
        return choices, ()
    return choices, (label,)


def _same_choices(choices: tuple[str, ...]) -> tuple[int, int] | None:
    """The positions of the first two choices that read the same once normalised, if any."""
    first_at: dict[str, int] = {}
    for position, choice in enumerate(choices):
        earlier = first_at.setdefault(_normalise(choice), position)
        if earlier != position:
            return earlier, position
    return None


def _answer_label(answer: str | list[str], choices: tuple[str, ...]) -> str | None:
    """The key as a label: a letter among the choices, or exactly one choice's text."""
    if isinstance(answer, list):
        if len(answer) != 1:
            return None
        answer = answer[0]
    text = answer.strip()
    labels = LABELS[: len(choices)]
    if len(text) == 1 and text.upper() in labels:
        return text.upper()
    matches = [LABELS[i] for i, choice in enumerate(choices) if choice == text]
    return matches[0] if len(matches) == 1 else None


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def diff_questions(old: list[Canonical], new: list[Canonical]) -> dict[str, Any]:
    """What a change does to the question list: added, removed and changed, by position.

    Positions of `removed` refer to the old list; those of `added` and `changed` to the new one.
    """
    added: list[dict[str, Any]] = []
    removed: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    for tag, a_start, a_end, b_start, b_end in _opcodes(old, new):
        if tag == "equal":
            continue
        pairs = min(a_end - a_start, b_end - b_start) if tag == "replace" else 0
        for offset in range(pairs):
            before, after = old[a_start + offset], new[b_start + offset]
            if before != after:
                changed.append(
                    {
                        "position": b_start + offset,
                        "before": before.as_dict(),
                        "after": after.as_dict(),
                    }
                )
        for index in range(a_start + pairs, a_end):
            removed.append({"position": index, "question": old[index].as_dict()})
        for index in range(b_start + pairs, b_end):
            added.append({"position": index, "question": new[index].as_dict()})
    return {"added": added, "removed": removed, "changed": changed, "count_after": len(new)}


def _opcodes(old: list[Canonical], new: list[Canonical]) -> list[tuple[str, int, int, int, int]]:
    """How `new` differs from `old`, as difflib's opcodes: the part between their common start
    and end matched by difflib, or, past MAX_MATCHED_PAIRS, compared position by position (the
    matching takes time in the product of the two lengths, and runs inside a write: 10,000
    questions edited every other one took 35 s)."""
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    end = 0
    while end < limit - start and old[-1 - end] == new[-1 - end]:
        end += 1
    middle_old, middle_new = old[start : len(old) - end], new[start : len(new) - end]
    if len(middle_old) * len(middle_new) > MAX_MATCHED_PAIRS:
        return [("replace", start, start + len(middle_old), start, start + len(middle_new))]
    matcher = difflib.SequenceMatcher(a=middle_old, b=middle_new, autojunk=False)
    return [
        (tag, a1 + start, a2 + start, b1 + start, b2 + start)
        for tag, a1, a2, b1, b2 in matcher.get_opcodes()
    ]
