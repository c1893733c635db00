"""Who is acting (Principal) and everything a service call needs (Context)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session

from benchgen.core.clock import Clock
from benchgen.core.config import Settings
from benchgen.core.permissions import Action, PrincipalKind, Scope


@dataclass(frozen=True)
class Principal:
    """The acting party. Build session principals with the class methods; tokens and turn
    credentials are turned into principals only by `services.tokens` after verification."""

    kind: PrincipalKind
    user_id: str | None
    scopes: frozenset[Scope] = field(default_factory=frozenset)
    token_id: str | None = None
    turn_id: str | None = None
    grants: frozenset[Action] = field(default_factory=frozenset)
    name: str = ""
    session_id: str | None = None

    @classmethod
    def web(cls, user_id: str, session_id: str | None = None) -> Principal:
        """A person signed in to the web app (through session `session_id`)."""
        return cls(PrincipalKind.WEB, user_id, session_id=session_id)

    @classmethod
    def cli(cls, user_id: str | None = None) -> Principal:
        """The operator's CLI: acting `--as` a user, or as the operator (admin) when None."""
        return cls(PrincipalKind.CLI, user_id)

    @classmethod
    def system(cls, name: str, grants: frozenset[Action]) -> Principal:
        """A background job that may do exactly `grants`, nothing more."""
        return cls(PrincipalKind.SYSTEM, None, grants=grants, name=name)

    @property
    def is_operator(self) -> bool:
        """The CLI without `--as`: the person who runs the deployment."""
        return self.kind is PrincipalKind.CLI and self.user_id is None

    @property
    def door(self) -> str:
        """How the audit log names the door: web, cli, api:<token id>, agent:<turn id>, system:…."""
        if self.kind is PrincipalKind.API:
            return f"api:{self.token_id}"
        if self.kind is PrincipalKind.AGENT:
            return f"agent:{self.turn_id}"
        if self.kind is PrincipalKind.SYSTEM:
            return f"system:{self.name}"
        return self.kind.value


@dataclass
class Context:
    """One unit of work: the open session, the principal, the settings and the clock."""

    session: Session
    principal: Principal
    settings: Settings
    clock: Clock

    def now(self) -> datetime:
        """The current time, from the context's clock so tests can move it."""
        return self.clock.now()
