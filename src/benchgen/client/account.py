"""Calls about the token's own account: who it is and the credit ledger."""

from __future__ import annotations

from typing import cast

from benchgen.client.connection import PAGE, Connection
from benchgen.client.shapes import LedgerLine, Me


class AccountCalls(Connection):
    """`me` and `credits`."""

    def me(self) -> Me:
        """The token's user, credit balance, scopes and expiry.

        Returns:
            The user behind the token.
        """
        return cast(Me, self._json("GET", "/me"))

    def credits(self) -> list[LedgerLine]:
        """The whole credit ledger, newest first (every page).

        Returns:
            Grants, reservations, settlements and refunds.
        """
        return cast(list[LedgerLine], list(self._pages("/credits", {}, PAGE)))
