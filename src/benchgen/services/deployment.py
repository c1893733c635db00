"""Reading and changing the deployment settings an operator may override at run time."""

from __future__ import annotations

from typing import Any

from annotated_types import Ge
from sqlalchemy import select

from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.core.permissions import Action
from benchgen.db.tables import DeploymentSetting
from benchgen.services import access, audit
from benchgen.services.overrides import CHOICES, OVERRIDABLE


def list_settings(ctx: Context) -> dict[str, Any]:
    """Every overridable setting with the value in force (admin only).

    Raises:
        PermissionDenied: not an admin or the operator.
    """
    access.require(ctx, Action.ADMIN_SETTINGS)
    overrides = {row.key: row.value for row in ctx.session.scalars(select(DeploymentSetting))}
    return {key: overrides.get(key, getattr(ctx.settings, key)) for key in OVERRIDABLE}


def set_setting(ctx: Context, key: str, raw: str) -> Any:
    """Override one deployment setting (admin only).

    Raises:
        PermissionDenied: not an admin or the operator.
        InvalidInput: unknown key, a value of the wrong type, or a word not among the
            setting's choices.
    """
    access.require(ctx, Action.ADMIN_SETTINGS)
    kind = OVERRIDABLE.get(key)
    if kind is None:
        raise invalid(["key"], f"unknown setting; choose one of {', '.join(OVERRIDABLE)}")
    value = _parse(key, kind, raw)
    row = ctx.session.get(DeploymentSetting, key)
    if row is None:
        row = DeploymentSetting(key=key, value=value, updated_at=ctx.now(), updated_by="")
        ctx.session.add(row)
    row.value, row.updated_at, row.updated_by = value, ctx.now(), ctx.principal.door
    audit.record(ctx, audit.AuditAction.DEPLOYMENT_SET, "setting", key, value=value)
    return value


def _parse(key: str, kind: type, raw: str) -> bool | int | str:
    text = raw.strip().lower()
    if kind is str:
        choices = CHOICES[key]
        if text not in choices:
            raise invalid(["value"], f"{key} takes one of {', '.join(choices)}, not {raw!r}")
        return text
    if kind is bool:
        if text in {"true", "1", "yes", "on"}:
            return True
        if text in {"false", "0", "no", "off"}:
            return False
        raise invalid(["value"], f"{key} takes true or false, not {raw!r}")
    least = _minimum(key)
    # isdigit() alone admits '²' and other Unicode digits int() cannot read, and a string of
    # thousands of digits int() refuses: both would escape as a ValueError, not InvalidInput.
    if not (text.isascii() and text.isdigit()) or len(text) > 9 or int(text) < least:
        raise invalid(["value"], f"{key} takes a whole number from {least}, not {raw!r}")
    return int(text)


def _minimum(key: str) -> int:
    # An override must not get below what the environment variable itself may be (the turn
    # cap's 10 s, say): the bound lives once, on Settings.
    rules = Settings.model_fields[key].metadata
    return max(
        [1, *(rule.ge for rule in rules if isinstance(rule, Ge) and isinstance(rule.ge, int))]
    )
