"""The question editor's form: rows of fields in, question shapes out, problems back by field."""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Any

from starlette.datastructures import FormData

from benchgen.core.errors import InvalidInput
from benchgen.web.places import plain

# Past this many rows the form's field count nears the parser's limit; files go to the import.
MAX_ROWS = 200
FORMATS = ("qa", "mcq")
_LABELS = {
    "prompt": "prompt",
    "choices": "choices",
    "answer": "answer",
    "tags": "tags",
    "metadata": "metadata",
}


@dataclass
class Row:
    """One question as the form holds it: what the person typed, kept as typed."""

    prompt: str = ""
    choices: str = ""  # one choice per line (mcq)
    answer: str = ""  # mcq: the correct choice's letter or text; qa: accepted answers per line
    tags: str = ""  # separated by commas

    def is_blank(self, fmt: str) -> bool:
        """True when nothing the format asks for was typed in the row (such rows are left out).

        Choices count only for multiple choice: a question and answer editor keeps them unseen
        for a switch back, and a row holding nothing else is empty to the person."""
        parts = (self.prompt, self.answer, self.tags, self.choices if fmt == "mcq" else "")
        return not any(part.strip() for part in parts)

    def as_question(self, fmt: str) -> dict[str, Any]:
        """The question shape the services validate."""
        question: dict[str, Any] = {"prompt": self.prompt, "tags": _tags(self.tags)}
        if fmt == "mcq":
            question["choices"] = _lines(self.choices)
            question["answer"] = self.answer.strip()
        else:
            question["answer"] = _lines(self.answer)
        return question

    @classmethod
    def from_question(cls, question: dict[str, Any]) -> Row:
        """A stored question (as `lifecycle.list_questions` shows it to an editor) as fields."""
        choices = question.get("choices")
        answer = question.get("answer", "")
        return cls(
            prompt=question["prompt"],
            choices="\n".join(choices.values()) if choices else "",
            answer="\n".join(answer) if isinstance(answer, list) else answer,
            tags=", ".join(question.get("tags", [])),
        )


@dataclass
class Problems:
    """What was wrong, by field (`title`, `q2.prompt`) and as one list with each place."""

    fields: dict[str, list[str]] = field(default_factory=dict)
    summary: list[str] = field(default_factory=list)

    def add(self, key: str, place: str, message: str) -> None:
        """Note a problem at a field (key) described to people as `place`."""
        self.fields.setdefault(key, []).append(message)
        self.summary.append(f"{place}: {message}" if place else message)


def text_of(form: FormData, name: str) -> str:
    """A text field of the form ('' when absent or a file)."""
    value = form.get(name)
    return value if isinstance(value, str) else ""


def rows_from(form: FormData) -> list[Row]:
    """The rows the form sent, in order (fields named q<i>-prompt, q<i>-choices…)."""
    rows = []
    for index in range(MAX_ROWS):
        if f"q{index}-prompt" not in form:
            break
        rows.append(
            Row(
                prompt=text_of(form, f"q{index}-prompt"),
                choices=text_of(form, f"q{index}-choices"),
                answer=text_of(form, f"q{index}-answer"),
                tags=text_of(form, f"q{index}-tags"),
            )
        )
    return rows


def problems_of(exc: InvalidInput, places: dict[int, tuple[int, int]]) -> Problems:
    """Each problem of `exc` at its field. `places` maps a question's index in the list the
    service checked to (its row in the form, the number people see)."""
    found = Problems()
    errors = exc.details.get("errors") or [{"loc": [], "msg": exc.message}]
    for error in errors:
        loc, message = list(error.get("loc", [])), plain(str(error.get("msg", "")))
        if len(loc) >= 3 and loc[0] == "questions" and isinstance(loc[1], int):
            row, number = places.get(loc[1], (loc[1], loc[1] + 1))
            name = str(loc[2])
            if name == "choices" and len(loc) > 3 and isinstance(loc[3], int):
                message = f"choice {_label(loc[3])}: {message}"
            found.add(f"q{row}.{name}", f"Question {number}, {_LABELS.get(name, name)}", message)
        elif len(loc) >= 2 and loc[0] == "content" and isinstance(loc[1], int):
            found.add("content", f"Line {loc[1]}", message)  # an import's file, by line
        elif loc:
            found.add(str(loc[0]), str(loc[0]).replace("_", " ").capitalize(), message)
        else:
            found.add("", "", message)
    return found


def _label(index: int) -> str:
    return string.ascii_uppercase[index] if 0 <= index < 26 else str(index + 1)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


def _tags(text: str) -> list[str]:
    return [tag.strip() for tag in text.split(",") if tag.strip()]
