"""Run notifications against hostile input, disabled accounts and an unreadable secret."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from benchgen.core.context import Context, Principal
from benchgen.core.errors import InvalidInput
from benchgen.db.tables import NotificationSetting, RunNotification
from benchgen.services.accounts import users
from benchgen.services.runs import execution, launch, notifications, run_log
from benchgen.services.runtime import Runtime
from tests.services.test_notifications import (
    FIRST,
    WORKER,
    Receiver,
    _claims,
    open_local,
    receivers,
)
from tests.services.test_runs import work_all
from tests.support import MCQ, OPERATOR, World

__all__ = ["open_local", "receivers"]  # fixtures, used by name


@pytest.mark.parametrize("url", ["http://[::1/x", "https://[example.com/hook"])
def test_an_unclosed_ipv6_bracket_is_refused_by_field(world: World, url: str) -> None:
    ana = world.user("ana@example.com")
    with pytest.raises(InvalidInput) as caught:
        world.do(Principal.web(ana), notifications.update_notification_settings, False, url)
    assert caught.value.errors[0]["loc"] == ["webhook_url"]


def test_a_rotation_without_an_address_does_not_remove_the_webhook(
    world: World, open_local: Runtime, receivers: list[Receiver]
) -> None:
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    world.do(web, notifications.update_notification_settings, False, receivers[0].url)
    with pytest.raises(InvalidInput) as caught:
        world.do(web, notifications.update_notification_settings, False, None, True)
    assert caught.value.errors[0]["loc"] == ["rotate_secret"]
    kept = world.do(web, notifications.get_notification_settings)
    assert kept.webhook_url == receivers[0].url and kept.has_webhook_secret


def test_a_disabled_accounts_stopped_run_notifies_nobody(
    world: World, open_local: Runtime, receivers: list[Receiver]
) -> None:
    hook = receivers[0]
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    world.do(web, notifications.update_notification_settings, True, hook.url)
    run_id = _mcq_run(world, ana)
    assert world.do(WORKER, execution.begin_run, run_id) is not None
    # Disabled while it may be in the wrong hands: its webhook must not hear of the run.
    world.do(OPERATOR, users.set_active, ana, False)
    world.do(WORKER, execution.finish_run, run_id, cancelled=True)
    world.do(WORKER, notifications.notify_run_finished, run_id)
    work_all(open_local)
    assert hook.seen == [] and _claims(world, run_id) == []


def test_a_webhook_claimed_before_the_account_was_disabled_is_dropped(
    world: World, open_local: Runtime, receivers: list[Receiver]
) -> None:
    hook = receivers[0]
    ana = world.user("ana@example.com")
    world.do(Principal.web(ana), notifications.update_notification_settings, False, hook.url)
    run_id = _mcq_run(world, ana)
    work_all(open_local)
    hook.seen.clear()
    world.do(OPERATOR, users.set_active, ana, False)

    def reclaim(ctx: Context) -> None:  # as if claimed, then the worker died before sending
        ctx.session.execute(
            update(RunNotification).where(RunNotification.run_id == run_id).values(status="pending")
        )

    world.ctx_call(WORKER, reclaim)
    assert world.do(WORKER, notifications.claim_deliveries, run_id) == []
    assert _claims(world, run_id) == [
        ("webhook", "dropped", "the account was disabled before it was sent")
    ]


def test_a_secret_the_deployment_can_no_longer_read_fails_the_webhook_not_the_mail(
    world: World, open_local: Runtime, receivers: list[Receiver]
) -> None:
    hook = receivers[0]
    ana = world.user("ana@example.com")
    world.do(Principal.web(ana), notifications.update_notification_settings, True, hook.url)

    def other_key(ctx: Context) -> None:  # stored under a key the deployment no longer has
        setting = ctx.session.get(NotificationSetting, ana)
        assert setting is not None
        setting.webhook_secret_enc = "gAAAAABnot-a-token-of-this-key"

    world.ctx_call(WORKER, other_key)
    run_id = _mcq_run(world, ana)
    work_all(open_local)
    assert hook.seen == []
    claims = dict((channel, (status, detail)) for channel, status, detail in _claims(world, run_id))
    assert claims["webhook"][0] == "failed" and "key" in claims["webhook"][1]
    assert claims["mail"][0] == "queued"  # no SMTP: it waits in the outbox, untouched


def test_a_refused_webhook_leaves_its_host_out_of_the_run_log(
    world: World, runtime: Runtime, receivers: list[Receiver]
) -> None:
    # The run's log is read by the benchmark's owner and collaborators too, not only by the
    # launcher whose private setting the address is.
    ana = world.user("ana@example.com")
    private = receivers[0].url.replace("127.0.0.1", "localhost")
    closed = runtime.settings
    runtime.settings = closed.model_copy(update={"model_host_allowlist": "localhost"})
    world.do(Principal.web(ana), notifications.update_notification_settings, False, private)
    runtime.settings = closed
    run_id = _mcq_run(world, ana)
    work_all(runtime)
    lines = [line.line for line in world.do(Principal.web(ana), run_log.read_log, run_id)]
    failed = [line for line in lines if "webhook failed" in line]
    assert failed and "non-public" in failed[0] and "[hidden] resolves" in failed[0]
    assert "localhost" not in failed[0]


def _mcq_run(world: World, user_id: str) -> str:
    """A run of the built-in model on a new mcq benchmark of the user's, started on the web."""
    return world.do(
        Principal.web(user_id), launch.start_run, world.benchmark(user_id, MCQ), FIRST
    ).id
