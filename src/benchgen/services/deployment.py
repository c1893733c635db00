"""Reading and changing the deployment settings an operator may override at run time."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.core.permissions import Action
from benchgen.db.tables import DeploymentSetting
from benchgen.services import access, audit
from benchgen.services.overrides import OVERRIDABLE


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
        InvalidInput: unknown key or a value of the wrong type.
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
    audit.record(ctx, "deployment.set", "setting", key, value=value)
    return value


def _parse(key: str, kind: type, raw: str) -> bool | int:
    text = raw.strip().lower()
    if kind is bool:
        if text in {"true", "1", "yes", "on"}:
            return True
        if text in {"false", "0", "no", "off"}:
            return False
        raise invalid(["value"], f"{key} takes true or false, not {raw!r}")
    if not text.isdigit() or int(text) < 1:
        raise invalid(["value"], f"{key} takes a positive whole number, not {raw!r}")
    return int(text)
