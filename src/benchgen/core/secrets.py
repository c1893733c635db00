"""Secrets in free text: a curated pattern table, labelled redaction, and requests for them."""

# Why core and not evals/redact.py: the chat screen (services.leaks), the agent's check of its own
# replies and the run-log redactor (evals.redact) all need this table, and core is the one layer
# every one of them may import. It recognises BenchGen tokens by core.ids' checksum, so it sits
# beside that contract. evals.redact stays the run-log redactor and applies this table first.

from __future__ import annotations

import base64
import json
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache, cached_property

from benchgen.core.encoded_tokens import encoded_tokens
from benchgen.core.ids import CHECKSUM_LEN, TOKEN_BODY_LEN, TOKEN_PREFIXES, token_prefix
from benchgen.core.text import INVISIBLE_RUN


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
        """The shape, compiled at its first use (see `_asks`)."""
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


_TOKEN_PREFIX = "(?:" + "|".join(TOKEN_PREFIXES) + ")_"
_TOKEN_REST = TOKEN_BODY_LEN + CHECKSUM_LEN
_TOKEN_LEN = len(TOKEN_PREFIXES[0]) + 1 + _TOKEN_REST


def _is_benchgen_token(candidate: str) -> bool:
    return token_prefix(candidate) is not None


def _is_bare_benchgen_token(candidate: str) -> bool:
    # The checksum covers the body only, so a body with a valid checksum is a token whatever
    # prefix it lost. A random 38-character word passes with odds of one in 62^6 (about 5.7e10).
    return token_prefix(f"{TOKEN_PREFIXES[0]}_{candidate}") is not None


def _joined(candidate: str) -> str:
    """A token wrapped over two lines (or broken by a space), put back together."""
    return re.sub(r"\s", "", candidate)[:_TOKEN_LEN]


def _is_wrapped_benchgen_token(candidate: str) -> bool:
    # A terminal, mail client or PDF wraps a long token; it works again once the reader joins
    # the lines. The checksum keeps two unrelated words from ever counting.
    return token_prefix(_joined(candidate)) is not None


