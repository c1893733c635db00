"""One uploaded row as a training record: chat messages or a prompt with its completion,
through a field mapping, checked field by field (unguarded: the service checks access)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchgen.core.errors import invalid
from benchgen.core.text import is_blank, text_problem
from benchgen.services.benchmarks.mapping import FieldName, RowProblem

Shape = Literal["chat", "prompt_completion"]
ROLES = ("system", "user", "assistant")
MAX_MESSAGES = 1_000  # turns of one conversation
CHARS_PER_TOKEN = 4  # a rough rule for English text: the estimate says so where shown
PREVIEW_CHARS = 500  # of each text in a stored preview row
PREVIEW_MESSAGES = 20  # of each conversation in a stored preview row
_KINDS: dict[str, str] = {"chat": "chat", "prompt_completion": "prompt/completion"}


class DatasetMapping(BaseModel):
    """Which source field holds what; unset fields use BenchGen's names (`messages`, or
    `prompt` and `completion`)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    messages: FieldName | None = Field(None, description="A list of {role, content} objects")
    prompt: FieldName | None = None
    completion: FieldName | None = None


def require_one_shape(chosen: str, fields: DatasetMapping) -> None:
    """Refuse a mapping that names fields of both kinds, or of the kind not chosen: the
    fields of the other kind would be ignored without a word.

    Raises:
        InvalidInput: at `["mapping", field]`.
    """
    paired = "prompt" if fields.prompt else "completion" if fields.completion else None
    if fields.messages and paired:
        raise invalid(
            ["mapping", paired],
            "map messages for chat rows, or prompt and completion, not both",
        )
    if chosen == "chat" and paired:
        raise invalid(["mapping", paired], "chat rows have messages, not prompt and completion")
    if chosen == "prompt_completion" and fields.messages:
        raise invalid(["mapping", "messages"], "prompt/completion rows have no messages")


def shape_of(chosen: str, fields: DatasetMapping, first: Mapping[str, Any]) -> Shape:
    """chat or prompt_completion: as chosen, else by the mapping, else by the first row."""
    if chosen == "chat" or fields.messages:
        return "chat"
    if chosen == "prompt_completion" or fields.prompt or fields.completion:
        return "prompt_completion"
    return "chat" if "messages" in first else "prompt_completion"


def columns(shape: Shape, fields: DatasetMapping) -> list[str]:
    """The source fields a row of this shape is read from, as mapped."""
    if shape == "chat":
        return [fields.messages or "messages"]
    return [fields.prompt or "prompt", fields.completion or "completion"]


def record(shape: Shape, fields: DatasetMapping, row: Mapping[str, Any]) -> dict[str, Any]:
    """The row as a normalised record (`{"messages": [...]}` or `{"prompt", "completion"}`).

    Raises:
        RowProblem: a field is missing or holds something a training record cannot.
    """
    _refuse_other_shape(shape, fields, row)
    if shape == "chat":
        (messages,) = columns(shape, fields)
        return {"messages": _messages(_field(row, messages, "messages"))}
    prompt_name, completion_name = columns(shape, fields)
    prompt = _text(_field(row, prompt_name, "prompt"), "prompt")
    completion = _text(_field(row, completion_name, "completion"), "completion")
    if is_blank(completion):
        raise RowProblem("completion", "must not be empty")
    return {"prompt": prompt, "completion": completion}


def _refuse_other_shape(shape: Shape, fields: DatasetMapping, row: Mapping[str, Any]) -> None:
    """A row of the other kind is named as such, not as a row that lacks a field."""
    other: Shape = "prompt_completion" if shape == "chat" else "chat"
    wanted = columns(shape, fields)
    if any(name in row for name in wanted) or not all(
        name in row for name in columns(other, fields)
    ):
        return
    raise RowProblem(
        "messages" if shape == "chat" else "prompt",
        f"is a {_KINDS[other]} row, but this dataset is {_KINDS[shape]} (by the chosen format, "
        "the mapping or the first row): every row must be of one kind",
    )


def _field(row: Mapping[str, Any], name: str, part: str) -> Any:
    if name not in row or row[name] is None:
        raise RowProblem(part, f"the field {name!r} is missing")
    return row[name]


def _text(value: Any, part: str) -> str:
    if not isinstance(value, str):
        raise RowProblem(part, f"must be text, not {type(value).__name__}")
    # The text is shown on the dataset's page and fed to a model: the characters that hide or
    # reorder text are refused here as in every stored text.
    problem = text_problem(value)
    if problem is not None:
        raise RowProblem(part, problem)
    return value


def _messages(value: Any) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        raise RowProblem("messages", "must be a non-empty list of {role, content} objects")
    if len(value) > MAX_MESSAGES:
        raise RowProblem("messages", f"at most {MAX_MESSAGES} messages ({len(value)})")
    messages = [_message(item, index) for index, item in enumerate(value)]
    if messages[0]["role"] == "assistant":
        # Training renders what comes before each assistant turn as its prompt, and a chat
        # template cannot render an empty conversation: the job would fail once queued.
        raise RowProblem(
            "messages.0.role", "the first message must be a system or user message, not assistant"
        )
    if not any(message["role"] == "assistant" for message in messages):
        # The assistant's turns are what training teaches: without one the row teaches nothing.
        raise RowProblem("messages", "needs at least one assistant message")
    return messages


def _message(item: Any, index: int) -> dict[str, str]:
    where = f"messages.{index}"
    if not isinstance(item, dict):
        raise RowProblem(where, "must be an object with role and content")
    role = item.get("role")
    if role not in ROLES:
        raise RowProblem(f"{where}.role", f"must be one of {', '.join(ROLES)}, not {role!r}")
    content = _text(_field(item, "content", f"{where}.content"), f"{where}.content")
    if role == "assistant" and is_blank(content):
        raise RowProblem(f"{where}.content", "an assistant message must not be empty")
    # Only role and content are kept: other keys (names, weights) mean nothing to training here.
    return {"role": role, "content": content}


def token_estimate(item: Mapping[str, Any]) -> int:
    """A rough token count of one record: its characters / 4, rounded up (no tokenizer)."""
    if "messages" in item:
        chars = sum(len(message["content"]) for message in item["messages"])
    else:
        chars = len(item["prompt"]) + len(item["completion"])
    return math.ceil(chars / CHARS_PER_TOKEN)


def preview_row(item: Mapping[str, Any]) -> dict[str, Any]:
    """A record with each text cut to `PREVIEW_CHARS`, as stored for the dataset's page."""
    if "messages" in item:
        shown = item["messages"][:PREVIEW_MESSAGES]
        return {"messages": [{"role": m["role"], "content": _cut(m["content"])} for m in shown]}
    return {"prompt": _cut(item["prompt"]), "completion": _cut(item["completion"])}


def _cut(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"
