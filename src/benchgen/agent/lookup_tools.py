"""The agent's read-only look-ups of the user's own account (who they are, their credits, whether
they administer the server) and of a benchmark's leaderboard. Each is one service call with the
turn's credential; neither changes anything, and knowing a fact grants no power over it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from pydantic_ai import Tool

from benchgen.agent.state import TurnState, plain
from benchgen.agent.tools import Deps, Id
from benchgen.core.context import Context
from benchgen.services.accounts import credits, users
from benchgen.services.runs import leaderboards

MAX_ROWS = 50
Rows = Annotated[int, Field(ge=1, le=MAX_ROWS)]
_ROW_FIELDS = ("rank", "run_id", "model_name", "submitted_by", "scores", "score_edited")


def my_account(ctx: Deps) -> Any:
    """The user's own account: id, email, display name, credit balance, and whether they are an
    administrator of this server. Knowing it changes nothing the agent may do: administration
    is done by the user in the web app's admin pages, never from the chat.
    """

    def work(c: Context) -> dict[str, Any]:
        me = users.get_me(c)
        # Only the user's own facts: the admin flag decides whether a reply may point to the
        # admin pages (which answer anyone else 403); the credential can never act on them.
        return {
            "account": {
                "id": me.id,
                "email": me.email,
                "display_name": me.display_name,
                "is_admin": me.is_admin,
                "credits": credits.get_balance(c),
            }
        }

    return ctx.deps.call("my_account", {}, work, write=False)


def show_leaderboard(ctx: Deps, benchmark_id: Id, limit: Rows = 10) -> Any:
    """The top rows of a benchmark's leaderboard (its first phase), best first: rank, run,
    model, who submitted it and the scores. Runs are put on a leaderboard by hand in the web
    app, never from the chat.

    Args:
        benchmark_id: the benchmark's id (bm_…).
        limit: how many rows from the top (at most 50).
    """
    args = {"benchmark_id": benchmark_id, "limit": limit}

    def work(c: Context) -> dict[str, Any]:
        board = leaderboards.leaderboard_page(c, benchmark_id, limit=limit).board
        rows = [{k: v for k, v in plain(row).items() if k in _ROW_FIELDS} for row in board.rows]
        shown = {"benchmark_id": board.benchmark_id, "columns": board.columns}
        return {"leaderboard": {**shown, "titles": board.titles, "rows": rows}}

    return ctx.deps.call("show_leaderboard", args, work, write=False)


LOOKUP_TOOLS: list[Tool[TurnState]] = [
    Tool(function, takes_ctx=True) for function in (my_account, show_leaderboard)
]
