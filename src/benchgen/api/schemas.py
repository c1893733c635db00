"""Response shapes of the API that services do not already define (their views are reused)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    field_validator,
)
from pydantic_core import PydanticCustomError

from benchgen.core.statuses import TurnStatus
from benchgen.services.benchmarks.lifecycle import BenchmarkView, ChangePreview
from benchgen.services.runs.leaderboards import Leaderboard
from benchgen.services.runs.settings import RunOptions, RunSettings, Subset
from benchgen.services.specs import not_bool

Item = TypeVar("Item")


class Page(BaseModel, Generic[Item]):
    """Every list: the items and a cursor for the next page (null at the end)."""

    items: list[Item]
    next_cursor: str | None = None


@dataclass(frozen=True)
class LeaderboardPage(Leaderboard):
    """Rows of a phase's leaderboard, ranked from the top (a later page's ranks go on where
    the earlier one stopped), with its columns (primary first), each column's title and
    sorting (`desc` or `asc`), and a cursor for the next rows (null at the end)."""

    next_cursor: str | None = None


class Me(BaseModel):
    """The token's user, balance, scopes and expiry."""

    id: str
    email: str
    display_name: str
    is_admin: bool  # an administrator of this server
    credits: int
    scopes: list[str]
    token_id: str | None
    token_expires_at: datetime | None


class CreatedBenchmark(BaseModel):
    """A new benchmark and the warnings found on the way (duplicates: not errors)."""

    benchmark: BenchmarkView
    warnings: list[dict[str, Any]]


class EditedBenchmark(BaseModel):
    """The changed benchmark and what the change did."""

    benchmark: BenchmarkView
    change: ChangePreview


class StartRun(BaseModel):
    """Which model to run on which benchmark (phase: the one open now unless given), with optional
    generation settings, a subset (the run is then partial), the response cache and a spending
    cap (a run whose estimate exceeds `max_credits` does not start)."""

    # A misspelt field would otherwise be dropped: `max_credit` ran the whole benchmark uncapped.
    model_config = ConfigDict(extra="forbid")

    benchmark_id: str = Field(examples=["bm_3kQ9xZ0aB1cD2eF3gH4i"])
    model_id: str = Field(examples=["mdl_builtin_first"])
    phase_id: str | None = None
    settings: RunSettings | None = None
    subset: Subset | None = None
    cache: StrictBool = False  # JSON true/false only: lax pydantic read "yes" as true
    max_credits: int | None = Field(None, ge=0)

    _whole = field_validator("max_credits", mode="before")(not_bool)

    def options(self) -> RunOptions:
        """The run's options as the services take them."""
        return RunOptions(
            settings=self.settings or RunSettings(),
            subset=self.subset,
            cache=self.cache,
            max_credits=self.max_credits,
        )


def _flag_or_number(value: Any) -> bool | int | float:
    """A scoring option as sent, for the scorer to check against the method's option: kept as
    it came (a lax `1` read as `1.0` was reported as "got 1.0"), refused in one error at the
    option's place (a union's refusal was one error per member, at places such as
    `["options", "case", "bool"]`), and an integer too large for a float refused here (the
    scorer's finiteness check raised on it, a 500).

    Raises:
        PydanticCustomError: neither true, false nor a number a float can hold.
    """
    if not isinstance(value, bool | int | float):
        raise PydanticCustomError("option_type", "must be true, false or a number")
    try:
        float(value)
    except OverflowError:
        raise PydanticCustomError("option_too_large", "is too large a number") from None
    return value


ScoringOption = Annotated[
    bool | int | float, PlainValidator(_flag_or_number, json_schema_input_type=bool | float)
]


class ScoringIn(BaseModel):
    """A scoring method and its options (normalisation steps, tolerances…); missing options
    keep their defaults."""

    model_config = ConfigDict(extra="forbid")

    method: str | None = Field(None, max_length=40, examples=["includes"])
    options: dict[str, ScoringOption] | None = Field(
        None, max_length=20, examples=[{"number_words": True, "articles": True}]
    )

    def settings(self) -> dict[str, Any]:
        """The settings as the scoring services take them: what was not sent left out."""
        return self.model_dump(exclude_none=True)


class RescoreIn(BaseModel):
    """Other scoring settings to try; `apply` is a query parameter, so it is refused here
    rather than dropped (a rescore that seemed applied was only a dry run)."""

    model_config = ConfigDict(extra="forbid")

    scoring: ScoringIn | None = Field(
        None, examples=[{"method": "f1", "options": {"threshold": 0.5}}]
    )


class Question(BaseModel):
    """A question; `answer` only for the owner and collaborators."""

    position: int
    prompt: str
    choices: dict[str, str] | None = None
    answer: str | list[str] | None = None
    tags: list[str] = Field(default_factory=list)


class LogLine(BaseModel):
    """One line of a run's log."""

    id: int
    at: datetime
    line: str


# ---------------------------------------------------------------- chat


class ConversationIn(BaseModel):
    """A new conversation; the title is optional."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field("", max_length=200)


# Chat shapes are read straight from the services' views (dataclasses), field by field.
_FromView = ConfigDict(from_attributes=True)


class Button(BaseModel):
    """A control shown with a reply: post `action` back verbatim as `{"action": ...}`."""

    label: str
    action: dict[str, Any]


class ProposalOut(BaseModel):
    """What the agent proposes to do, pending your approval: `preview` holds the action's
    fields and a plain-text rendering in `text`; approving sends `preview_hash` back."""

    model_config = _FromView

    id: str
    kind: str
    preview: dict[str, Any]
    preview_hash: str
    expires_at: datetime
    status: str


class TurnOut(BaseModel):
    """One turn as the sender sees it; `running` turns are read again at their own URL."""

    model_config = _FromView

    # The view calls it `id`; the API says `turn_id` (and reads its own output back).
    turn_id: str = Field(validation_alias=AliasChoices("turn_id", "id"))
    conversation_id: str
    seq: int
    status: TurnStatus
    reply: str
    buttons: list[Button]
    proposal: ProposalOut | None
    notices: list[str]


class TurnRecord(TurnOut):
    """A turn in a transcript: also what was sent, what the agent called, and when."""

    user_text: str
    action: dict[str, Any] | None
    tool_calls: list[dict[str, Any]]
    brain: str
    started_at: datetime
    finished_at: datetime | None


class Transcript(BaseModel):
    """A conversation and its latest turns (a page; see `before`), oldest first."""

    model_config = _FromView

    id: str
    title: str
    created_at: datetime
    updated_at: datetime
    busy: bool
    turn_count: int
    turns: list[TurnRecord]
