"""Request shapes every door shares (API bodies, CLI input, agent tool arguments) and limits."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchgen.core.errors import InvalidInput, invalid
from benchgen.core.storable import require_storable

MAX_TITLE = 200
MAX_DESCRIPTION = 20_000
MAX_PROMPT = 20_000
MAX_CHOICE = 2_000
MAX_ANSWER = 2_000
MAX_CHOICES = 26
MAX_QUESTIONS = 10_000
MAX_TAGS = 20
MAX_TAG = 50

_Strict = ConfigDict(extra="forbid", str_strip_whitespace=True)


class QuestionIn(BaseModel):
    """One question: mcq has `choices` and a letter (or the choice's text) as `answer`; qa has one
    or more accepted answers."""

    model_config = _Strict

    prompt: str = Field(max_length=MAX_PROMPT, examples=["What is the capital of Australia?"])
    choices: list[str] | None = Field(None, examples=[["Sydney", "Canberra", "Melbourne"]])
    answer: str | list[str] = Field(examples=["Canberra"])
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    metadata: dict[str, Any] = Field(default_factory=dict)


class BenchmarkIn(BaseModel):
    """A new qa or mcq benchmark with its questions."""

    model_config = _Strict

    title: str = Field(max_length=MAX_TITLE, examples=["World capitals"])
    format: Literal["qa", "mcq"]
    description: str = Field("", max_length=MAX_DESCRIPTION)
    questions: list[QuestionIn] = Field(default_factory=list, max_length=MAX_QUESTIONS)


class BenchmarkChange(BaseModel):
    """One change shape for metadata and questions; `questions` is the full new list."""

    model_config = _Strict

    title: str | None = Field(None, max_length=MAX_TITLE)
    description: str | None = Field(None, max_length=MAX_DESCRIPTION)
    questions: list[QuestionIn] | None = Field(None, max_length=MAX_QUESTIONS)


# The most rows one list call may return. The API's own page limits stay below these, since it
# asks for one row more than a page to learn whether another page follows.
MAX_LIST = 1000
MAX_RESULTS = 5000

Shape = TypeVar("Shape", bound=BaseModel)


def check_window(limit: int, offset: int, most: int) -> None:
    """Validate a page window.

    Raises:
        InvalidInput: limit outside 1..most, or a negative offset.
    """
    if not 1 <= limit <= most:
        raise invalid(["limit"], f"must be between 1 and {most}")
    if offset < 0:
        raise invalid(["offset"], "must be at least 0")


def parse(shape: type[Shape], data: Shape | dict[str, Any]) -> Shape:
    """Validate raw input into `shape`, turning pydantic's errors into one InvalidInput.

    Raises:
        InvalidInput: every problem, each with its place (`loc`) and message.
    """
    require_storable(data.model_dump() if isinstance(data, BaseModel) else data, [])
    if isinstance(data, shape):
        return data
    try:
        return shape.model_validate(data)
    except ValidationError as exc:
        errors = [{"loc": list(error["loc"]), "msg": error["msg"]} for error in exc.errors()]
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"])
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InvalidInput(f"{where}: {first['msg']}{more}", errors) from None
