"""Encryption at rest for third-party API keys (model endpoints, judges), with Fernet; no
permission checks: for the model and judge services, which check first."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from benchgen.core.context import Context
from benchgen.core.errors import Conflict

UNREADABLE = (
    "A stored API key cannot be decrypted with this worker's secret key: either the "
    "deployment's BENCHGEN_SECRET_KEY changed since the key was stored (set the key again), or "
    "this worker was started with a different one than the server (the operator must give "
    "every process the same)."
)


def encrypt(ctx: Context, secret: str) -> str:
    """The secret, encrypted with the deployment's key (created on first use)."""
    return _fernet(ctx.settings.secret_key, ctx.settings.data_dir).encrypt(secret.encode()).decode()


def decrypt(ctx: Context, token: str) -> str:
    """The clear secret, only for the moment a model is called.

    Raises:
        Conflict: the deployment's key changed since the secret was stored.
    """
    try:
        fernet = _fernet(ctx.settings.secret_key, ctx.settings.data_dir)
        return fernet.decrypt(token.encode()).decode()
    except InvalidToken:
        raise Conflict(UNREADABLE) from None


def readable(ctx: Context, token: str) -> bool:
    """Whether this process's key decrypts `token` (nothing is kept of the clear text)."""
    try:
        decrypt(ctx, token)
    except Conflict:
        return False
    return True


@lru_cache(maxsize=8)
def _fernet(configured: str | None, data_dir: Path) -> Fernet:
    if configured:
        return Fernet(configured.encode())
    return Fernet(_key_file(data_dir))


def _key_file(data_dir: Path) -> bytes:
    # One machine, no key configured: keep a generated key beside the database, readable by
    # the owner only. Several machines must share BENCHGEN_SECRET_KEY instead.
    path = data_dir / "secret.key"
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes().strip()  # another process made it first: use theirs
    with os.fdopen(fd, "wb") as handle:
        handle.write(Fernet.generate_key())
    return path.read_bytes().strip()
