"""BenchGen tokens pasted encoded: base64, hex, reversed, or spaced out."""

# Why: a user (or a hostile page the user pastes) can hand a live token to the language model
# in a form no row of core.secret_patterns' table matches as text. Only these shapes are
# decoded, and a decoded token still needs its checksum, so random base64 or hex is never taken
# for one.
#
# Work stays linear in the text: each base64 run is decoded at its four alignments and each hex
# run at its two (so a token encoded on its own is found even after glued junk), nothing
# shorter than an encoded token body is decoded, and every other shape is one regex scan.

from __future__ import annotations

import binascii
import re
from collections.abc import Iterator
from dataclasses import dataclass

from benchgen.core.ids import CHECKSUM_LEN, TOKEN_BODY_LEN, TOKEN_PREFIXES, token_prefix

_REST = TOKEN_BODY_LEN + CHECKSUM_LEN
_ALNUM = "0-9A-Za-z"
_PREFIXES = "|".join(TOKEN_PREFIXES)
_PREFIX_LEN = len(TOKEN_PREFIXES[0])  # all are three letters

# The shortest encodings worth decoding: a body pasted without its prefix (38 bytes).
_MIN_BASE64 = -(-_REST * 4 // 3)  # 51 characters without padding
_MIN_HEX = 2 * _REST

# Standard and URL-safe base64 in one run; `=` padding only at its end.
_BASE64_RUN = re.compile(rf"[{_ALNUM}+/_\-]{{{_MIN_BASE64},}}={{0,2}}")
# Hex digits in one run, or in pairs with a separator between ("62 67 70 5f", "62:67:70:5f"):
# pairs standing alone, so the end of a word before them ("see 62 67 …") is not taken along.
_HEX_RUN = re.compile(
    rf"[0-9A-Fa-f]{{{_MIN_HEX},}}"
    rf"|(?<![{_ALNUM}])[0-9A-Fa-f]{{2}}(?:[\s:\-][0-9A-Fa-f]{{2}}){{{_REST - 1},}}(?![{_ALNUM}])"
)
_HEX_SEPARATORS = re.compile(r"[\s:\-]")
# What a decoded run may hold: a whole token anywhere (found by its prefix, and the checksum
# says whether what follows is one), or a body standing alone.
_DECODED_PREFIX = re.compile(rf"(?:{_PREFIXES})_".encode())
_DECODED_BODY = re.compile(rf"(?<![{_ALNUM}_])[{_ALNUM}]{{{_REST}}}(?![{_ALNUM}])".encode())
# Bytes that are not token characters: deleted, they leave what could hold a token at all.
_NOT_ALNUM = bytes(byte for byte in range(256) if not re.fullmatch(f"[{_ALNUM}]", chr(byte)))
# Reversed: the prefix, backwards, right after 38 letters and digits.
_BACKWARDS = "|".join(f"_{prefix[::-1]}" for prefix in TOKEN_PREFIXES)
# (The look-behind comes after the literal, so only where one is does it cost anything.)
_REVERSED_END = re.compile(rf"(?:{_BACKWARDS})(?<=[{_ALNUM}]{{{_REST}}}(?:{_BACKWARDS}))")
# Spaced out or broken into groups: "b g p _ 1 2 3 …", "bgp_ABCD-EFGH-…". A stretch is letters
# and digits broken only by short runs of spaces, dashes, dots and the like; squeezed, a token
# in it reads whole (its prefix maybe in capitals).
_SEP = r"[\s\-_.:,|/]{0,3}"
_STRETCH = re.compile(rf"[{_ALNUM}](?:{_SEP}[{_ALNUM}])+")
_SQUEEZED_PREFIX = re.compile(f"(?i:{_PREFIXES})")
_ALNUM_CHAR = re.compile(f"[{_ALNUM}]")
_SEPARATOR = re.compile(r"[^0-9A-Za-z]")


@dataclass(frozen=True)
class Encoded:
    """A token found encoded: `text[start:end]` is the whole encoded run, which is what must go.

    `secret` is the decoded token, or its 38-character body when that is all that was encoded
    (as `core.secrets.Finding.secret` is for a token pasted without its prefix).
    """

    start: int
    end: int
    secret: str


def encoded_tokens(text: str) -> Iterator[Encoded]:
    """Every checksum-valid BenchGen token (or body) that `text` holds in base64 (standard or
    URL-safe, with or without padding), hex, reversed, or spaced out, with the span of its
    encoded form. Plain tokens are not reported: the table of core.secret_patterns finds those."""
    yield from _in_base64(text)
    yield from _in_hex(text)
    yield from _reversed(text)
    yield from _spaced(text)


def _in_base64(text: str) -> Iterator[Encoded]:
    for run in _BASE64_RUN.finditer(text):
        standard = run.group().rstrip("=").replace("-", "+").replace("_", "/")
        for offset in range(4):
            yield from _decoded(run, _decode_base64(standard[offset:]))


def _decode_base64(chars: str) -> bytes:
    """Base64 characters without padding decoded; a stray last one (no whole byte) left out."""
    if len(chars) % 4 == 1:
        chars = chars[:-1]
    try:
        return binascii.a2b_base64(chars + "=" * (-len(chars) % 4))
    except binascii.Error:
        return b""


def _in_hex(text: str) -> Iterator[Encoded]:
    for run in _HEX_RUN.finditer(text):
        digits = _HEX_SEPARATORS.sub("", run.group())
        for offset in range(2):
            yield from _decoded(run, _decode_hex(digits[offset:]))


def _decode_hex(digits: str) -> bytes:
    """Hex digits decoded, a stray last one left out."""
    return bytes.fromhex(digits[: len(digits) // 2 * 2])


def _decoded(run: re.Match[str], data: bytes) -> Iterator[Encoded]:
    if len(data.translate(None, _NOT_ALNUM)) < _REST:
        return  # the common case, random bytes: too few token characters to hold a token
    start, end = run.span()
    for prefix in _DECODED_PREFIX.finditer(data):
        token = data[prefix.start() : prefix.end() + _REST].decode("latin-1")
        if token_prefix(token) is not None:
            yield Encoded(start, end, token)
    for match in _DECODED_BODY.finditer(data):
        body = match.group().decode("ascii")
        if token_prefix(f"{TOKEN_PREFIXES[0]}_{body}") is not None:
            yield Encoded(start, end, body)


def _reversed(text: str) -> Iterator[Encoded]:
    for end in _REVERSED_END.finditer(text):
        start = end.start() - _REST
        token = text[start : end.end()][::-1]
        if token_prefix(token) is not None:
            yield Encoded(start, end.end(), token)


def _spaced(text: str) -> Iterator[Encoded]:
    # Each distinct candidate is checked once: a text of decoys ("bgp bgp bgp …") costs one
    # checksum per different one, and the positions are only worked out for a valid token.
    valid: dict[str, bool] = {}
    for stretch in _STRETCH.finditer(text):
        squeezed = _SEPARATOR.sub("", stretch.group())
        positions: list[int] = []
        for hit in _SQUEEZED_PREFIX.finditer(squeezed):
            token = f"{hit.group().lower()}_{squeezed[hit.end() : hit.end() + _REST]}"
            if token not in valid:
                valid[token] = token_prefix(token) is not None
            if not valid[token]:
                continue
            positions = positions or _alnum_positions(stretch)
            first, body, last = (
                positions[hit.start() + at] for at in (0, _PREFIX_LEN, _PREFIX_LEN + _REST - 1)
            )
            # An unbroken body is the table's (a plain, bare or glued token).
            if _SEPARATOR.search(text, body, last) is not None:
                yield Encoded(first, last + 1, token)


def _alnum_positions(stretch: re.Match[str]) -> list[int]:
    """Where in the text each letter or digit of `stretch` is: the way back from squeezed."""
    return [char.start() + stretch.start() for char in _ALNUM_CHAR.finditer(stretch.group())]
