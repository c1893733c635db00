"""Reading and changing the deployment settings an operator may override at run time."""

from __future__ import annotations

from typing import Any

from annotated_types import Ge, Le
from sqlalchemy import select, union_all

from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.core.permissions import Action
from benchgen.db.tables import DeploymentSetting, Judge, Model, NotificationSetting
from benchgen.services import _keyring, access, audit, overrides
from benchgen.services.overrides import CHOICES, OVERRIDABLE

# Nine digits at most: more than any limit needs, and a long string of digits is refused before
# int() reads it.
MAX_NUMBER = 999_999_999


def list_settings(ctx: Context) -> dict[str, Any]:
    """Every overridable setting with the value in force (admin only).

    Raises:
        PermissionDenied: not an admin or the operator.
    """
    access.require(ctx, Action.ADMIN_SETTINGS)
    overrides = {row.key: row.value for row in ctx.session.scalars(select(DeploymentSetting))}
    return {key: overrides.get(key, getattr(ctx.settings, key)) for key in OVERRIDABLE}


def secret_key_problem(ctx: Context) -> str:
    """Why this process's BENCHGEN_SECRET_KEY looks unlike the one the stored API keys and
    webhook secrets were encrypted with ("" when one of the five newest decrypts, or none is
    stored): a worker started with another key would fail every run that needs one.

    Raises:
        PermissionDenied: not an admin or the operator.
    """
    access.require(ctx, Action.ADMIN_SETTINGS)
    stored = union_all(
        select(Model.api_key_enc.label("token"), Model.updated_at.label("at")).where(
            Model.api_key_enc.is_not(None)
        ),
        select(Judge.api_key_enc, Judge.updated_at).where(Judge.api_key_enc.is_not(None)),
        select(NotificationSetting.webhook_secret_enc, NotificationSetting.updated_at).where(
            NotificationSetting.webhook_secret_enc.is_not(None)
        ),
    ).subquery()
    newest = ctx.session.scalars(select(stored.c.token).order_by(stored.c.at.desc()).limit(5))
    tokens = list(newest)
    if not tokens or any(_keyring.readable(ctx, token) for token in tokens):
        return ""
    return (
        f"this process's secret key decrypts none of the {len(tokens)} newest stored API keys: "
        "give it the server's BENCHGEN_SECRET_KEY, or runs that need a key will fail"
    )


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
    # What it was, so that the audit log tells how to put it back.
    previous = overrides.effective(ctx, key)
    row = ctx.session.get(DeploymentSetting, key)
    if row is None:
        row = DeploymentSetting(key=key, value=value, updated_at=ctx.now(), updated_by="")
        ctx.session.add(row)
    row.value, row.updated_at, row.updated_by = value, ctx.now(), ctx.principal.door
    audit.record(
        ctx, audit.AuditAction.DEPLOYMENT_SET, "setting", key, value=value, previous=previous
    )
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
    least, most = number_bounds(key)
    # isdigit() alone admits '²' and other Unicode digits int() cannot read, and a string of
    # thousands of digits int() refuses: both would escape as a ValueError, not InvalidInput.
    plain = text.isascii() and text.isdigit() and len(text) <= len(str(MAX_NUMBER))
    if not plain or not least <= int(text) <= most:
        raise invalid(["value"], f"{key} takes a whole number from {least} to {most}, not {raw!r}")
    return int(text)


def number_bounds(key: str) -> tuple[int, int]:
    """The least and the most a whole-number setting may be overridden to (its form's bounds).

    An override must stay within what the environment variable itself may be (the turn cap's
    10 s to an hour, say): the bounds live once, on Settings.
    """
    rules = Settings.model_fields[key].metadata
    least = max(
        [1, *(rule.ge for rule in rules if isinstance(rule, Ge) and isinstance(rule.ge, int))]
    )
    most = min(
        [
            MAX_NUMBER,
            *(rule.le for rule in rules if isinstance(rule, Le) and isinstance(rule.le, int)),
        ]
    )
    return least, most
