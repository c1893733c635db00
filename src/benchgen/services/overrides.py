"""Deployment settings in force: environment defaults, overridden by operator rows."""

from __future__ import annotations

from typing import Any

from benchgen.core.context import Context
from benchgen.db.tables import DeploymentSetting

# Only these may be changed at run time; everything else needs a restart with new variables.
OVERRIDABLE: dict[str, type] = {
    "agent_allow_create": bool,
    "agent_allow_edit": bool,
    "agent_allow_publish": bool,
    "agent_turn_cap_s": int,
    "create_limit_per_day": int,
    "create_limit_per_minute": int,
    "signup_mode": str,
}
# Every `str` setting above takes one of these words, and nothing else.
CHOICES: dict[str, tuple[str, ...]] = {"signup_mode": ("open", "invite", "closed")}


def effective(ctx: Context, key: str) -> Any:
    """The value in force for `key`: the operator's override if any, else the environment's."""
    row = ctx.session.get(DeploymentSetting, key)
    return row.value if row is not None else getattr(ctx.settings, key)
