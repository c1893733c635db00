"""Pasted secrets: redact every one, and revoke a live BenchGen token the moment it is seen."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchgen.core.context import Context
from benchgen.core.secrets import Finding, SecretKind, find_secrets, redact_secrets
from benchgen.services import tokens

TOKENS_PAGE = "/settings/tokens"


@dataclass(frozen=True)
class Screened:
    """Text after screening, safe to store or show: it never holds a secret.

    Attributes:
        text: the text with every secret replaced by a label such as "[redacted: OpenAI key]".
        kinds: the kinds of secret found, each once, in order of first appearance.
        notices: one message for the user per BenchGen token revoked by this screening.
    """

    text: str
    kinds: tuple[SecretKind, ...] = ()
    notices: tuple[str, ...] = ()


def screen_text(ctx: Context, text: str) -> Screened:
    """Redact every secret in `text` and revoke each live BenchGen token in it (rule A15).

    Call it on anything a user typed, and on any text about to be stored or shown. A token seen
    here counts as leaked whoever owns it: revoking it is audited (`token.revoke_leaked`, by id,
    never the secret). An unknown, already revoked or malformed token is redacted all the same,
    with no notice. Revoking the very token a turn started from also ends that turn's credential.

    No permission is checked, by design: redacting needs none, and whoever holds a secret may
    kill it (revoking only ever takes power away).

    Args:
        ctx: the acting context; its session takes the revocations and their audit rows.
        text: the text to screen.

    Returns:
        The redacted text, the kinds found and the notices for the user.

    Raises:
        Nothing of the domain error hierarchy: screening never refuses a text.
    """
    findings = find_secrets(text)
    if not findings:
        return Screened(text)
    kinds = tuple(dict.fromkeys(finding.kind for finding in findings))
    return Screened(redact_secrets(text, findings), kinds, _revoke_tokens(ctx, findings))


def _revoke_tokens(ctx: Context, findings: Sequence[Finding]) -> tuple[str, ...]:
    # Only checksum-valid tokens reach the lookup (the table verifies the checksum), and each
    # distinct token costs one query however often it was pasted.
    secrets = dict.fromkeys(f.secret for f in findings if f.kind is SecretKind.BENCHGEN_TOKEN)
    notices = []
    for secret in secrets:
        revoked = tokens.revoke_leaked(ctx, secret)
        if revoked is not None:
            notices.append(_notice(ctx, secret, revoked.last_four))
    return tuple(notices)


def _notice(ctx: Context, secret: str, last_four: str) -> str:
    # Only the last four characters, which the tokens page shows anyway; never the token's name,
    # since the pasted token may belong to someone else.
    if secret.startswith("bga_"):
        return (
            f"You pasted a BenchGen agent credential (ending …{last_four}). It has been revoked. "
            "Agent credentials last one chat turn, so there is nothing to replace."
        )
    return (
        f"You pasted a BenchGen API token (ending …{last_four}). A token seen in a chat counts "
        "as leaked, so it has been revoked and no longer works anywhere. Make a new one at "
        f"{ctx.settings.link(TOKENS_PAGE)} and keep it out of chats."
    )
