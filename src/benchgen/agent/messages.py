"""What a user may send in a chat: typed words, or a button's action posted back verbatim."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_TEXT = 100_000
_Strict = ConfigDict(extra="forbid")


class Approve(BaseModel):
    """The platform's approve control: it names the proposal and the hash of what was shown."""

    model_config = _Strict

    type: Literal["approve"]
    proposal_id: str = Field(min_length=1, max_length=40)
    preview_hash: str = Field(min_length=64, max_length=64)


class Decline(BaseModel):
    """The decline control."""

    model_config = _Strict

    type: Literal["decline"]
    proposal_id: str = Field(min_length=1, max_length=40)


class Choose(BaseModel):
    """A choice button: option `option` of the question asked in turn `turn_id`. A choice only
    answers a question; it never approves anything (A11)."""

    model_config = _Strict

    type: Literal["choose"]
    turn_id: str = Field(min_length=1, max_length=40)
    option: int = Field(ge=0, lt=50)


Action = Annotated[Approve | Decline | Choose, Field(discriminator="type")]


class MessageIn(BaseModel):
    """One message to the agent: exactly one of `text` or `action`."""

    model_config = _Strict

    text: str | None = Field(None, min_length=1, max_length=MAX_TEXT)
    action: Action | None = None

    @model_validator(mode="after")
    def _one_of(self) -> MessageIn:
        if (self.text is None) == (self.action is None):
            raise ValueError("send exactly one of 'text' or 'action'")
        return self
