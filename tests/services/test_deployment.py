"""Deployment settings: admin-only overrides, validation, and precedence over the environment."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select

from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, PermissionDenied
from benchgen.core.permissions import PrincipalKind
from benchgen.db.tables import DeploymentSetting
from benchgen.services import deployment, models, overrides
from benchgen.services.runtime import Runtime
from tests.support import OPERATOR, World


def effective(world: World, key: str) -> object:
    return world.ctx_call(OPERATOR, lambda ctx: overrides.effective(ctx, key))


def stored(world: World) -> dict[str, object]:
    rows = world.ctx_call(
        OPERATOR, lambda ctx: list(ctx.session.scalars(select(DeploymentSetting)))
    )
    return {row.key: row.value for row in rows}


def test_list_settings_shows_environment_values(world: World, settings: Settings) -> None:
    listed = world.do(OPERATOR, deployment.list_settings)
    assert set(listed) == set(overrides.OVERRIDABLE)
    for key, value in listed.items():
        assert value == getattr(settings, key)
    assert listed["create_limit_per_minute"] == 3
    assert listed["agent_allow_create"] is True


@pytest.mark.both_backends
@pytest.mark.parametrize("who", ["operator", "admin"])
def test_admin_and_operator_may_set(world: World, who: str) -> None:
    boss = OPERATOR if who == "operator" else Principal.web(world.user("b@example.com", True))
    assert world.do(boss, deployment.set_setting, "create_limit_per_minute", "7") == 7
    assert world.do(boss, deployment.set_setting, "agent_allow_publish", "off") is False
    listed = world.do(boss, deployment.list_settings)
    assert listed["create_limit_per_minute"] == 7
    assert listed["agent_allow_publish"] is False
    row = world.ctx_call(
        OPERATOR, lambda ctx: ctx.session.get(DeploymentSetting, "agent_allow_publish")
    )
    assert row is not None
    assert row.updated_by == ("cli" if who == "operator" else "web")


@pytest.mark.parametrize(
    "kind", [PrincipalKind.WEB, PrincipalKind.CLI, PrincipalKind.API, PrincipalKind.AGENT]
)
def test_non_admins_may_not_read_or_set(world: World, kind: PrincipalKind) -> None:
    ana = world.user("ana@example.com")
    principal = world.principal(kind, ana)
    with pytest.raises(PermissionDenied):
        world.do(principal, deployment.list_settings)
    with pytest.raises(PermissionDenied):
        world.do(principal, deployment.set_setting, "create_limit_per_day", "1000")
    assert stored(world) == {}


@pytest.mark.parametrize("kind", [PrincipalKind.API, PrincipalKind.AGENT])
def test_admin_tokens_may_not_set(world: World, kind: PrincipalKind) -> None:
    boss = world.user("boss@example.com", admin=True)
    with pytest.raises(PermissionDenied):
        world.do(world.principal(kind, boss), deployment.set_setting, "agent_allow_edit", "false")
    assert stored(world) == {}


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        ("create_limit_per_day", "abc"),
        ("create_limit_per_day", "0"),
        ("create_limit_per_day", "-1"),
        ("create_limit_per_day", "1.5"),
        ("create_limit_per_day", ""),
        ("create_limit_per_day", "true"),
        ("create_limit_per_minute", "²"),  # a Unicode digit, but not a number int() reads
        ("create_limit_per_minute", "١٠"),  # Arabic-Indic "10": only ASCII digits are numbers
        ("create_limit_per_day", "1" * 5000),  # more digits than int() will read
        ("agent_turn_cap_s", "ten"),
        ("agent_turn_cap_s", "9"),  # Settings requires at least 10 s; an override may not undercut
        ("agent_turn_cap_s", "3601"),  # nor outlast its hour (the turn's credential lives as long)
        ("agent_allow_create", "maybe"),
        ("agent_allow_create", "2"),
        ("agent_allow_create", ""),
        ("token_max_days", "10"),  # exists in Settings, but not overridable at run time
        ("database_url", "sqlite://"),
        ("nonsense", "1"),
    ],
)
def test_bad_key_or_value_is_invalid(world: World, key: str, raw: str) -> None:
    with pytest.raises(InvalidInput):
        world.do(OPERATOR, deployment.set_setting, key, raw)
    assert stored(world) == {}


@pytest.mark.both_backends
@pytest.mark.parametrize(
    ("key", "raw", "value"),
    [
        ("agent_turn_cap_s", "10", 10),
        ("create_limit_per_day", "1", 1),
        ("agent_turn_cap_s", "010", 10),
    ],
)
def test_lowest_allowed_values(world: World, key: str, raw: str, value: int) -> None:
    assert world.do(OPERATOR, deployment.set_setting, key, raw) == value
    assert effective(world, key) == value


@pytest.mark.both_backends
@pytest.mark.parametrize(
    ("raw", "value"),
    [("true", True), ("1", True), (" YES ", True), ("on", True), ("False", False), ("0", False)],
)
def test_boolean_spellings(world: World, raw: str, value: bool) -> None:
    assert world.do(OPERATOR, deployment.set_setting, "agent_allow_edit", raw) is value
    assert effective(world, "agent_allow_edit") is value


@pytest.mark.both_backends
def test_override_takes_precedence_over_settings(world: World, settings: Settings) -> None:
    assert effective(world, "create_limit_per_day") == settings.create_limit_per_day == 10
    world.do(OPERATOR, deployment.set_setting, "create_limit_per_day", "25")
    assert effective(world, "create_limit_per_day") == 25
    assert settings.create_limit_per_day == 10  # the environment's value is untouched
    # Setting again updates the one row.
    world.do(OPERATOR, deployment.set_setting, "create_limit_per_day", " 30 ")
    assert effective(world, "create_limit_per_day") == 30
    assert stored(world) == {"create_limit_per_day": 30}
    # Keys without an override still come from Settings.
    assert effective(world, "agent_turn_cap_s") == settings.agent_turn_cap_s


@pytest.mark.both_backends
def test_override_wins_even_when_settings_differ(world: World, settings: Settings) -> None:
    settings.agent_allow_create = False
    assert effective(world, "agent_allow_create") is False
    world.do(OPERATOR, deployment.set_setting, "agent_allow_create", "true")
    assert effective(world, "agent_allow_create") is True
    assert world.do(OPERATOR, deployment.list_settings)["agent_allow_create"] is True


def test_the_secret_key_check_needs_one_of_the_newest_stored_secrets_to_decrypt(
    world: World, runtime: Runtime
) -> None:
    def problem() -> str:
        return world.do(Principal.cli(None), deployment.secret_key_problem)

    assert problem() == ""  # nothing stored: nothing to compare with
    ana = world.user("ana@example.com")
    world.rt.settings = world.rt.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    spec = {"name": "Keyed", "endpoint_model": "m", "base_url": "http://127.0.0.1:9/v1"}
    world.do(Principal.web(ana), models.create_model, {**spec, "api_key": "sk-1"})
    assert problem() == ""
    first = runtime.settings
    runtime.settings = first.model_copy(update={"secret_key": Fernet.generate_key().decode()})
    assert "decrypts none of the 1 newest" in problem()
    # The key changed on purpose: a key stored since decrypts, and the check is content.
    world.do(Principal.web(ana), models.create_model, {**spec, "api_key": "sk-2"})
    assert problem() == ""
    runtime.settings = first
    assert problem() == ""  # the old key still reads the older one among the newest five
    with pytest.raises(PermissionDenied):
        world.do(Principal.web(ana), deployment.secret_key_problem)
