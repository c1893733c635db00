"""A settings change in the audit log says what the setting was, to put it back by."""

from __future__ import annotations

import pytest

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.services import audit, deployment
from tests.support import OPERATOR, World


@pytest.mark.both_backends
def test_each_change_records_the_value_before_and_after(world: World, clock: ManualClock) -> None:
    root = world.user("root@example.com", admin=True)
    world.do(OPERATOR, deployment.set_setting, "create_limit_per_day", "25")
    clock.advance(seconds=1)
    world.do(Principal.web(root), deployment.set_setting, "create_limit_per_day", "4")
    events = world.do(OPERATOR, audit.list_events, "create_limit_per_day")
    assert [(e.door, e.user_id, e.details) for e in events] == [
        ("web", root, {"value": 4, "previous": 25}),
        ("cli", None, {"value": 25, "previous": world.rt.settings.create_limit_per_day}),
    ]
