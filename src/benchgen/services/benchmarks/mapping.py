"""Field mappings for imported files: which source field is the prompt, the answer, the choices,
the tags and the id; presets for Inspect AI datasets and lm-evaluation-harness layouts."""

from __future__ import annotations

import json
import math
import string
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

LABELS = string.ascii_uppercase
Preset = Literal["none", "inspect", "lm_eval_mcq"]
AnswerIs = Literal["auto", "index", "letter", "text"]
FieldName = Annotated[str, Field(min_length=1, max_length=200)]
CHOICE_COLUMNS = [f"choice_{letter}" for letter in string.ascii_lowercase]


def _as_list(value: Any) -> Any:
    """One column name is a list of one: `"choices"` and `["choices"]` mean the same."""
    return [value] if isinstance(value, str) else value


class FieldMap(BaseModel):
    """Which source field holds what. Unset fields come from the preset, else BenchGen's own
    names (`prompt`, `answer`, `choices` or `choice_a`…, `tags`, `metadata`)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    prompt: FieldName | None = None
    answer: FieldName | None = None
    # One field holding a list, or several columns holding one choice each.
    choices: Annotated[list[FieldName], BeforeValidator(_as_list)] = Field(
        default_factory=list, max_length=26
    )
    answer_is: AnswerIs = Field(
        "auto",
        description="How an mcq answer is given: index (0-based), letter, text, or auto "
        "(a number or digits are an index, one letter a letter, else the choice's text)",
    )
    tags: FieldName | None = None
    id: FieldName | None = None
    metadata: FieldName | None = None


# Inspect AI's Sample fields (https://inspect.aisi.org.uk/datasets.html).
_INSPECT = {"prompt": "input", "answer": "target", "choices": ["choices"], "id": "id"}
# lm-evaluation-harness multiple-choice layouts, tried in order: the first whose fields the
# file has wins. MMLU, ARC (choices {"text", "label"} with answerKey), the generic
# query/choices/gold, HellaSwag.
_LM_EVAL_LAYOUTS: tuple[dict[str, Any], ...] = (
    {"prompt": "question", "choices": ["choices"], "answer": "answer"},
    {"prompt": "question", "choices": ["choices"], "answer": "answerKey"},
    {"prompt": "query", "choices": ["choices"], "answer": "gold"},
    {"prompt": "ctx", "choices": ["endings"], "answer": "label"},
)
# Fields a layout's files often carry that BenchGen keeps as tags or the source id.
_LM_EVAL_OPTIONAL = {"tags": "subject", "id": "id"}


class RowProblem(Exception):
    """One field of one row cannot become part of a question."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


def resolve(
    preset: Preset, given: FieldMap, columns: Mapping[str, Any], flat: bool
) -> tuple[FieldMap, bool]:
    """The mapping to apply (the preset's fields under those given) and whether the preset
    makes the benchmark multiple choice; `columns` is the first row, `flat` a CSV file.

    Raises:
        RowProblem: no lm-eval layout fits the file's fields (field `preset`).
    """
    chosen = given.model_dump(exclude_unset=True)
    base: dict[str, Any]
    if preset == "inspect":
        base = dict(_INSPECT, metadata="metadata")
    elif preset == "lm_eval_mcq":
        base = _lm_eval_layout(columns)
        base.update({key: name for key, name in _LM_EVAL_OPTIONAL.items() if name in columns})
    else:
        base = {"prompt": "prompt", "answer": "answer", "tags": "tags", "metadata": "metadata"}
        # A JSON row without choices does not make the file qa: a later row may have them.
        named = "choices" in columns or not flat
        base["choices"] = ["choices"] if named else flat_choice_columns(columns)
    return FieldMap.model_validate({**base, **chosen}), preset == "lm_eval_mcq"


def _lm_eval_layout(columns: Mapping[str, Any]) -> dict[str, Any]:
    for layout in _LM_EVAL_LAYOUTS:
        needed = [layout["prompt"], layout["answer"], *layout["choices"]]
        if all(name in columns for name in needed):
            return dict(layout)
    known = "; ".join(
        "/".join([layout["prompt"], *layout["choices"], layout["answer"]])
        for layout in _LM_EVAL_LAYOUTS
    )
    raise RowProblem("preset", f"no lm-eval multiple-choice layout fits the file ({known})")


def flat_choice_columns(columns: Mapping[str, Any]) -> list[str]:
    """BenchGen's CSV layout: `choice_a` up to the last choice column the header has, those it
    lacks included: a missing column is then an empty choice, refused before it shifts the
    letters after it."""
    present = [name for name in CHOICE_COLUMNS if name in columns]
    return CHOICE_COLUMNS[: CHOICE_COLUMNS.index(present[-1]) + 1] if present else []


def choice_cells(names: list[str], row: Mapping[str, Any]) -> list[Any]:
    """The values of the choice fields `names` (one choice each), trailing empty ones dropped
    (rows may have fewer choices than columns).

    Raises:
        RowProblem: an empty field before a given one: dropping it would shift every later
            choice's letter, and a letter answer would name the wrong choice.
    """
    values = [row.get(name) for name in names]
    while values and values[-1] in (None, ""):
        values.pop()
    for name, value in zip(names, values, strict=False):
        if value in (None, ""):
            raise RowProblem("choices", f"the field {name!r} is empty but a later choice is given")
    return values


def has_choices(mapping: FieldMap, row: Mapping[str, Any]) -> bool:
    """Whether the row gives choices under the mapping (it decides qa or mcq when unsaid)."""
    values = [row.get(name) for name in mapping.choices]
    return any(value not in (None, "", [], {}) for value in values)


