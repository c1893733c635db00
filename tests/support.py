"""Test helpers: make users, tokens and benchmarks, and act as any principal kind."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from fastapi import FastAPI
from fastapi.routing import APIRoute
from sqlalchemy import event, select

from benchgen.core.context import Context, Principal
from benchgen.core.permissions import PrincipalKind, Scope
from benchgen.db.tables import OutboxEmail, User
from benchgen.jobs.worker import Worker
from benchgen.services.accounts import credits, tokens, users
from benchgen.services.benchmarks import invitations, lifecycle
from benchgen.services.runtime import Runtime, transaction

T = TypeVar("T")
OPERATOR = Principal.cli()
# CPU threads of a local model (and of torch) in tests. Two test processes share two cores: a
# model on two threads in each waits, at every step, for a thread that has lost its core to the
# other process (a SmolLM2 LoRA job took 158 s that way, 30 s on one thread).
LOCAL_THREADS = 1

MCQ = {
    "title": "Colours",
    "format": "mcq",
    "questions": [
        {"prompt": "Colour of the sky?", "choices": ["Green", "Blue", "Red"], "answer": "B"},
        {"prompt": "Colour of grass?", "choices": ["Green", "Blue"], "answer": "A"},
    ],
}
QA = {
    "title": "Capitals",
    "format": "qa",
    "questions": [
        {"prompt": "Capital of France?", "answer": "Paris"},
        {"prompt": "Capital of Japan?", "answer": ["Tokyo", "Tōkyō"]},
    ],
}


class World:
    """A small façade over services for tests; every call is its own committed transaction."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime

    def do(self, principal: Principal, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one service call as `principal` in its own transaction."""
        with transaction(self.rt, principal) as ctx:
            return fn(ctx, *args, **kwargs)

    def ctx_call(self, principal: Principal, fn: Callable[[Context], T]) -> T:
        """Run an arbitrary function of a context as `principal`."""
        with transaction(self.rt, principal) as ctx:
            return fn(ctx)

    def user(self, email: str, admin: bool = False, credits_: int = 0) -> str:
        """Create a user (as the operator) and return its id."""
        made = self.do(OPERATOR, users.create_user, email, "password123", is_admin=admin)
        if credits_:
            self.do(OPERATOR, credits.grant_credits, made.id, credits_)
        return made.id

    def token(self, user_id: str, scopes: list[str], days: int = 30) -> str:
        """A personal API token minted through the web door."""
        return self.do(Principal.web(user_id), tokens.create_token, "test", scopes, days).secret

    def api(self, secret: str) -> Principal:
        """The principal an API request with `secret` would get (its use recorded as the API
        records it)."""
        principal = self.do(OPERATOR, lambda ctx: tokens.authenticate_token(ctx, secret))
        if self.do(OPERATOR, tokens.use_is_due, principal):
            self.do(OPERATOR, tokens.record_use, principal)
        return principal

    def principal(
        self, kind: PrincipalKind, user_id: str, scopes: frozenset[Scope] | None = None
    ) -> Principal:
        """A principal of `kind` for `user_id`, built the way production builds it."""
        granted = frozenset(Scope) if scopes is None else scopes
        if kind is PrincipalKind.WEB:
            return Principal.web(user_id)
        if kind is PrincipalKind.CLI:
            return Principal.cli(user_id)
        secret = self.token(user_id, sorted(granted))
        if kind is PrincipalKind.API:
            return self.api(secret)
        return self.turn(self.api(secret), granted)

    def turn(self, parent: Principal, scopes: frozenset[Scope]) -> Principal:
        """Mint a turn credential under `parent` and authenticate it as the agent would."""
        from datetime import timedelta

        secret = self.do(
            parent, tokens.mint_turn_credential, "turn_test", scopes, timedelta(minutes=16)
        )
        return self.do(OPERATOR, lambda ctx: tokens.authenticate_turn_credential(ctx, secret))

    def benchmark(self, owner_id: str, spec: dict[str, Any] | None = None) -> str:
        """Create a benchmark through the web door and return its id."""
        created = self.do(Principal.web(owner_id), lifecycle.create_benchmark, spec or QA)
        return created.benchmark.id

    def collaborator(self, owner_id: str, benchmark_id: str, email: str) -> str:
        """Make the account with `email` a collaborator the way people do: the owner invites
        the address, and its holder accepts the mailed link. Returns the account's id."""
        before = self.invitations(email)
        self.do(Principal.web(owner_id), invitations.invite_collaborator, benchmark_id, email)
        (secret,) = set(self.invitations(email)) - set(before)
        user_id = self.ctx_call(
            OPERATOR, lambda ctx: ctx.session.scalar(select(User.id).where(User.email == email))
        )
        self.do(Principal.web(str(user_id)), invitations.accept_invitation, secret)
        return str(user_id)

    def invitations(self, email: str) -> list[str]:
        """The secrets of the invitation links mailed to `email`, oldest first."""

        def mailed(ctx: Context) -> list[str]:
            bodies = ctx.session.scalars(
                select(OutboxEmail.body)
                .where(OutboxEmail.to_email == email)
                .order_by(OutboxEmail.created_at, OutboxEmail.id)
            )
            return [
                found.group(1)
                for body in bodies
                if (found := re.search(r"/invitations/([A-Za-z0-9_-]+)", body))
            ]

        return self.ctx_call(OPERATOR, mailed)


def stub_reply(text: str) -> Any:
    """A stub-endpoint fault that is really a normal 200 reply carrying `text`."""
    import json

    from tests.evals.stub_openai import Fault

    body = {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
    }
    return Fault(200, body=json.dumps(body), headers=(("Content-Type", "application/json"),))


@contextmanager
def sql_sent(runtime: Runtime) -> Iterator[list[str]]:
    """Every statement the runtime's engine sends while the block runs (BEGIN included), with
    its whitespace collapsed: for tests that count queries."""
    statements: list[str] = []

    def note(*args: Any) -> None:
        statements.append(" ".join(str(args[2]).split()))

    event.listen(runtime.database.engine, "before_cursor_execute", note)
    try:
        yield statements
    finally:
        event.remove(runtime.database.engine, "before_cursor_execute", note)


def flat_routes(app: FastAPI) -> Iterator[tuple[str, APIRoute]]:
    """`app.routes` as (full path, route), included routers opened up (FastAPI 0.16x nests
    them in `app.routes`; older versions list the routes themselves)."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:
        yield from ((r.path, r) for r in app.routes if isinstance(r, APIRoute))
        return
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute):
            yield context.path or route.path, route


def python_output(program: str) -> str:
    """What `program` prints, run by this interpreter in a fresh process (which modules a
    start-up loads can only be seen there); its error output on a failure."""
    done = subprocess.run(  # noqa: S603 - this interpreter, a program of the tests
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@contextmanager
def looping(worker: Worker, join_s: float = 10) -> Iterator[threading.Thread]:
    """`worker` taking jobs in a thread of its own for the block; stopped and joined after it
    (stopping wakes it: no poll interval is waited)."""
    thread = threading.Thread(target=worker.run_forever, daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        worker.stop()
        thread.join(join_s)


def at_once(calls: list[Callable[[], Any]], timeout_s: float = 120) -> list[Any]:
    """Every call started at the same moment, each in a thread of its own: what each returned
    or raised (in the order they finished); every one of them must finish."""
    gate = threading.Barrier(len(calls))
    outcomes: list[Any] = []
    lock = threading.Lock()

    def one(call: Callable[[], Any]) -> None:
        gate.wait(30)
        try:
            result = call()
        except Exception as exc:  # the outcome under test
            result = exc
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=one, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s)
    assert len(outcomes) == len(calls), outcomes
    return outcomes


def export_whole(ctx: Context, run_id: str, fmt: str) -> tuple[str, str]:
    """A run's results file whole, as (media type, text): what a download streams."""
    from benchgen.services.runs import results

    return results.export_media(ctx, run_id, fmt), "".join(results.export_chunks(ctx, run_id, fmt))
