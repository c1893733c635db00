"""Request shapes every door shares (API bodies, CLI input, agent tool arguments) and limits."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
)
from pydantic_core import PydanticCustomError

from benchgen.core.errors import invalid, invalid_all
from benchgen.core.storable import require_storable
from benchgen.core.text import (
    MAX_DESCRIPTION,
    MAX_TITLE,
    line_problem,
    name_problem,
    text_problem,
)

MAX_PROMPT = 20_000
MAX_CHOICE = 2_000
MAX_ANSWER = 2_000
MAX_ANSWERS = 100  # accepted answers of one qa question
MAX_CHOICES = 26
MAX_QUESTIONS = 10_000
MAX_TAGS = 20
MAX_TAG = 50
MAX_METADATA_BYTES = 16 * 1024  # of the metadata as compact JSON
MAX_METADATA_DEPTH = 32  # objects and lists inside one another, as YAML in bundles
MAX_URL = 2000

# Every input shape refuses unknown fields and strips its strings.
STRICT = ConfigDict(extra="forbid", str_strip_whitespace=True)


# Text hygiene for every shape below (core/text.py says why): each door validates through these
# shapes, and pydantic names the field's place (["questions", 3, "prompt"]) in the error.
def _line(value: str) -> str:
    problem = line_problem(value)
    if problem is not None:
        raise PydanticCustomError("text_hygiene", problem)
    return value


def _title(value: str) -> str:
    problem = name_problem(value)
    if problem is not None:
        raise PydanticCustomError("text_hygiene", problem)
    return value


def _text(value: str) -> str:
    problem = text_problem(value)
    if problem is not None:
        raise PydanticCustomError("text_hygiene", problem)
    return value


def _texts(value: str | list[str]) -> str | list[str]:
    for item in [value] if isinstance(value, str) else value:
        _text(item)
    return value


def not_bool(value: Any) -> Any:
    """`value`, unless it is true or false: pydantic reads those as 1 and 0 where an int is due,
    but no count or amount is a yes or no. For `field_validator(…, mode="before")`, which keeps
    the field's bounds in its JSON schema (an `Annotated` validator would hide them).

    Raises:
        PydanticCustomError: `value` is a bool.
    """
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be a whole number, not true or false")
    return value


def finite_number(value: Any) -> Any:
    """`value`, unless it is true or false or reads as NaN or infinity: pydantic takes true as
    1.0, and NaN fails every bound with a message about the bound instead of itself. For
    `field_validator(…, mode="before")`, as `not_bool`.

    Raises:
        PydanticCustomError: `value` is a bool, or a number that is not finite.
    """
    if isinstance(value, bool):
        raise PydanticCustomError("float_type", "must be a number, not true or false")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return value  # not a number at all: pydantic's own check says so
    if not math.isfinite(number):
        raise PydanticCustomError("finite_number", "must be a finite number")
    return value


Line = Annotated[str, AfterValidator(_line)]  # one line: a name, a tag, a model id
Title = Annotated[str, AfterValidator(_title)]  # one line with something visible in it
Text = Annotated[str, AfterValidator(_text)]  # prose: tab and line breaks allowed, no bidi
# For optional fields: a `Field(max_length=…)` beside `| None` binds after the check above and
# reports "items"; these carry their length before it, so it counts characters.
BoundedTitle = Annotated[str, StringConstraints(max_length=MAX_TITLE), AfterValidator(_title)]
BoundedText = Annotated[str, StringConstraints(max_length=MAX_DESCRIPTION), AfterValidator(_text)]
BoundedUrl = Annotated[str, StringConstraints(max_length=MAX_URL), AfterValidator(_line)]


class QuestionIn(BaseModel):
    """One question: mcq has `choices` and a letter (or the choice's text) as `answer`; qa has one
    or more accepted answers."""

    model_config = STRICT

    prompt: Text = Field(max_length=MAX_PROMPT, examples=["What is the capital of Australia?"])
    choices: list[Text] | None = Field(None, examples=[["Sydney", "Canberra", "Melbourne"]])
    answer: Annotated[str | list[str], AfterValidator(_texts)] = Field(examples=["Canberra"])
    tags: list[Line] = Field(default_factory=list, max_length=MAX_TAGS)
    metadata: dict[str, Any] = Field(default_factory=dict)


class BenchmarkIn(BaseModel):
    """A new qa or mcq benchmark with its questions."""

    model_config = STRICT

    # Its rule is the service's (`lifecycle.title_problems`): checked with the questions, so
    # one reply lists every problem of both.
    title: str = Field(max_length=MAX_TITLE, examples=["World capitals"])
    format: Literal["qa", "mcq"]
    description: Text = Field("", max_length=MAX_DESCRIPTION)
    questions: list[QuestionIn] = Field(default_factory=list, max_length=MAX_QUESTIONS)


class BenchmarkChange(BaseModel):
    """One change shape for metadata and questions; `questions` is the full new list."""

    model_config = STRICT

    title: Annotated[str, StringConstraints(max_length=MAX_TITLE)] | None = None  # rule: as above
    description: BoundedText | None = None
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
        InvalidInput: every problem, each with its place (`loc`) and message; input nested
            too deeply to inspect.
    """
    try:
        require_storable(data.model_dump() if isinstance(data, BaseModel) else data, [])
    except RecursionError:
        # Input nested deeper than Python's stack (a metadata value, say) is a bad request.
        raise invalid([], "input nested too deeply") from None
    if isinstance(data, shape):
        return data
    try:
        return shape.model_validate(data)
    except ValidationError as exc:
        errors = [{"loc": list(error["loc"]), "msg": error["msg"]} for error in exc.errors()]
        raise invalid_all(errors) from None
