"""Strip secrets from text that may be stored or shown: error messages, server replies."""

from __future__ import annotations

import re

from benchgen.core.secrets import redact_secrets

REDACTED = "[redacted]"

# Looser than core.secrets on purpose: a log line lost to over-redaction costs little, so any
# sk-…/bgp_…/bga_… run goes, even one too short or malformed for the exact table.
_TOKEN_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_\-]{8,}|bg[pa]_[A-Za-z0-9]{8,})")
# The shortest key `redact_answer` removes: provider keys are far longer.
_MIN_ANSWER_SECRET = 16
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}")


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Replace every known secret and anything shaped like a bearer token with "[redacted]".

    Well-known secrets (core.secret_patterns' table) get their labelled placeholder instead, e.g.
    "[redacted: AWS access key id]", so a reader of the log knows what a server echoed.

    Args:
        text: the text to clean.
        secrets: exact strings to remove (API keys in use); empty strings are ignored.

    Returns:
        The text with each secret occurrence replaced.
    """
    text = redact_secrets(_remove_secrets(text, secrets))
    text = _BEARER.sub(f"Bearer {REDACTED}", text)
    return _TOKEN_SHAPES.sub(REDACTED, text)


def redact_answer(text: str, secrets: tuple[str, ...]) -> str:
    """Replace the exact `secrets` long enough to be real keys with "[redacted]", and nothing
    else: a model's answer is scored, and its key-shaped examples are its answer."""
    # Local servers take any key, and "EMPTY" or "ollama" are the usual ones: removed from an
    # answer, they would change it ("ollama" is right for some question).
    return _remove_secrets(text, tuple(s for s in secrets if len(s) >= _MIN_ANSWER_SECRET))


def _remove_secrets(text: str, secrets: tuple[str, ...]) -> str:
    """Replace every occurrence of the exact `secrets` (empty ones ignored) with "[redacted]"."""
    # Longest first, so a secret that contains another is removed whole, not half-masked.
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text
