"""Models as the services that run them need them, without permission checks: the row a user may
use, its engine spec with the key decrypted, the operator's host allowlist."""

from __future__ import annotations

from benchgen.core.context import Context
from benchgen.core.errors import NotFound
from benchgen.db.tables import Model
from benchgen.evals.types import ModelSpec
from benchgen.services import _keyring

ANTHROPIC_URL = "https://api.anthropic.com/v1"


def usable_model(ctx: Context, model_id: str) -> Model:
    """A live platform model or one of the acting user's own (for services that use it).

    Raises:
        NotFound: missing, deleted, or another user's (indistinguishable on purpose).
    """
    row = ctx.session.get(Model, model_id)
    if row is None or row.deleted_at is not None:
        raise NotFound("No such model.", {"id": model_id})
    if row.owner_id is not None and row.owner_id != ctx.principal.user_id:
        raise NotFound("No such model.", {"id": model_id})
    return row


def model_spec(ctx: Context, row: Model) -> ModelSpec:
    """How the engine calls `row`, with the key decrypted (never stored or logged again)."""
    key = _keyring.decrypt(ctx, row.api_key_enc) if row.api_key_enc else None
    base_url = row.base_url or (ANTHROPIC_URL if row.kind == "anthropic" else None)
    params = dict(row.params)
    return ModelSpec(row.kind, row.endpoint_model, base_url, key, params, allowlist(ctx))


def allowlist(ctx: Context) -> frozenset[str]:
    """Hosts an operator opened for model endpoints despite private addresses."""
    raw = ctx.settings.model_host_allowlist
    return frozenset(host.strip().lower() for host in raw.split(",") if host.strip())
