"""The table of secret shapes: each kind of secret, the pattern that finds it and the second
look that keeps the pattern from over-matching."""

# Why core and not evals/redact.py: the chat screen (services.leaks), the agent's check of its own
# replies and the run-log redactor (evals.redact) all need this table, and core is the one layer
# every one of them may import. It recognises BenchGen tokens by core.ids' checksum, so it sits
# beside that contract. evals.redact stays the run-log redactor and applies this table first.

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from benchgen.core.ids import CHECKSUM_LEN, TOKEN_BODY_LEN, TOKEN_PREFIXES, token_prefix


class SecretKind(StrEnum):
    """What a detected secret is; `label` is how people read it."""

    # The values name kinds of secret, not secrets: hence the S105 waivers.
    BENCHGEN_TOKEN = "benchgen_token"  # noqa: S105
    BENCHGEN_LOOKALIKE = "benchgen_lookalike"
    RUN_PROXY_KEY = "run_proxy_key"
    ANTHROPIC_KEY = "anthropic_key"
    OPENAI_KEY = "openai_key"
    AWS_ACCESS_KEY_ID = "aws_access_key_id"
    AWS_SECRET_ACCESS_KEY = "aws_secret_access_key"  # noqa: S105
    GITHUB_TOKEN = "github_token"  # noqa: S105
    GOOGLE_API_KEY = "google_api_key"
    SLACK_TOKEN = "slack_token"  # noqa: S105
    SLACK_WEBHOOK = "slack_webhook"
    HUGGING_FACE_TOKEN = "hugging_face_token"  # noqa: S105
    PRIVATE_KEY = "private_key"
    JWT = "jwt"

    @property
    def label(self) -> str:
        """The kind in words, e.g. "OpenAI key"."""
        return _LABELS[self]

    @property
    def placeholder(self) -> str:
        """What replaces a secret of this kind, e.g. "[redacted: OpenAI key]"."""
        return f"[redacted: {self.label}]"


_LABELS = {
    SecretKind.BENCHGEN_TOKEN: "BenchGen token",
    SecretKind.BENCHGEN_LOOKALIKE: "possible BenchGen token",
    SecretKind.RUN_PROXY_KEY: "BenchGen run proxy key",
    SecretKind.ANTHROPIC_KEY: "Anthropic key",
    SecretKind.OPENAI_KEY: "OpenAI key",
    SecretKind.AWS_ACCESS_KEY_ID: "AWS access key id",
    SecretKind.AWS_SECRET_ACCESS_KEY: "AWS secret access key",
    SecretKind.GITHUB_TOKEN: "GitHub token",
    SecretKind.GOOGLE_API_KEY: "Google API key",
    SecretKind.SLACK_TOKEN: "Slack token",
    SecretKind.SLACK_WEBHOOK: "Slack webhook",
    SecretKind.HUGGING_FACE_TOKEN: "Hugging Face token",
    SecretKind.PRIVATE_KEY: "private key",
    SecretKind.JWT: "JSON Web Token",
}


@dataclass(frozen=True)
class SecretPattern:
    """One row of the table: a shape, and a second look where the shape alone would over-match.

    When the regex has a group named `secret`, only that group is the secret (the rest is the
    label that makes the shape trustworthy, e.g. `aws_secret_access_key=`).
    """

    kind: SecretKind
    source: str
    check: Callable[[str], bool]

    @cached_property
    def regex(self) -> re.Pattern[str]:
        """The shape, compiled at its first use (see core.secret_requests)."""
        return re.compile(self.source)


def _always(_: str) -> bool:
    return True


def _mixed_case(candidate: str) -> bool:
    # Random keys of 32+ base-62 characters all but surely hold both cases; identifiers and
    # hyphenated words after a look-alike prefix ("sk-learn-…", "hf_hub_…") rarely do.
    return any(ch.isupper() for ch in candidate) and any(ch.islower() for ch in candidate)


def _has_digit(candidate: str) -> bool:
    # Real Slack tokens carry numeric team and user ids; placeholders ("xoxb-your-token") do not.
    return any(ch.isdigit() for ch in candidate)


TOKEN_PREFIX_PATTERN = "(?:" + "|".join(TOKEN_PREFIXES) + ")_"
TOKEN_REST = TOKEN_BODY_LEN + CHECKSUM_LEN
TOKEN_LEN = len(TOKEN_PREFIXES[0]) + 1 + TOKEN_REST


def _is_benchgen_token(candidate: str) -> bool:
    return token_prefix(candidate) is not None


def _is_bare_benchgen_token(candidate: str) -> bool:
    # The checksum covers the body only, so a body with a valid checksum is a token whatever
    # prefix it lost. A random 38-character word passes with odds of one in 62^6 (about 5.7e10).
    return token_prefix(f"{TOKEN_PREFIXES[0]}_{candidate}") is not None


def joined_token(candidate: str) -> str:
    """A token wrapped over two lines (or broken by a space), put back together."""
    return re.sub(r"\s", "", candidate)[:TOKEN_LEN]


def _is_wrapped_benchgen_token(candidate: str) -> bool:
    # A terminal, mail client or PDF wraps a long token; it works again once the reader joins
    # the lines. The checksum keeps two unrelated words from ever counting.
    return token_prefix(joined_token(candidate)) is not None


def _is_benchgen_lookalike(candidate: str) -> bool:
    # Right prefix, nearly the right length, but no valid token starts here: most likely a
    # mistyped or clipped token, which still gives most of the secret away. Where a valid token
    # does start here, the exact row has it, and one finding is enough.
    return token_prefix(candidate[:TOKEN_LEN]) is None


