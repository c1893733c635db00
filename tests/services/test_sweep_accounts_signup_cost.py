"""Refusals cost the server no password hash: a sign-up refused for its input rolls back the
attempt it counted (nothing else bounds how many a sender may make), and a throttled password
change is refused before anything is hashed."""

from __future__ import annotations

from typing import Any

import pytest
from argon2 import PasswordHasher

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, RateLimited
from benchgen.services import deployment
from benchgen.services.accounts import passwords, signup
from benchgen.services.runtime import Runtime
from tests.support import OPERATOR, World

ANON = Principal.system("signin", frozenset())
ADDRESS = "203.0.113.7"


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The passwords argon2 hashed while the test ran."""
    seen: list[str] = []
    original = PasswordHasher.hash

    def counted(self: PasswordHasher, password: Any, **kwargs: Any) -> str:
        seen.append(str(password))
        return original(self, password, **kwargs)

    monkeypatch.setattr(PasswordHasher, "hash", counted)
    return seen


@pytest.mark.parametrize("display_name", ["a\x1b[2Jb", "n" * 201, "\u202eevil"])
def test_a_sign_up_with_a_bad_display_name_hashes_nothing(
    world: World, hashes: list[str], display_name: str
) -> None:
    world.do(OPERATOR, deployment.set_setting, "signup_mode", "open")
    for _ in range(signup.SIGNUPS_PER_WINDOW + 1):
        with pytest.raises(InvalidInput) as refused:
            world.do(
                ANON, signup.sign_up, "new@example.com", "password123", display_name, "", ADDRESS
            )
        assert refused.value.errors[0]["loc"] == ["display_name"]
    assert hashes == []


def test_a_throttled_password_change_hashes_nothing(
    world: World, runtime: Runtime, hashes: list[str]
) -> None:
    me = Principal.web(world.user("ana@example.com"))
    for _ in range(runtime.settings.signin_failures_per_account):
        assert (
            world.do(me, passwords.change_password, "wrong-guess", "new-password", ADDRESS) is None
        )
    hashes.clear()
    with pytest.raises(RateLimited):
        world.do(me, passwords.change_password, "wrong-guess", "new-password", ADDRESS)
    assert hashes == []
