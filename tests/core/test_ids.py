"""Ids and the token format: shape, checksum test vectors, and single-character corruption."""

from __future__ import annotations

import re
import string
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchgen.core import ids

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
TOKEN_RE = re.compile(r"^(bgp|bga)_[0-9A-Za-z]{38}$")
DOC = Path(__file__).resolve().parents[2] / "docs" / "token-format.md"

# The vectors published in docs/token-format.md (body, CRC32, checksum, whole token).
VECTORS = [
    (
        "0123456789ABCDEFGHIJKLMNOPQRSTUV",
        1546885699,
        "1ggZdL",
        "bgp_0123456789ABCDEFGHIJKLMNOPQRSTUV1ggZdL",
    ),
    (
        "OOOOOOOOOOOOOOOOOOOOOOOOOOOOOOOO",
        65309587,
        "04Q20R",
        "bga_OOOOOOOOOOOOOOOOOOOOOOOOOOOOOOOO04Q20R",
    ),
]


def by_hand(body: str) -> str:
    """The checksum computed independently of `benchgen.core.ids`: CRC32 in base 62, 6 wide."""
    number = zlib.crc32(body.encode("ascii"))
    digits = []
    for _ in range(6):
        number, rest = divmod(number, 62)
        digits.append(BASE62[rest])
    assert number == 0  # 62**6 > 2**32: six digits always hold a CRC32
    return "".join(reversed(digits))


def test_alphabet_is_base62_in_order() -> None:
    assert ids.ALPHABET == BASE62


@pytest.mark.parametrize(("body", "crc", "checksum", "token"), VECTORS)
def test_vector(body: str, crc: int, checksum: str, token: str) -> None:
    assert len(body) == 32
    assert zlib.crc32(body.encode("ascii")) == crc
    assert by_hand(body) == checksum
    assert ids.token_checksum(body) == checksum
    assert token == f"{token[:3]}_{body}{checksum}"
    assert ids.token_prefix(token) == token[:3]


def test_vector_pads_with_leading_zero() -> None:
    _, crc, checksum, _ = VECTORS[1]
    assert crc < 62**5
    assert checksum.startswith("0")
    assert ids.encode_base62(crc, 6) == checksum


@pytest.mark.parametrize(("body", "crc", "checksum", "token"), VECTORS)
def test_vectors_are_published_in_docs(body: str, crc: int, checksum: str, token: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    for part in (body, str(crc), checksum, token):
        assert part in text


def test_encode_base62() -> None:
    assert ids.encode_base62(0, 6) == "000000"
    assert ids.encode_base62(61, 6) == "00000z"
    assert ids.encode_base62(62, 6) == "000010"
    assert ids.encode_base62(2**32 - 1, 6) == by_hand_number(2**32 - 1)


def by_hand_number(number: int) -> str:
    digits = ""
    while number:
        number, rest = divmod(number, 62)
        digits = BASE62[rest] + digits
    return digits.rjust(6, "0")


@pytest.mark.parametrize("prefix", ["bgp", "bga"])
def test_new_token_format(prefix: str) -> None:
    token = ids.new_token(prefix)
    assert TOKEN_RE.match(token)
    assert len(token) == 4 + 32 + 6
    assert token.startswith(f"{prefix}_")
    body, checksum = token[4:36], token[36:]
    assert checksum == by_hand(body)
    assert ids.token_prefix(token) == prefix


def test_new_tokens_are_random() -> None:
    tokens = {ids.new_token("bgp") for _ in range(500)}
    assert len(tokens) == 500


@pytest.mark.parametrize("prefix", ["", "bg", "bgx", "BGP", "bm", "tok"])
def test_new_token_refuses_unknown_prefix(prefix: str) -> None:
    with pytest.raises(ValueError, match="prefix"):
        ids.new_token(prefix)


@st.composite
def token_and_change(draw: st.DrawFn) -> tuple[str, int, str]:
    """A valid token, a position in it, and a different character to put there."""
    prefix = draw(st.sampled_from(ids.TOKEN_PREFIXES))
    body = draw(st.text(alphabet=BASE62, min_size=32, max_size=32))
    token = f"{prefix}_{body}{by_hand(body)}"
    position = draw(st.integers(0, len(token) - 1))
    replacement = draw(
        st.one_of(st.sampled_from(BASE62 + "_-. "), st.characters()).filter(
            lambda ch: ch != token[position]
        )
    )
    return token, position, replacement


@given(token_and_change())
def test_any_single_changed_character_is_rejected(case: tuple[str, int, str]) -> None:
    token, position, replacement = case
    assert ids.token_prefix(token) == token[:3]
    changed = token[:position] + replacement + token[position + 1 :]
    result = ids.token_prefix(changed)
    if position >= 4:
        # Body, checksum: CRC32 catches every error burst up to 32 bits, so any one changed
        # character of the body is caught; any changed checksum character no longer matches.
        assert result is None
    else:
        # The checksum covers the body only (ARCHITECTURE §6), so turning `bgp` into `bga` or
        # back yields the other well-formed kind; it is never accepted as the original kind,
        # and its SHA-256 (which covers the whole token) matches no stored token.
        assert result != token[:3]
        assert result is None or {token[:3], result} == {"bgp", "bga"}


@given(st.text(alphabet=BASE62, min_size=32, max_size=32))
def test_checksum_matches_hand_computation(body: str) -> None:
    assert ids.token_checksum(body) == by_hand(body)
    assert ids.token_prefix(f"bgp_{body}{by_hand(body)}") == "bgp"


VALID = VECTORS[0][3]


@pytest.mark.parametrize(
    "token",
    [
        "",
        "bgp",
        "bgp_",
        VALID.replace("bgp_", "bgx_"),
        VALID.replace("bgp_", "BGP_"),
        VALID.replace("bgp_", "bgp-"),
        VALID.replace("bgp_", "bgp"),
        VALID.replace("bgp_", "xbgp_"),
        VALID.replace("bgp_", "bm_"),
        VALID[:-1],
        VALID + "0",
        VALID[:4] + VALID[5:],
        "bgp_" + "0" * 32,
        " " + VALID,
        VALID + "\n",
        VALID.replace("A", "-"),
        VALID.replace("A", "é"),
        VALID.replace("0", "٠"),  # an Arabic-Indic zero: a digit, but not in the alphabet
        VALID[:4] + "_" + VALID[5:],
    ],
)
def test_malformed_tokens_are_rejected(token: str) -> None:
    assert ids.token_prefix(token) is None


def test_wrong_checksum_is_rejected() -> None:
    body = VECTORS[0][0]
    assert ids.token_prefix(f"bgp_{body}1ggZdM") is None
    assert ids.token_prefix(f"bgp_{body}000000") is None
    # Right checksum, wrong case: the alphabet is case-sensitive.
    assert ids.token_prefix(f"bgp_{body}1GGzDl") is None


@pytest.mark.parametrize("prefix", ["bm", "run", "mdl", "usr", "conv", "prop", "tok", "cr"])
def test_new_id_prefix_and_shape(prefix: str) -> None:
    made = ids.new_id(prefix)
    head, sep, tail = made.partition("_")
    assert (head, sep) == (prefix, "_")
    assert len(tail) == 20
    assert set(tail) <= set(BASE62)


def test_new_ids_are_unique_and_not_sequential() -> None:
    made = [ids.new_id("bm") for _ in range(2000)]
    assert len(set(made)) == len(made)
    assert made != sorted(made)