def _has_private_key_body(candidate: str) -> bool:
    # A header mentioned in prose is not a key; a real block has a long base64 run.
    return re.search(r"[A-Za-z0-9+/]{16}", candidate) is not None


def _is_jwt(candidate: str) -> bool:
    # The header segment of a real JWT is base64url-encoded JSON ({"alg": …}).
    header = candidate.split(".", 1)[0]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    except (ValueError, RecursionError):  # RecursionError: deeply nested JSON from a hostile text
        return False
    return isinstance(decoded, dict)


# Not glued to a longer identifier on either side, so a key-like run inside a bigger word is left
# alone. BenchGen tokens need no such guard: the checksum is proof enough.
_L = r"(?<![A-Za-z0-9_\-])"
_R = r"(?![A-Za-z0-9_\-])"
_SEP = r"[_\-. ]?"


def _row(kind: SecretKind, regex: str, check: Callable[[str], bool] = _always) -> SecretPattern:
    return SecretPattern(kind, regex, check)


# Order matters only for the reader: overlapping matches are all redacted (see redact_secrets).
PATTERNS: tuple[SecretPattern, ...] = (
    # A zero-width search, so that junk glued in front of a token cannot swallow its start: every
    # position is tried, and a token is found wherever it begins.
    _row(
        SecretKind.BENCHGEN_TOKEN,
        rf"(?=(?P<secret>{TOKEN_PREFIX_PATTERN}[0-9A-Za-z]{{{TOKEN_REST}}}))",
        _is_benchgen_token,
    ),
    # A token pasted without its prefix (or with a prefix that lost its underscore). Unlike the
    # row above it must otherwise stand alone, as a longer run of letters and digits is left
    # alone: scanning every 38-character window of long base-62 data would cost a checksum per
    # character for no real gain. Right after a whole prefix the row above already has it.
    _row(
        SecretKind.BENCHGEN_TOKEN,
        "(?:(?<![0-9A-Za-z])"
        + "".join(f"|(?<={prefix})" for prefix in TOKEN_PREFIXES)
        + ")"
        + "".join(f"(?<!{prefix}_)" for prefix in TOKEN_PREFIXES)
        + rf"(?P<secret>[0-9A-Za-z]{{{TOKEN_REST}}})(?![0-9A-Za-z])",
        _is_bare_benchgen_token,
    ),
    # A token broken once by a line break or a space: what is left of it on each side.
    _row(
        SecretKind.BENCHGEN_TOKEN,
        rf"(?<![0-9A-Za-z]){TOKEN_PREFIX_PATTERN}[0-9A-Za-z]{{0,{TOKEN_REST - 1}}}\s{{1,2}}"
        rf"[0-9A-Za-z]{{1,{TOKEN_REST}}}",
        _is_wrapped_benchgen_token,
    ),
    _row(
        SecretKind.BENCHGEN_LOOKALIKE,
        rf"(?<![A-Za-z0-9]){TOKEN_PREFIX_PATTERN}[0-9A-Za-z]{{{TOKEN_REST - 4},{TOKEN_REST + 4}}}"
        r"(?![A-Za-z0-9])",
        _is_benchgen_lookalike,
    ),
    # The per-run key a bundle's ingestion program gets for the model proxy (bundles/proxy.py).
    _row(SecretKind.RUN_PROXY_KEY, _L + r"bgr_[A-Za-z0-9_\-]{40}" + _R),
    _row(
        SecretKind.ANTHROPIC_KEY, _L + r"sk-ant-[a-z]+[0-9]*-[A-Za-z0-9_\-]{32,}" + _R, _mixed_case
    ),
    _row(
        SecretKind.OPENAI_KEY,
        _L + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}" + _R,
        _mixed_case,
    ),
    _row(SecretKind.AWS_ACCESS_KEY_ID, r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    # A secret access key is 40 base64 characters with no marker of its own: only trust it next
    # to its name (env var, credentials file, JSON from the AWS CLI, prose "… is …").
    _row(
        SecretKind.AWS_SECRET_ACCESS_KEY,
        rf"(?i)(?:aws{_SEP})?secret{_SEP}access{_SEP}key[\"']?\s*(?:=>|[:=]|\bis\b)?\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    ),
    _row(SecretKind.GITHUB_TOKEN, _L + r"gh[pousr]_[A-Za-z0-9]{36,251}" + _R),
    _row(SecretKind.GITHUB_TOKEN, _L + r"github_pat_[A-Za-z0-9_]{60,240}" + _R),
    _row(SecretKind.GOOGLE_API_KEY, _L + r"AIza[0-9A-Za-z_\-]{35}" + _R),
    _row(SecretKind.SLACK_TOKEN, _L + r"xox[baprs]-[A-Za-z0-9\-]{10,250}" + _R, _has_digit),
    _row(
        SecretKind.SLACK_WEBHOOK,
        r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/"
        r"T[A-Z0-9]{6,}/[A-Za-z0-9_/\-]{20,}",
    ),
    _row(SecretKind.HUGGING_FACE_TOKEN, _L + r"hf_[A-Za-z0-9]{34,60}" + _R, _mixed_case),
    # Up to the matching END line; a block pasted without its END is redacted to the end of the
    # text, since over-redacting a clipped key is the safe way to be wrong.
    _row(
        SecretKind.PRIVATE_KEY,
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)",
        _has_private_key_body,
    ),
    _row(
        SecretKind.JWT,
        r"(?<![A-Za-z0-9_\-.])eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}" + _R,
        _is_jwt,
    ),
)
