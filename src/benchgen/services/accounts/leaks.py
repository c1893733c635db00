"""Pasted secrets: redact every one, and revoke a live BenchGen token the moment it is seen."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from benchgen.core.context import Context
from benchgen.core.secret_patterns import SecretKind
from benchgen.core.secret_requests import asks_for_secret
from benchgen.core.secrets import Finding, find_secrets, redact_secrets, token_candidates
from benchgen.services.accounts import tokens

TOKENS_PAGE = "/settings/tokens"


class Origin(StrEnum):
    """Where screened text came from: it decides how a revocation notice reads."""

    MESSAGE = "message"  # what the user typed or pasted
    REPLY = "reply"  # the agent's own words: its reply, button labels, notices
    TOOL_OUTPUT = "tool_output"  # data a tool handed to the agent


_SEEN_IN = {Origin.REPLY: "the agent's reply", Origin.TOOL_OUTPUT: "data the agent read"}


@dataclass(frozen=True)
class Screened:
    """Text after screening, safe to store or show: it never holds a secret.

    Attributes:
        text: the text with every secret replaced by a label such as "[redacted: OpenAI key]".
        kinds: the kinds of secret found, each once, in order of first appearance.
        notices: one message for the user per BenchGen token revoked by this screening.
        withheld: the text, or lines of it, were taken out: they asked for a secret
            (`screen_reply`).
    """

    text: str
    kinds: tuple[SecretKind, ...] = ()
    notices: tuple[str, ...] = ()
    withheld: bool = False


@dataclass(frozen=True)
class ScreenedValue:
    """A JSON-like value after screening: every string in it (keys too) is redacted.

    Attributes:
        value: the value with the same shape, its strings redacted.
        kinds: the kinds of secret found, each once, in order of first appearance.
        notices: one message for the user per BenchGen token revoked by this screening.
    """

    value: Any
    kinds: tuple[SecretKind, ...] = ()
    notices: tuple[str, ...] = ()


def screen_text(ctx: Context, text: str, origin: Origin = Origin.MESSAGE) -> Screened:
    """Redact every secret in `text` and revoke each live BenchGen token in it (rule A15).

    Call it on anything a user typed, and on any text about to be stored or shown. A token seen
    here counts as leaked whoever owns it: revoking it is audited (`token.revoke_leaked`, by id,
    never the secret). An unknown, already revoked or malformed token is redacted all the same,
    with no notice. Revoking the very token a turn started from also ends that turn's credential.
    A token split by invisible characters, pasted without its `bgp_`/`bga_` prefix, or encoded
    (base64, hex, reversed, spaced out: core.encoded_tokens) is found and revoked too, and the
    whole encoded run is redacted (see core.secrets).

    No permission is checked, by design, so any principal may screen, including the agent
    harness's recorder, which holds only `chat.record`: redacting needs none, and revoking a
    leaked token is always safe. It can only take power away, it needs the secret itself (the
    strongest proof there is that the secret is out), and it is audited with the door it came
    through. A grant would add nothing but a way for screening to fail open.

    Args:
        ctx: the acting context; its session takes the revocations and their audit rows.
        text: the text to screen.
        origin: where the text came from, which only changes the wording of notices.

    Returns:
        The redacted text, the kinds found and the notices for the user.

    Raises:
        Nothing of the domain error hierarchy: screening never refuses a text.
    """
    findings = find_secrets(text)
    if not findings:
        return Screened(text)
    redacted = redact_secrets(text, findings)
    return Screened(redacted, _kinds(findings), _revoke_tokens(ctx, findings, origin))


def screen_value(ctx: Context, value: Any, origin: Origin = Origin.TOOL_OUTPUT) -> ScreenedValue:
    """`screen_text` for JSON-like data (dicts, lists, tuples, strings): redact every string in
    it, keys included, and revoke each live BenchGen token found anywhere in it.

    The agent harness calls this on every tool result before a brain reads it, so a token that
    sits in a benchmark, a run log or an error message is revoked as soon as it surfaces. Other
    values (numbers, None, booleans) come back as they are.

    Args:
        ctx: the acting context (any principal; see `screen_text` on why none needs a grant).
        value: the data to screen.
        origin: where the data came from (wording of notices only).

    Returns:
        The value with the same shape and every string redacted, the kinds found and notices.

    Raises:
        Nothing of the domain error hierarchy: screening never refuses a value.
    """
    findings: list[Finding] = []
    cleaned = _redact_tree(value, findings)
    if not findings:
        return ScreenedValue(value)
    return ScreenedValue(cleaned, _kinds(findings), _revoke_tokens(ctx, findings, origin))


WITHHELD_LINE = "[withheld: this line asked for a secret]"


def screen_reply(ctx: Context, text: str, quoted: str = "") -> Screened:
    """Screen the agent's reply before it is stored or shown (A14, A15).

    Secrets are redacted and live tokens revoked as in `screen_text`; the lines of a reply that
    ask the user for a token, key or password are replaced, or the whole reply by
    `withheld_notice` when nothing else is left or the request spans lines, since the agent
    never needs one and such a reply is a sign of an injected or confused model.

    Args:
        ctx: the acting context (see `screen_text`).
        text: the reply.
        quoted: a part of the reply that the platform wrote from data, a proposal's preview:
            in it only requests count, not the data's own questions ("what is the password?"
            in a quiz), which are put to the model the benchmark tests (`asks_for_secret`).

    Raises:
        Nothing of the domain error hierarchy: screening never refuses a reply.
    """
    screened = screen_text(ctx, text, Origin.REPLY)
    parts = _parts(screened.text, quoted)
    if not any(asks_for_secret(part, quoted=data) for part, data in parts):
        return screened
    # Only the lines that ask go, when the rest asks nothing: a list that quotes someone's
    # title ("Quiz: what is your password?") must not vanish for everyone who lists benchmarks.
    lines = [
        [(line, asks_for_secret(line, quoted=data)) for line in part.split("\n")]
        for part, data in parts
    ]
    shown = ["\n".join(WITHHELD_LINE if asks else line for line, asks in part) for part in lines]
    kept = [line for part in lines for line, asks in part if line.strip() and not asks]
    still = any(
        asks_for_secret(part, quoted=data) for part, (_, data) in zip(shown, parts, strict=True)
    )
    if kept and not still:
        partly = f"{''.join(shown)}\n\n{withheld_notice(ctx, partly=True)}"
        return Screened(partly, screened.kinds, screened.notices, withheld=True)
    # The request spans lines, or is all the reply says: nothing of it is shown.
    return Screened(withheld_notice(ctx), screened.kinds, screened.notices, withheld=True)


def _parts(text: str, quoted: str) -> list[tuple[str, bool]]:
    """`text` cut around `quoted`, each part with whether it is the quoted data (the whole text
    as the agent's own words where `quoted` is not in it)."""
    head, data, tail = text.partition(quoted) if quoted else (text, "", "")
    return [(head, False), (data, True), (tail, False)]


def withheld_notice(ctx: Context, partly: bool = False) -> str:
    """What stands in for a reply, or follows one with lines taken out, that asked for a
    secret (A14)."""
    what = "A line of this reply was" if partly else "This reply was"
    return (
        f"{what} withheld because it asked for a secret (a token, password or cookie). "
        "BenchGen's agent never needs one: it already acts with your permissions. Never paste "
        "a token, password or cookie into the chat; you manage your API tokens at "
        f"{ctx.settings.link(TOKENS_PAGE)}."
    )


def _kinds(findings: Sequence[Finding]) -> tuple[SecretKind, ...]:
    return tuple(dict.fromkeys(finding.kind for finding in findings))


def _redact_tree(value: Any, findings: list[Finding]) -> Any:
    if isinstance(value, str):
        found = find_secrets(value)
        findings.extend(found)
        return redact_secrets(value, found) if found else value
    if isinstance(value, dict):
        return {
            _redact_tree(key, findings): _redact_tree(item, findings) for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        items = [_redact_tree(item, findings) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def _revoke_tokens(ctx: Context, findings: Sequence[Finding], origin: Origin) -> tuple[str, ...]:
    # Only checksum-valid tokens reach the lookup (the table verifies the checksum), and each
    # distinct token costs one query however often it was pasted (two for a token without its
    # prefix: it is tried under each prefix, and at most one can match a stored hash).
    secrets = dict.fromkeys(secret for f in findings for secret in token_candidates(f))
    notices = []
    for secret in secrets:
        revoked = tokens.revoke_leaked(ctx, secret)
        if revoked is not None:
            notices.append(_notice(ctx, secret, revoked.last_four, origin))
    return tuple(notices)


def _notice(ctx: Context, secret: str, last_four: str, origin: Origin) -> str:
    # Only the last four characters, which the tokens page shows anyway; never the token's name,
    # since the token may belong to someone else.
    agent = secret.startswith("bga_")
    if origin is not Origin.MESSAGE:
        return _seen_notice(ctx, _SEEN_IN[origin], last_four, agent)
    if agent:
        return (
            f"You pasted a BenchGen agent credential (ending …{last_four}). It has been revoked. "
            "Agent credentials last one chat turn, so there is nothing to replace."
        )
    return (
        f"You pasted a BenchGen API token (ending …{last_four}). A token seen in a chat counts "
        "as leaked, so it has been revoked and no longer works anywhere. Make a new one at "
        f"{ctx.settings.link(TOKENS_PAGE)} and keep it out of chats."
    )


def _seen_notice(ctx: Context, where: str, last_four: str, agent: bool) -> str:
    if agent:
        return (
            f"A BenchGen agent credential (ending …{last_four}) appeared in {where}. It has been "
            "hidden and revoked; agent credentials last one chat turn, so there is nothing to "
            "replace."
        )
    return (
        f"A BenchGen API token (ending …{last_four}) appeared in {where}. It has been hidden, "
        "and since a token seen in a chat counts as leaked, revoked: it no longer works "
        f"anywhere. If it was yours, make a new one at {ctx.settings.link(TOKENS_PAGE)}."
    )
