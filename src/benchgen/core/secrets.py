"""Secrets in free text: finding them (plain, split by invisible characters, encoded or pasted
in two messages) and redacting them with a labelled placeholder."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchgen.core.encoded_tokens import encoded_tokens
from benchgen.core.ids import TOKEN_PREFIXES, token_prefix
from benchgen.core.secret_patterns import (
    PATTERNS,
    TOKEN_LEN,
    TOKEN_PREFIX_PATTERN,
    TOKEN_REST,
    SecretKind,
    joined_token,
)
from benchgen.core.text import INVISIBLE_RUN


@dataclass(frozen=True)
class Finding:
    """One detected secret: where it is in the text and what kind it is.

    `start` and `end` index the text as given; `secret` is the secret as it works, without the
    invisible characters that may have split it in the text (so `text[start:end]` can be longer).
    A BenchGen token found without its prefix has only its 38 characters as `secret`:
    `token_candidates` gives the whole tokens it may be. One found encoded (base64, hex, …)
    has the decoded token as `secret`, and its span is the whole encoded run.
    """

    kind: SecretKind
    start: int
    end: int
    # Kept out of repr so that logging or printing a finding never prints the secret.
    secret: str = field(repr=False)


@dataclass(frozen=True)
class _Visible:
    """A text without its invisible characters, and the way back to positions in the original.

    Kept runs: the run starting at visible index `starts[i]` starts at `origins[i]` in the text.
    """

    text: str
    starts: list[int]
    origins: list[int]

    def original(self, index: int) -> int:
        run = bisect_right(self.starts, index) - 1
        return self.origins[run] + index - self.starts[run]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span in the text of the visible `[start, end)`, invisible characters inside it
        included."""
        return self.original(start), self.original(end - 1) + 1


def _visible(text: str) -> _Visible:
    # Zero-width and other invisible characters are taken out before matching: otherwise a
    # token split by a U+200B (pasted from a web page, or slipped in on purpose by a model told
    # to leak it) would pass every row while still working once the reader deletes them.
    if INVISIBLE_RUN.search(text) is None:
        return _Visible(text, [0], [0])
    parts, starts, origins = [], [], []
    cursor = kept = 0
    for run in [*INVISIBLE_RUN.finditer(text), None]:
        stop = len(text) if run is None else run.start()
        if stop > cursor:
            starts.append(kept)
            origins.append(cursor)
            parts.append(text[cursor:stop])
            kept += stop - cursor
        cursor = len(text) if run is None else run.end()
    return _Visible("".join(parts), starts or [0], origins or [0])


def find_secrets(text: str) -> list[Finding]:
    """Every secret the table recognises in `text`, in order of position (longest first on ties).

    Invisible characters (zero-width spaces, joiners, soft hyphens, bidi controls, …) are
    ignored, so a secret split by them is still found, and its span covers them.
    A BenchGen token pasted encoded (base64, hex, reversed, spaced out: see core.encoded_tokens)
    is found too: its span is the whole encoded run, its `secret` the decoded token.
    Matches of different rows may overlap; `redact_secrets` covers the union of them all.
    """
    visible = _visible(text)
    found = []
    for pattern in PATTERNS:
        for match in pattern.regex.finditer(visible.text):
            start, end = (
                match.span("secret") if "secret" in pattern.regex.groupindex else match.span()
            )
            secret = visible.text[start:end]
            if pattern.check(secret):
                found.append(Finding(pattern.kind, *visible.span(start, end), secret))
    found += _encoded(visible, found)
    return sorted(found, key=_position)


def _encoded(visible: _Visible, found: Sequence[Finding]) -> list[Finding]:
    # One finding per token: a form the table has already (a token broken once by a space
    # is also "spaced out") is not reported again.
    tokens = [f for f in found if f.kind is SecretKind.BENCHGEN_TOKEN]
    encoded = []
    for hit in encoded_tokens(visible.text):
        start, end = visible.span(hit.start, hit.end)
        if not any(f.start <= start and end <= f.end for f in tokens):
            encoded.append(Finding(SecretKind.BENCHGEN_TOKEN, start, end, hit.secret))
    return encoded


def token_candidates(finding: Finding) -> tuple[str, ...]:
    """The whole BenchGen tokens a finding may be: none for other kinds, the token itself, or,
    for a token found without its prefix, the body under each known prefix.
    """
    if finding.kind is not SecretKind.BENCHGEN_TOKEN:
        return ()
    whole = joined_token(finding.secret)
    if token_prefix(whole) is not None:
        return (whole,)
    return tuple(f"{prefix}_{finding.secret}" for prefix in TOKEN_PREFIXES)


def _position(finding: Finding) -> tuple[int, int]:
    return finding.start, -finding.end


@dataclass(frozen=True)
class SplitToken:
    """A BenchGen token pasted in two messages: `head` ends the earlier one, `tail` is in the
    later one (kept out of repr, as `Finding.secret` is)."""

    token: str = field(repr=False)
    head: str = field(repr=False)
    tail: str = field(repr=False)


_HEAD = re.compile(rf"{TOKEN_PREFIX_PATTERN}[0-9A-Za-z]{{0,{TOKEN_REST - 1}}}(?![0-9A-Za-z])")
_PIECE = re.compile("[0-9A-Za-z]+")


def split_token(earlier: str, later: str) -> SplitToken | None:
    """A BenchGen token whose start (its prefix and part of its body) is a word of `earlier`
    and whose rest begins a word of `later`: one pasted in two messages ("it starts bgp_7Fq…",
    then "and ends …"), which neither message holds whole. The checksum keeps unrelated words
    from ever counting."""
    for head in _HEAD.findall(earlier):
        for piece in _PIECE.findall(later):
            tail = piece[: TOKEN_LEN - len(head)]
            if token_prefix(head + tail) is not None:
                return SplitToken(head + tail, head, tail)
    return None


def redact_secrets(text: str, findings: Sequence[Finding] | None = None) -> str:
    """`text` with each secret replaced by its kind's placeholder, e.g. "[redacted: OpenAI key]".

    Args:
        text: the text to clean.
        findings: the result of `find_secrets(text)`, when the caller already has it.
    """
    ordered = find_secrets(text) if findings is None else sorted(findings, key=_position)
    parts: list[str] = []
    cursor = 0
    for finding in ordered:
        if finding.start >= cursor:
            parts += [text[cursor : finding.start], finding.kind.placeholder]
        # An overlapping match widens the redaction already placed: no fragment of any secret
        # survives, whichever row matched it.
        cursor = max(cursor, finding.end)
    parts.append(text[cursor:])
    return "".join(parts)
