"""What a user may send in a chat: typed words, or a button's action posted back verbatim."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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

    @field_validator("text")
    @classmethod
    def _said_something(cls, text: str | None) -> str | None:
        # As the web form refuses it: blank words would still decline what is pending.
        if text is not None and not text.strip():
            raise ValueError("must not be blank: type a message")
        return text

    @model_validator(mode="after")
    def _one_of(self) -> MessageIn:
        if (self.text is None) == (self.action is None):
            raise ValueError("send exactly one of 'text' or 'action'")
        return self


# Typed words that approve, and only the proposal the previous turn showed (A8, A11).
ASSENT = frozenset(
    {
        *("yes", "y", "yes please", "approve", "approved", "i approve", "approve it"),
        *("go ahead", "yes go ahead", "ok", "okay", "ok go ahead", "do it", "confirm", "sure"),
    }
)
# Typed words that go on with a benchmark written part by part (A18). They never approve: the
# part waiting for approval is shown again instead.
CONTINUE = frozenset({"continue", "go on", "keep going", "carry on", "resume", "next part"})
# Courtesies around those words change nothing: "please continue" is `continue`.
_POLITE = frozenset({"please", "pls", "ok", "okay", "now", "just", "so", "and", "then", "thanks"})


def _words(text: str) -> str:
    """The message as lower-case words, or "" when it holds anything but Latin letters, spaces,
    commas between words and a closing "." or "!"."""
    # Nothing is dropped to make a match: "OK, но нет", "ok?", "ok 🙅" and "o.k." stay what
    # they are, and match no word list, so they approve nothing (A8: anything else declines).
    plain = re.sub(r"[.!]+$", "", text.casefold().strip()).replace(",", " ")
    return " ".join(plain.split()) if re.fullmatch(r"[a-z ]*", plain) else ""


def is_assent(text: str) -> bool:
    """True when the typed words approve what was shown."""
    return _words(text) in ASSENT


def is_continue(text: str) -> bool:
    """True when the typed words ask to go on with work left unfinished."""
    words = _words(text).split()
    while words and words[0] in _POLITE:
        words.pop(0)
    while words and words[-1] in _POLITE:
        words.pop()
    return " ".join(words) in CONTINUE
