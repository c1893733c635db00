"""Account mail sent after a page's response is claimed and recorded in write units of work:
a unit of work opened to read (read-only, or a deferred SQLite transaction) writes nothing."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, select
from sqlalchemy.orm import ORMExecuteState, Session

from benchgen.core.context import Context
from benchgen.db.tables import OutboxEmail
from benchgen.services import deployment
from benchgen.services.runtime import Runtime
from tests.smtp_stub import SmtpStub
from tests.support import OPERATOR, World
from tests.web.support import PASSWORD, csrf_of


def _refuse_statement(state: ORMExecuteState) -> None:
    if not state.is_select:
        raise AssertionError(f"a unit of work opened to read wrote: {state.statement}")


def _refuse_flush(session: Session, *_: object) -> None:
    if session.new or session.dirty or session.deleted:
        raise AssertionError("a unit of work opened to read flushed changes")


@pytest.fixture
def read_only_reads(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every unit of work opened with `write=False` fails the moment it writes."""
    opened = runtime.database.session

    def session(write: bool = True) -> Session:
        made = opened(write)
        if not write:
            event.listen(made, "do_orm_execute", _refuse_statement)
            event.listen(made, "before_flush", _refuse_flush)
        return made

    monkeypatch.setattr(runtime.database, "session", session)


def _statuses(world: World) -> list[tuple[str, str]]:
    def read(ctx: Context) -> list[tuple[str, str]]:
        return [(row.to_email, row.status) for row in ctx.session.scalars(select(OutboxEmail))]

    return world.ctx_call(OPERATOR, read)


@pytest.mark.usefixtures("read_only_reads")
def test_sign_up_mail_is_claimed_sent_and_recorded_in_write_units_of_work(
    app_client: TestClient, world: World, smtp_stub: SmtpStub
) -> None:
    world.do(OPERATOR, deployment.set_setting, "signup_mode", "open")
    form = {"email": "bob@example.com", "password": PASSWORD, "password_again": PASSWORD}
    csrf = csrf_of(app_client.get("/signup").text)
    assert app_client.post("/signup", data={"csrf_token": csrf, **form}).status_code == 303
    assert [to for to, _ in smtp_stub.sent()] == ["bob@example.com"]
    assert _statuses(world) == [("bob@example.com", "sent")]
