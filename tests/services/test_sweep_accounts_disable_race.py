"""An account disabled while one of its own requests is under way: what the request goes on
to launch or spend after the disabling committed is refused, not left to run unstopped."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from benchgen.core.context import Principal
from benchgen.core.errors import Unauthenticated
from benchgen.db.tables import Run
from benchgen.services.accounts import _ledger, users
from benchgen.services.runs import launch
from benchgen.services.runtime import transaction
from tests.support import MCQ, OPERATOR, World

MODEL = "mdl_builtin_first"


@pytest.mark.both_backends
def test_a_run_started_as_the_account_is_disabled_is_refused(world: World, backend: str) -> None:
    if backend == "sqlite":
        pytest.skip("SQLite's write transaction keeps the disabling out until the start ends")
    ana = world.user("ana@example.com", credits_=100)
    bm = world.benchmark(ana, MCQ)
    with pytest.raises(Unauthenticated), transaction(world.rt, Principal.web(ana)) as ctx:
        users.get_me(ctx)  # the request's credential was checked: ana was active then
        world.do(OPERATOR, users.set_active, ana, False)  # an admin, meanwhile, elsewhere
        launch.start_run(ctx, bm, MODEL)
    runs = world.ctx_call(OPERATOR, lambda ctx: ctx.session.scalar(select(func.count(Run.id))))
    assert runs == 0
    assert world.do(OPERATOR, _ledger.balance_of, ana) == 100
