"""Opaque, prefixed, random identifiers (nothing can be enumerated) and the token format."""

from __future__ import annotations

import secrets
import zlib

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
TOKEN_BODY_LEN = 32
CHECKSUM_LEN = 6
TOKEN_PREFIXES = ("bgp", "bga")


def _random(length: int) -> str:
    # One draw below 62**length, written in base 62: the same uniform characters as a
    # choice per character, for one read of the system's randomness instead of `length`.
    return encode_base62(secrets.randbelow(len(ALPHABET) ** length), length)


def new_id(prefix: str) -> str:
    """A new id such as `bm_3kQ9…`: the prefix names the type, 20 random base-62 characters."""
    return f"{prefix}_{_random(20)}"


def encode_base62(number: int, width: int) -> str:
    """`number` in the token alphabet, left-padded with '0' to `width` characters."""
    digits = ""
    while number:
        number, rest = divmod(number, len(ALPHABET))
        digits = ALPHABET[rest] + digits
    return digits.rjust(width, "0")


def token_checksum(body: str) -> str:
    """CRC32 of the 32-character body, written in base 62 (six characters)."""
    return encode_base62(zlib.crc32(body.encode("ascii")), CHECKSUM_LEN)


def new_token(prefix: str) -> str:
    """A fresh secret token: `<prefix>_` + 32 random characters + 6-character checksum."""
    if prefix not in TOKEN_PREFIXES:
        raise ValueError(f"unknown token prefix {prefix!r}")
    body = _random(TOKEN_BODY_LEN)
    return f"{prefix}_{body}{token_checksum(body)}"


def token_prefix(token: str) -> str | None:
    """The token's prefix when `token` is well formed with a valid checksum, else None.

    This runs before any database lookup, so a mistyped or forged token costs no query.
    """
    prefix, sep, rest = token.partition("_")
    if not sep or prefix not in TOKEN_PREFIXES or len(rest) != TOKEN_BODY_LEN + CHECKSUM_LEN:
        return None
    if any(ch not in ALPHABET for ch in rest):
        return None
    body, checksum = rest[:TOKEN_BODY_LEN], rest[TOKEN_BODY_LEN:]
    return prefix if token_checksum(body) == checksum else None