def to_question(mapping: FieldMap, row: Mapping[str, Any], fmt: str, flat: bool) -> dict[str, Any]:
    """One row as a question object (`QuestionIn`'s fields); validation proper comes later.

    Raises:
        RowProblem: a mapped field is missing or holds something that is not a question's part.
    """
    question: dict[str, Any] = {"prompt": _prompt(mapping, row)}
    if fmt == "mcq":
        choices, labels = _choices(mapping, row)
        question["choices"] = choices
        question["answer"] = _mcq_answer(mapping, row, choices, labels)
    else:
        question["answer"] = _qa_answers(_field(mapping.answer, row, "answer"), flat)
    question["tags"] = _tags(mapping, row)
    question["metadata"] = _metadata(mapping, row)
    return question


def _field(name: str | None, row: Mapping[str, Any], part: str) -> Any:
    if name is None:
        raise RowProblem(part, "no field is mapped to it")
    if name not in row or row[name] is None:
        raise RowProblem(part, f"the field {name!r} is missing")
    return row[name]


def _text(value: Any, part: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RowProblem(part, f"must be text, not {type(value).__name__}")
    if isinstance(value, float):
        if not math.isfinite(value):
            # pandas writes a missing number as NaN: it would be stored as the text "nan".
            raise RowProblem(part, f"must be text, not the number {value}")
        # A Parquet integer column with gaps is read as floats: 4.0 is the 4 it holds.
        return str(int(value)) if value.is_integer() else str(value)
    return value if isinstance(value, str) else str(value)


def _prompt(mapping: FieldMap, row: Mapping[str, Any]) -> str:
    value = _field(mapping.prompt, row, "prompt")
    if isinstance(value, list):
        # Inspect also allows a list of chat messages as input; BenchGen asks one prompt.
        raise RowProblem("prompt", "must be text (a list of chat messages cannot be imported)")
    return _text(value, "prompt")


def _choices(mapping: FieldMap, row: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The choice texts and, when the file labels them (ARC's {"text", "label"}), the labels."""
    if not mapping.choices:
        raise RowProblem("choices", "no field is mapped to the choices")
    if len(mapping.choices) > 1:
        return [_text(value, "choices") for value in choice_cells(mapping.choices, row)], []
    value = _field(mapping.choices[0], row, "choices")
    labels: list[str] = []
    if isinstance(value, dict) and isinstance(value.get("text"), list):
        labels = [_text(label, "choices") for label in value.get("label") or []]
        value = value["text"]
    if not isinstance(value, list):
        raise RowProblem("choices", f"the field {mapping.choices[0]!r} must hold a list")
    return [_text(item, "choices") for item in value], labels


def _mcq_answer(
    mapping: FieldMap, row: Mapping[str, Any], choices: list[str], labels: list[str]
) -> str:
    value = _field(mapping.answer, row, "answer")
    if isinstance(value, list) and len(value) == 1:
        value = value[0]  # Inspect's target may be a list of one letter
    text = _text(value, "answer").strip()
    if text in labels:
        return LABELS[labels.index(text)]
    kind = mapping.answer_is
    if kind == "auto":
        kind = _auto_kind(value, text, choices)
    if kind == "index":
        # ASCII digits only: "²" and other Unicode digits pass isdigit but not int().
        if not (text.isascii() and text.isdigit()) or int(text) >= len(choices):
            raise RowProblem("answer", f"index {text!r} is not one of 0–{len(choices) - 1}")
        return LABELS[int(text)]
    return text.upper() if kind == "letter" else text


def _auto_kind(value: Any, text: str, choices: list[str]) -> AnswerIs:
    """How an answer is given when unsaid: a number or digits an index, one letter a letter
    (as exports write it, whatever the choices' texts), else a choice's text.

    Raises:
        RowProblem: digits that are also the text of another choice (choices "2", "3", "4"
            and answer "3"): either reading may be meant, and a guess would store a wrong
            key. A typed number is an index, as lm-eval's and MMLU's are.
    """
    if isinstance(value, int):
        return "index"
    if len(text) == 1 and text.upper() in LABELS:
        return "letter"
    if not (text.isascii() and text.isdigit()):
        return "text"
    position = int(text)
    if text not in choices or choices.index(text) == position:
        return "index"
    if position >= len(choices):
        return "text"
    raise RowProblem(
        "answer",
        f"{text!r} is both the index of one choice and the text of another: "
        "set answer_is to index or text",
    )


def _qa_answers(value: Any, flat: bool) -> list[str]:
    if isinstance(value, list):
        return [_text(item, "answer") for item in value]
    text = _text(value, "answer")
    # BenchGen's CSV layout separates accepted answers with "|"; other files have lists.
    return [part for part in text.split("|") if part.strip()] if flat else [text]


def _tags(mapping: FieldMap, row: Mapping[str, Any]) -> list[str]:
    value = row.get(mapping.tags) if mapping.tags else None
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [_text(item, "tags") for item in value]
    return [tag for tag in _text(value, "tags").split(";") if tag.strip()]


def _metadata(mapping: FieldMap, row: Mapping[str, Any]) -> dict[str, Any]:
    value = row.get(mapping.metadata) if mapping.metadata else None
    if value is not None and not isinstance(value, dict):
        raise RowProblem("metadata", "must be an object")
    # Parquet and Arrow values (dates, decimals, bytes) become JSON here, as they are stored.
    metadata: dict[str, Any] = json.loads(json.dumps(value or {}, default=str))
    source_id = row.get(mapping.id) if mapping.id else None
    if source_id is not None:
        metadata.setdefault("source_id", _text(source_id, "id"))
    return metadata
