"""Strip secrets from text that may be stored or shown: error messages, server replies."""

from __future__ import annotations

import re

REDACTED = "[redacted]"

# Shapes of bearer credentials even when the caller did not pass them in: OpenAI/Anthropic-style
# keys (sk-…, sk-ant-…) and BenchGen's own personal tokens and agent turn credentials.
_TOKEN_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_\-]{8,}|bg[pa]_[A-Za-z0-9]{8,})")
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}")


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Replace every known secret and anything shaped like a bearer token with "[redacted]".

    Args:
        text: the text to clean.
        secrets: exact strings to remove (API keys in use); empty strings are ignored.

    Returns:
        The text with each secret occurrence replaced.
    """
    # Longest first, so a secret that contains another is removed whole, not half-masked.
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _BEARER.sub(f"Bearer {REDACTED}", text)
    return _TOKEN_SHAPES.sub(REDACTED, text)