def _is_benchgen_lookalike(candidate: str) -> bool:
    # Right prefix, nearly the right length, but no valid token starts here: most likely a
    # mistyped or clipped token, which still gives most of the secret away. Where a valid token
    # does start here, the exact row has it, and one finding is enough.
    return token_prefix(candidate[:_TOKEN_LEN]) is None


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
        rf"(?=(?P<secret>{_TOKEN_PREFIX}[0-9A-Za-z]{{{_TOKEN_REST}}}))",
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
        + rf"(?P<secret>[0-9A-Za-z]{{{_TOKEN_REST}}})(?![0-9A-Za-z])",
        _is_bare_benchgen_token,
    ),
    # A token broken once by a line break or a space: what is left of it on each side.
    _row(
        SecretKind.BENCHGEN_TOKEN,
        rf"(?<![0-9A-Za-z]){_TOKEN_PREFIX}[0-9A-Za-z]{{0,{_TOKEN_REST - 1}}}\s{{1,2}}"
        rf"[0-9A-Za-z]{{1,{_TOKEN_REST}}}",
        _is_wrapped_benchgen_token,
    ),
    _row(
        SecretKind.BENCHGEN_LOOKALIKE,
        rf"(?<![A-Za-z0-9]){_TOKEN_PREFIX}[0-9A-Za-z]{{{_TOKEN_REST - 4},{_TOKEN_REST + 4}}}"
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
    whole = _joined(finding.secret)
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


_HEAD = re.compile(rf"{_TOKEN_PREFIX}[0-9A-Za-z]{{0,{_TOKEN_REST - 1}}}(?![0-9A-Za-z])")
_PIECE = re.compile("[0-9A-Za-z]+")


def split_token(earlier: str, later: str) -> SplitToken | None:
    """A BenchGen token whose start (its prefix and part of its body) is a word of `earlier`
    and whose rest begins a word of `later`: one pasted in two messages ("it starts bgp_7Fq…",
    then "and ends …"), which neither message holds whole. The checksum keeps unrelated words
    from ever counting."""
    for head in _HEAD.findall(earlier):
        for piece in _PIECE.findall(later):
            tail = piece[: _TOKEN_LEN - len(head)]
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


# --- A14: a reply that asks for a secret ---------------------------------------------------
#
# The agent acts with the user's own permissions, so it never needs a token or a password, and
# anything pasted is redacted before it is read anyway. A reply asking for one is therefore a
# sign of a confused or injected model (a benchmark or tool result telling it to phish), and is
# withheld. The patterns aim at requests ("paste your API token here", "send me your password",
# "what is your token?", "I need your API key"), not at advice about secrets ("never share your
# token", "put your token in BENCHGEN_TOKEN", "I can't see your tokens").

_HANDOVER = (
    r"(?:paste|send|share|give|provide|enter|type|tell|supply|submit|input|post|forward|dm|"
    r"write|include|put|copy|drop|attach|"
    r"reveal|show|hand\s+over|reply\s+with|respond\s+with|read\s+out|let\s+(?:me|us)\s+"
    r"(?:know|have|see))"
)
_DETERMINER = r"(?:your|the|a|an|that|this)"
# Only words that describe a secret may stand between the determiner and the noun, so "the
# number of tokens" or "your answer key" are never taken for one.
_QUALIFIER = (
    r"(?:(?:personal|benchgen|api|access|auth|authentication|bearer|login|account|admin|user|"
    r"secret|private|current|existing|new|valid|own|full|openai|anthropic|github|aws|"
    r"hugging\s*face|hf|cli|bgp_?|bga_?)[\s-]+){0,3}"
)
_NOUN = (
    r"(?:tokens?|passwords?|passphrases?|pass\s*codes?|credentials?|secrets?|"
    r"(?:api|secret|access|private|ssh|auth)[\s-]?keys?|"
    r"(?:openai|anthropic|github|aws|hugging\s*face|hf|provider|model)[\s-]+keys?)"
)
_SECRET = rf"{_DETERMINER}\s+{_QUALIFIER}{_NOUN}\b"
# After the noun: the end of the request, or words that point the secret at the chat.
_POINTED = (
    r"\s*(?:$|[.?!:;,)\n\u2014\u2013]|\s(?:here|below|now|please|in(?:to)?\s+(?:the|this|our)\s+"
    r"(?:chat|conversation|message|box|reply|field)|(?:to|with|for)\s+(?:me|us)|"
    # "… in your next message", "… in the next reply": the chat, in other words.
    r"in\s+(?:your|the|a)\s+(?:next\s+|following\s+)?(?:message|reply|answer|response)|"
    r"so\s+(?:that\s+)?(?:i|we)\b|and\s+(?:i|we)\b|"
    # "… to continue", "… for verification": the reason a phisher gives.
    r"(?:to|for|so\s+as\s+to|in\s+order\s+to)\s+(?:continue|proceed|go\s+on|finish|complete|"
    r"verif(?:y|ication)|authenticat(?:e|ion)|confirm|validat(?:e|ion)|log\s*in|sign\s*in|"
    r"unlock)\b))"
)
_ASKS = (
    # "send me your token, …": asked of the reader, addressed to the agent.
    rf"\b{_HANDOVER}\s+(?:me|us)\s+(?:back\s+)?{_SECRET}",
    # "paste your API token here", "please provide the password."
    rf"\b{_HANDOVER}\s+(?:(?:over|in|back)\s+)?{_SECRET}{_POINTED}",
    # "what is your password?", "what's your BenchGen token", "what is the token you use?"
    rf"\bwhat(?:'s|\s+is|\s+are)\s+(?:your|the)\s+{_QUALIFIER}{_NOUN}"
    r"(?:\s*(?:$|[?.!,:;])|\s+(?:that\s+)?you\s+(?:use|have|got)\b|"
    r"\s+(?:for|of|to)\s+your\s+(?:account|login|profile)\b)",
    # "your token, please!"
    rf"\byour\s+{_QUALIFIER}{_NOUN}\s*,?\s*please\b",
    # "I need your API key", "we'll require your credentials"
    rf"\b(?:i|we)(?:'ll|'d|\s+will|\s+would)?\s+(?:need|require|must\s+have)\s+your\s+"
    rf"{_QUALIFIER}{_NOUN}\b",
)
# "… without your API key — please paste it.": the secret named earlier in the sentence and
# asked for by a pronoun, pointed at the chat. Told apart from advice ("paste it into the model's
# form") by the pointing, as above.
_PRONOUN_ASK = rf"\b{_HANDOVER}\s+(?:me\s+|us\s+)?(?:it|them){_POINTED}"
_NAMED_BEFORE = re.compile(rf"{_NOUN}\b[^.?!\n]*$")
# A request in the same clause after one of these is advice, not a request: "never paste your
# token here", "you don't need to send me your password".
_NEGATION = re.compile(
    r"\b(?:don't|dont|do\s+not|never|not|no\s+need|needn't|shouldn't|should\s+not|mustn't|"
    r"must\s+not|avoid|without|nor|won't|will\s+not|cannot|can't|nobody|no\s+one)\b"
)
_CLAUSE_END = re.compile(r"[.!?;:,\n\u2014\u2013]")


def asks_for_secret(text: str) -> bool:
    """True when `text` asks its reader for a token, key, password or other credential (A14).

    Matching ignores case, curly apostrophes and invisible characters, so "paste your t\u200boken"
    is caught. Advice about secrets ("never share your token", "put your token in
    BENCHGEN_TOKEN", "manage your tokens at /settings/tokens") is not a request.
    """
    plain = INVISIBLE_RUN.sub("", text).replace("\u2019", "'").casefold()
    for pattern in _asks():
        for match in pattern.finditer(plain):
            if not _negated(plain, match.start()):
                return True
    return any(
        _NAMED_BEFORE.search(plain, max(0, match.start() - 200), match.start())
        and not _negated(plain, match.start())
        for match in _pronoun_asks().finditer(plain)
    )


@cache
def _asks() -> tuple[re.Pattern[str], ...]:
    # Compiled at the first check, not on import: every process that may redact a text imports
    # this module, and compiling these and the table's shapes took ~8 ms of `benchgen run`'s
    # start, where nothing is redacted before the first model request.
    return tuple(re.compile(pattern) for pattern in _ASKS)


@cache
def _pronoun_asks() -> re.Pattern[str]:
    return re.compile(_PRONOUN_ASK)


def _negated(text: str, start: int) -> bool:
    clause = _CLAUSE_END.split(text[max(0, start - 200) : start])[-1]
    return _NEGATION.search(clause) is not None
