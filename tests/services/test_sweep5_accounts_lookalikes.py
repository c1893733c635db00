"""Addresses that read as another's: "İnfo@" was stored as "i" and a combining dot (read: info@),
and a label written wholly in Cyrillic letters that look Latin ("ехарѕ.com") passed."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput
from benchgen.services.accounts import passwords, signup, users
from benchgen.services.benchmarks import members
from tests.services.test_account_links import ANON, set_mode, sign_up
from tests.support import MCQ, OPERATOR, World

CYRILLIC_DOMAIN = "ana@\u0435\u0445\u0430\u0440\u0455.com"  # ехарѕ.com


@pytest.mark.parametrize(
    ("typed", "why"),
    [
        (
            "\u0130nfo@example.com",
            "has a letter with a separate mark (i and combining dot above): write info@example.com",
        ),
        (
            CYRILLIC_DOMAIN,
            "has a part written in Cyrillic letters that each look Latin (\u0435\u0445\u0430"
            "\u0440\u0455), so it reads as another address: write it in Latin letters",
        ),
        (
            "\u0435\u0445\u0430\u0440\u0455@example.com",
            "has a part written in Cyrillic letters that each look Latin (\u0435\u0445\u0430"
            "\u0440\u0455), so it reads as another address: write it in Latin letters",
        ),
        (
            "\u03bf\u03c1\u03b1@example.com",
            "has a part written in Greek letters that each look Latin (\u03bf\u03c1\u03b1), "
            "so it reads as another address: write it in Latin letters",
        ),
    ],
)
def test_look_alikes_are_refused_saying_why(typed: str, why: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        users.normalize_email(typed)
    assert refused.value.errors == [{"loc": ["email"], "msg": why}]


@pytest.mark.parametrize(
    "typed",
    [
        "иван@пример.рф",  # Cyrillic letters that do not all look Latin
        "ана@ехарѕ.рф",  # at home under a Cyrillic top-level domain
        "ура@mail.ru",  # and under a country's that writes Cyrillic
        "josé@example.com",  # an accent that composes is one letter
        "हिंदी@example.com",  # Devanagari's vowel signs are marks, and its own writing
        "δοκιμή@παράδειγμα.δοκιμή",
    ],
)
def test_addresses_in_one_alphabet_of_their_own_are_kept(typed: str) -> None:
    assert users.normalize_email(typed) == typed


def test_every_door_that_stores_an_address_refuses_them(world: World) -> None:
    """Sign-up, an admin's account, an invite and a whitelist entry all go through one check."""
    owner = world.user("owner@example.com", admin=True)
    set_mode(world, "open")
    with pytest.raises(InvalidInput):
        sign_up(world, "\u0130nfo@example.com")
    with pytest.raises(InvalidInput):
        world.do(OPERATOR, users.create_user, CYRILLIC_DOMAIN, "password123")
    with pytest.raises(InvalidInput):
        world.do(Principal.web(owner), signup.create_invite, CYRILLIC_DOMAIN)
    bm = world.benchmark(owner, MCQ)
    with pytest.raises(InvalidInput):
        world.do(Principal.web(owner), members.add_whitelist_entries, bm, [CYRILLIC_DOMAIN])
    with pytest.raises(InvalidInput):
        world.do(ANON, passwords.request_password_reset, "\u0130nfo@example.com", "192.0.2.1")
    sign_up(world, "info@example.com")  # the address they read as is free to its owner
