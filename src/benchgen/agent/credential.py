"""The turn credential as the harness holds it: used for every tool call, never shown to a model."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from benchgen.core.context import Context, Principal
from benchgen.services.accounts import tokens
from benchgen.services.runtime import Runtime, transaction

# Authenticating and revoking only read and stamp token rows: a system principal with no grants
# can never pass an access check, so it cannot be used for anything else.
HARNESS = Principal.system("agent-harness", frozenset())


@dataclass
class TurnCredential:
    """A minted `bga_` secret and the runtime it is valid in.

    The secret stays inside this object, which the harness hands to tools as part of their
    dependencies; brains receive only messages and tool definitions, so it cannot reach a prompt
    (A5). It is excluded from `repr` so it cannot reach a log either.
    """

    runtime: Runtime
    secret: str = field(repr=False)

    @contextmanager
    def context(self, write: bool = True) -> Iterator[Context]:
        """One unit of work as the agent principal (`write=False` for reads: on SQLite it then
        takes no write lock, so concurrent turns and requests do not queue behind it).

        The credential is authenticated afresh each time, so a revoked calling token, a disabled
        account or an expired credential stops the agent at its very next tool call (A4).

        Raises:
            Unauthenticated: the credential, the token it came from or the account is dead.
        """
        with transaction(self.runtime, HARNESS, write=write) as auth:
            principal = tokens.authenticate_turn_credential(auth, self.secret)
            yield Context(auth.session, principal, auth.settings, auth.clock)

    def revoke(self) -> None:
        """End the credential now (the harness calls this in a `finally`)."""
        with transaction(self.runtime, HARNESS) as ctx:
            tokens.revoke_credential(ctx, self.secret)
