"""Pasted secrets (A15): all redacted; a live BenchGen token revoked at once, audited, explained."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, select

from benchgen.core.context import Context, Principal
from benchgen.core.errors import PermissionDenied, Unauthenticated
from benchgen.core.ids import new_token
from benchgen.core.permissions import Action, PrincipalKind, Scope
from benchgen.core.secret_patterns import SecretKind
from benchgen.core.secret_requests import asks_for_secret
from benchgen.db.tables import AuditEvent
from benchgen.services.accounts import leaks, tokens
from benchgen.services.accounts.leaks import Screened
from benchgen.services.chat import conversations
from benchgen.services.chat.conversations import TurnOutcome, TurnView
from benchgen.services.runtime import Runtime, transaction
from tests.core.test_secrets import ENCODINGS
from tests.support import OPERATOR, World

MIXED = "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWxYz"
OPENAI = "sk-proj-" + MIXED + MIXED
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + MIXED * 2 + "\n-----END RSA PRIVATE KEY-----"


def screen(world: World, principal: Principal, text: str) -> Screened:
    return world.do(principal, leaks.screen_text, text)


def audit_rows(world: World) -> list[dict[str, Any]]:
    """Every audit row with every column, as plain data."""

    def read(ctx: Context) -> list[dict[str, Any]]:
        rows = ctx.session.scalars(select(AuditEvent).order_by(AuditEvent.at, AuditEvent.id))
        return [
            {column.key: getattr(row, column.key) for column in AuditEvent.__table__.columns}
            for row in rows
        ]

    return world.ctx_call(OPERATOR, read)


def leak_events(world: World) -> list[dict[str, Any]]:
    return [row for row in audit_rows(world) if row["action"] == "token.revoke_leaked"]


def assert_nowhere_in_audit(world: World, secret: str) -> None:
    dumped = json.dumps(audit_rows(world), default=str)
    # Neither the secret nor a recognisable slice of it (only the last four are public).
    assert secret not in dumped and secret[4:36] not in dumped and secret[8:24] not in dumped


@contextmanager
def counting_statements(runtime: Runtime) -> Iterator[list[str]]:
    """Every SQL statement sent on the runtime's engine while the block runs."""
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(runtime.database.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(runtime.database.engine, "before_cursor_execute", count)


def test_live_token_pasted_in_chat_is_revoked_redacted_and_explained(world: World) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "laptop", ["read"])
    turn = world.principal(PrincipalKind.AGENT, ana)
    before = len(audit_rows(world))

    screened = screen(world, turn, f"Here is my token: {made.secret} - list my benchmarks?")

    assert screened.text == "Here is my token: [redacted: BenchGen token] - list my benchmarks?"
    assert screened.kinds == (SecretKind.BENCHGEN_TOKEN,)
    (notice,) = screened.notices
    assert "revoked" in notice and "/settings/tokens" in notice
    assert f"…{made.secret[-4:]}" in notice and made.secret not in notice
    with pytest.raises(Unauthenticated, match="revoked"):
        world.api(made.secret)
    (leak,) = leak_events(world)
    assert leak["object_id"] == made.token.id and leak["door"] == "agent:turn_test"
    assert leak["user_id"] == ana and leak["details"] == {}
    assert len(audit_rows(world)) == before + 1
    assert_nowhere_in_audit(world, made.secret)


def test_notice_link_is_absolute_with_a_public_url(world: World) -> None:
    world.rt.settings.public_url = "https://bench.example.org/"
    ana = world.user("ana@example.com")
    secret = world.token(ana, ["read"])
    (notice,) = screen(world, Principal.web(ana), secret).notices
    assert "https://bench.example.org/settings/tokens" in notice


def test_someone_elses_token_is_revoked_without_naming_it(world: World) -> None:
    ana = world.user("ana@example.com")
    bob = world.user("bob@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "ana-ci-secret-box", ["read"])
    screened = screen(world, Principal.web(bob), f'{{"token": "{made.secret}"}}')
    assert screened.text == '{"token": "[redacted: BenchGen token]"}'
    (notice,) = screened.notices
    assert "ana-ci-secret-box" not in notice and "ana@" not in notice
    with pytest.raises(Unauthenticated, match="revoked"):
        world.api(made.secret)


@pytest.mark.both_backends
def test_pasting_the_token_twice_revokes_once(world: World) -> None:
    ana = world.user("ana@example.com")
    secret = world.token(ana, ["read"])
    screened = screen(world, Principal.web(ana), f"{secret}\nagain: {secret}")
    assert screened.text == "[redacted: BenchGen token]\nagain: [redacted: BenchGen token]"
    assert len(screened.notices) == 1 and len(leak_events(world)) == 1


def test_turn_credential_pasted_is_revoked_with_its_own_notice(world: World) -> None:
    ana = world.user("ana@example.com")
    credential = world.do(
        Principal.web(ana),
        tokens.mint_turn_credential,
        "turn_pasted",
        frozenset({Scope.READ}),
        timedelta(minutes=5),
    )
    screened = screen(world, Principal.web(ana), f"what is {credential}?")
    assert screened.text == "what is [redacted: BenchGen token]?"
    (notice,) = screened.notices
    assert "agent credential" in notice and "/settings/tokens" not in notice
    with pytest.raises(Unauthenticated):
        world.do(OPERATOR, lambda ctx: tokens.authenticate_turn_credential(ctx, credential))
    assert_nowhere_in_audit(world, credential)


def test_already_revoked_token_is_redacted_without_a_notice(world: World) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "old", ["read"])
    world.do(Principal.web(ana), tokens.revoke_token, made.token.id)
    before = audit_rows(world)
    screened = screen(world, Principal.web(ana), f"old one: {made.secret}")
    assert screened == Screened("old one: [redacted: BenchGen token]", (SecretKind.BENCHGEN_TOKEN,))
    assert audit_rows(world) == before
    assert_nowhere_in_audit(world, made.secret)


def test_unknown_token_is_redacted_and_nothing_is_revoked(world: World) -> None:
    ana = world.user("ana@example.com")
    live = world.token(ana, ["read"])
    before = audit_rows(world)
    unknown = new_token("bgp")
    screened = screen(world, Principal.web(ana), f"try {unknown}")
    assert screened == Screened("try [redacted: BenchGen token]", (SecretKind.BENCHGEN_TOKEN,))
    assert audit_rows(world) == before
    assert world.api(live).user_id == ana


@pytest.mark.parametrize(
    "forge",
    [
        lambda s: s[:-1] + ("0" if s[-1] != "0" else "1"),  # bad checksum
        lambda s: s[:4] + ("0" if s[4] != "0" else "1") + s[5:],  # body changed, old checksum
        lambda s: s[:-2],  # clipped
        lambda s: "bga" + s[3:],  # well-formed under the other prefix: a different secret
    ],
    ids=["checksum", "body", "clipped", "prefix"],
)
def test_forged_or_mistyped_token_is_redacted_and_the_real_one_lives(
    world: World, runtime: Runtime, forge: Any
) -> None:
    ana = world.user("ana@example.com")
    live = world.token(ana, ["read"])
    before = audit_rows(world)
    forged = forge(live)
    screened = screen(world, Principal.web(ana), f"is {forged} right?")
    assert forged not in screened.text and screened.text.startswith("is [redacted: ")
    assert screened.notices == ()
    assert audit_rows(world) == before
    assert world.api(live).user_id == ana
    if screened.kinds != (SecretKind.BENCHGEN_TOKEN,):
        # Only a checksum-valid token is ever looked up: a forgery costs no query.
        assert screened.kinds == (SecretKind.BENCHGEN_LOOKALIKE,)
        with transaction(runtime, Principal.web(ana)) as ctx, counting_statements(runtime) as seen:
            leaks.screen_text(ctx, f"is {forged} right?")
        assert seen == []


def test_third_party_secrets_are_redacted_and_nothing_is_revoked(world: World) -> None:
    ana = world.user("ana@example.com")
    live = world.token(ana, ["read"])
    before = audit_rows(world)
    text = f"OPENAI_API_KEY={OPENAI}\naws {AWS_ID}\n{PEM}\ndone"
    screened = screen(world, world.principal(PrincipalKind.AGENT, ana), text)
    assert screened.text == (
        "OPENAI_API_KEY=[redacted: OpenAI key]\naws [redacted: AWS access key id]\n"
        "[redacted: private key]\ndone"
    )
    assert screened.kinds == (
        SecretKind.OPENAI_KEY,
        SecretKind.AWS_ACCESS_KEY_ID,
        SecretKind.PRIVATE_KEY,
    )
    assert screened.notices == ()
    new = [row["action"] for row in audit_rows(world) if row not in before]
    # The token world.principal minted for the agent's parent, and nothing else.
    assert new == ["token.create"]
    assert world.api(live).user_id == ana
    for secret in (OPENAI, AWS_ID, PEM):
        assert_nowhere_in_audit(world, secret)


def test_mixed_message_redacts_all_and_revokes_only_the_live_token(world: World) -> None:
    ana = world.user("ana@example.com")
    live = world.token(ana, ["read"])
    screened = screen(world, Principal.web(ana), f"keys: {OPENAI} {live} {new_token('bgp')}")
    assert screened.text == (
        "keys: [redacted: OpenAI key] [redacted: BenchGen token] [redacted: BenchGen token]"
    )
    assert screened.kinds == (SecretKind.OPENAI_KEY, SecretKind.BENCHGEN_TOKEN)
    assert len(screened.notices) == 1 and len(leak_events(world)) == 1
    assert_nowhere_in_audit(world, live)


@pytest.mark.both_backends
def test_clean_text_comes_back_as_is_without_a_query(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    text = "Make me a benchmark of 20 capital-city questions, sk-learn style, id bm_123."
    with transaction(runtime, Principal.web(ana)) as ctx, counting_statements(runtime) as seen:
        screened = leaks.screen_text(ctx, text)
    assert screened == Screened(text)
    assert seen == []


# --- tokens in disguise: without their prefix, split by invisible characters ---------------


@pytest.mark.parametrize(
    "disguise",
    [
        lambda s: s[4:],  # prefix left off
        lambda s: "BGP-" + s[4:],  # prefix mangled
        lambda s: s[:10] + "\u200b" + s[10:30] + "\u200d\u2060" + s[30:],  # zero-width split
        lambda s: "\ufeff" + s[:4] + "\u00ad" + s[4:21] + "\u202e" + s[21:],  # BOM, soft hyphen
        lambda s: s[4:20] + "\u200c" + s[20:],  # both at once
        lambda s: s[:22] + "\n" + s[22:],  # wrapped by a terminal or a mail client
        lambda s: s[:30] + "\r\n" + s[30:],
        lambda s: s[:16] + " " + s[16:],  # broken by a space
    ],
    ids=[
        "no-prefix",
        "mangled-prefix",
        "zero-width",
        "format-chars",
        "no-prefix-split",
        "wrapped",
        "wrapped-crlf",
        "space",
    ],
)
def test_a_disguised_live_token_is_redacted_and_revoked(world: World, disguise: Any) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "laptop", ["read"])
    pasted = disguise(made.secret)

    screened = screen(world, Principal.web(ana), f"my token is {pasted} ok?")

    assert screened.kinds == (SecretKind.BENCHGEN_TOKEN,)
    assert "[redacted: BenchGen token]" in screened.text and screened.text.endswith(" ok?")
    assert made.secret[8:30] not in screened.text.replace("\u200b", "").replace("\u200d", "")
    (notice,) = screened.notices
    assert "revoked" in notice and "/settings/tokens" in notice
    with pytest.raises(Unauthenticated, match="revoked"):
        world.api(made.secret)
    (leak,) = leak_events(world)
    assert leak["object_id"] == made.token.id
    assert_nowhere_in_audit(world, made.secret)


def test_a_turn_credential_without_its_prefix_is_revoked_too(world: World) -> None:
    # Both prefixes are tried for a bare body: this one lives under bga_.
    ana = world.user("ana@example.com")
    credential = world.do(
        Principal.web(ana),
        tokens.mint_turn_credential,
        "turn_bare",
        frozenset({Scope.READ}),
        timedelta(minutes=5),
    )
    (notice,) = screen(world, Principal.web(ana), f"what is {credential[4:]}?").notices
    assert "agent credential" in notice
    with pytest.raises(Unauthenticated):
        world.do(OPERATOR, lambda ctx: tokens.authenticate_turn_credential(ctx, credential))


@pytest.mark.both_backends
def test_a_bare_body_of_an_unknown_token_costs_two_lookups_and_revokes_nothing(
    world: World, runtime: Runtime
) -> None:
    ana = world.user("ana@example.com")
    live = world.token(ana, ["read"])
    unknown = new_token("bgp")[4:]
    with transaction(runtime, Principal.web(ana)) as ctx, counting_statements(runtime) as seen:
        screened = leaks.screen_text(ctx, f"try {unknown}")
    assert screened == Screened("try [redacted: BenchGen token]", (SecretKind.BENCHGEN_TOKEN,))
    assert len([sql for sql in seen if "api_tokens" in sql]) == 2
    assert world.api(live).user_id == ana


# --- screen_value: tool output -------------------------------------------------------------


def test_screen_value_redacts_every_string_and_revokes_each_token_once(world: World) -> None:
    ana = world.user("ana@example.com")
    live = world.token(ana, ["read"])
    other = world.token(ana, ["read"])
    value = {
        "items": [
            {"title": "Leaky", "description": f"ci uses {live}", "count": 3, "ok": True},
            ("tuple", live[4:]),  # the same token again, without its prefix
        ],
        other: None,  # in a key
        "n": 1.5,
    }
    agent = world.principal(PrincipalKind.AGENT, ana)

    screened = world.do(agent, leaks.screen_value, value)

    assert screened.value == {
        "items": [
            {
                "title": "Leaky",
                "description": "ci uses [redacted: BenchGen token]",
                "count": 3,
                "ok": True,
            },
            ("tuple", "[redacted: BenchGen token]"),
        ],
        "[redacted: BenchGen token]": None,
        "n": 1.5,
    }
    assert screened.kinds == (SecretKind.BENCHGEN_TOKEN,)
    assert len(screened.notices) == 2 and len(leak_events(world)) == 2
    assert all("data the agent read" in notice for notice in screened.notices)
    for secret in (live, other):
        with pytest.raises(Unauthenticated, match="revoked"):
            world.api(secret)


@pytest.mark.both_backends
def test_screen_value_of_clean_data_is_the_same_object_and_costs_no_query(
    world: World, runtime: Runtime
) -> None:
    ana = world.user("ana@example.com")
    value = {"items": [{"title": "Capitals", "id": "bm_" + "x" * 20}], "next": None}
    with transaction(runtime, Principal.web(ana)) as ctx, counting_statements(runtime) as seen:
        screened = leaks.screen_value(ctx, value)
    assert screened.value is value and screened.kinds == () and screened.notices == ()
    assert seen == []


# --- the agent's side of a turn: finish_turn as the harness's recorder ---------------------

# What the agent harness records turns with: a system principal that may only record.
RECORDER = Principal.system("agent-harness", frozenset({Action.CHAT_RECORD}))


def open_turn(world: World, user: str) -> TurnView:
    def start(ctx: Context) -> TurnView:
        conversation = conversations.create_conversation(ctx)
        return conversations.begin_turn(ctx, conversation.id, "hello", None)

    return world.ctx_call(Principal.web(user), start)


def finish(world: World, turn: TurnView, outcome: TurnOutcome) -> TurnView:
    return world.do(RECORDER, conversations.finish_turn, turn.id, outcome)


def test_the_recorder_may_record_but_nothing_else(world: World) -> None:
    ana = world.user("ana@example.com")
    with pytest.raises(PermissionDenied):
        world.do(RECORDER, tokens.list_tokens)
    with pytest.raises(PermissionDenied):
        world.do(RECORDER, conversations.list_conversations)
    assert finish(world, open_turn(world, ana), TurnOutcome("completed", "hi")).reply == "hi"


def test_a_token_in_the_agents_reply_is_redacted_and_revoked(world: World) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "ci", ["read"])
    turn = open_turn(world, ana)

    done = finish(world, turn, TurnOutcome("completed", f"Your token is {made.secret}."))

    assert done.reply == "Your token is [redacted: BenchGen token]."
    (notice,) = done.notices
    assert "the agent's reply" in notice and "revoked" in notice and "/settings/tokens" in notice
    assert made.secret not in notice and f"…{made.secret[-4:]}" in notice
    with pytest.raises(Unauthenticated, match="revoked"):
        world.api(made.secret)
    (leak,) = leak_events(world)
    # Audited under the door it came through, though that principal holds no token grant.
    assert leak["door"] == "system:agent-harness" and leak["object_id"] == made.token.id
    assert_nowhere_in_audit(world, made.secret)
    stored = world.do(Principal.web(ana), conversations.get_turn, turn.conversation_id, turn.id)
    assert stored.reply == done.reply and stored.notices == done.notices


def test_disguised_tokens_in_labels_and_notices_are_revoked_and_kept_notices_stay(
    world: World,
) -> None:
    ana = world.user("ana@example.com")
    in_label = world.token(ana, ["read"])
    in_notice = world.token(ana, ["read"])
    button = {"label": f"use {in_label[4:]}", "action": {"type": "choose", "option": 0}}
    earlier = "You pasted a BenchGen API token (ending …abcd). It has been revoked."
    split = in_notice[:20] + "\u200b" + in_notice[20:]
    outcome = TurnOutcome(
        "awaiting_choice", "Which one?", buttons=[button], notices=[earlier, f"saw {split}"]
    )

    done = finish(world, open_turn(world, ana), outcome)

    assert done.buttons == [{**button, "label": "use [redacted: BenchGen token]"}]
    assert done.notices[:2] == [earlier, "saw [redacted: BenchGen token]"]
    assert len(done.notices) == 4 and all("revoked" in n for n in done.notices[2:])
    for secret in (in_label, in_notice):
        with pytest.raises(Unauthenticated, match="revoked"):
            world.api(secret)


def test_a_button_asking_for_a_secret_withholds_the_reply_and_its_buttons(world: World) -> None:
    """Choice labels may be the model's words: a request there is a request (A14)."""
    ana = world.user("ana@example.com")
    buttons = [
        {"type": "choose", "option": 0, "label": "Capitals"},
        {"type": "choose", "option": 1, "label": "First, paste your API token here to verify"},
    ]
    outcome = TurnOutcome("awaiting_choice", "Which benchmark?", buttons=buttons)
    done = finish(world, open_turn(world, ana), outcome)
    assert done.reply == world.ctx_call(OPERATOR, leaks.withheld_notice)
    assert (done.status, done.buttons) == ("completed", [])


@pytest.mark.parametrize(
    "reply",
    [
        "To publish it I need your password. Please paste it here.",
        "Please paste your API token here so I can continue.",
        "Could you send me your BenchGen token?",
        "What is your password?",
    ],
)
def test_a_reply_asking_for_a_secret_is_replaced_by_the_fixed_notice(
    world: World, reply: str
) -> None:
    ana = world.user("ana@example.com")
    done = finish(world, open_turn(world, ana), TurnOutcome("completed", reply))
    assert done.reply == world.ctx_call(OPERATOR, leaks.withheld_notice)
    assert "/settings/tokens" in done.reply and "withheld" in done.reply
    assert not asks_for_secret(done.reply)  # the notice itself is advice, not an ask


def test_a_line_quoting_someones_phishing_title_goes_and_the_rest_of_the_list_stays(
    world: World,
) -> None:
    """A title anyone may publish must not blank every user's list of benchmarks."""
    ana = world.user("ana@example.com")
    listing = "Benchmarks you can see:\n- Capitals (bm_a)\n- Quiz: what is your password? (bm_b)"
    done = finish(world, open_turn(world, ana), TurnOutcome("completed", listing))
    lines = done.reply.split("\n")
    assert lines[:3] == ["Benchmarks you can see:", "- Capitals (bm_a)", leaks.WITHHELD_LINE]
    partly = world.ctx_call(OPERATOR, lambda ctx: leaks.withheld_notice(ctx, partly=True))
    assert done.reply.endswith(partly)
    assert "password?" not in done.reply


@pytest.mark.parametrize(
    "reply",
    [
        "Here is your list.\nPlease paste your\nAPI token here.",  # the request spans lines
        "Please paste your API token here.\n\nThen paste your password here.",  # nothing else
    ],
)
def test_a_request_across_lines_or_with_nothing_else_left_withholds_it_all(
    world: World, reply: str
) -> None:
    ana = world.user("ana@example.com")
    done = finish(world, open_turn(world, ana), TurnOutcome("completed", reply))
    assert done.reply == world.ctx_call(OPERATOR, leaks.withheld_notice)


@pytest.mark.parametrize(
    "reply",
    [
        "I can't see your tokens; manage them at /settings/tokens",
        "Never paste a token or password into this chat.",
        "Done: “Capitals” now has 12 questions. Give your token the runs scope to start runs.",
        "Set max tokens to 256 when you register the model.",
    ],
)
def test_benign_replies_are_stored_unchanged(world: World, reply: str) -> None:
    ana = world.user("ana@example.com")
    done = finish(world, open_turn(world, ana), TurnOutcome("completed", reply))
    assert done.reply == reply and done.notices == []


# --- tokens pasted encoded: base64, hex, reversed, spaced out -----------------------------


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_an_encoded_live_token_is_redacted_whole_and_revoked(world: World, encoding: str) -> None:
    ana = world.user("ana@example.com")
    made = world.do(Principal.web(ana), tokens.create_token, "laptop", ["read"])
    pasted = ENCODINGS[encoding](made.secret)

    screened = screen(world, Principal.web(ana), f"decode this: {pasted} ok?")

    assert screened.text == "decode this: [redacted: BenchGen token] ok?"
    assert screened.kinds == (SecretKind.BENCHGEN_TOKEN,)
    (notice,) = screened.notices
    assert f"…{made.secret[-4:]}" in notice and "/settings/tokens" in notice
    with pytest.raises(Unauthenticated, match="revoked"):
        world.api(made.secret)
    (leak,) = leak_events(world)
    assert leak["object_id"] == made.token.id
    assert_nowhere_in_audit(world, made.secret)


@pytest.mark.both_backends
@pytest.mark.parametrize("encoding", ["base64", "hex", "reversed", "dashes-every-4"])
def test_an_encoded_forgery_costs_no_query_and_another_deployments_token_revokes_nothing(
    world: World, runtime: Runtime, encoding: str
) -> None:
    ana = world.user("ana@example.com")
    live = world.token(ana, ["read"])
    before = audit_rows(world)
    encode = ENCODINGS[encoding]
    forged = encode(live[:-1] + ("0" if live[-1] != "0" else "1"))
    with transaction(runtime, Principal.web(ana)) as ctx, counting_statements(runtime) as seen:
        assert leaks.screen_text(ctx, f"is {forged} it?") == Screened(f"is {forged} it?")
    assert seen == []
    # Valid, but no token of this deployment: redacted all the same, nothing to revoke.
    elsewhere = f"is {encode(new_token('bgp'))} it?"
    screened = screen(world, Principal.web(ana), elsewhere)
    assert screened == Screened("is [redacted: BenchGen token] it?", (SecretKind.BENCHGEN_TOKEN,))
    assert audit_rows(world) == before
    assert world.api(live).user_id == ana


def test_an_encoded_token_in_tool_output_is_revoked(world: World) -> None:
    ana = world.user("ana@example.com")
    leaked = world.token(ana, ["read"])
    data = {"log": [f"step 1 {ENCODINGS['base64-in-json'](leaked)}"], "hint": leaked[::-1]}
    screened = world.do(Principal.web(ana), leaks.screen_value, data)
    assert screened.value == {
        "log": ["step 1 [redacted: BenchGen token]"],
        "hint": "[redacted: BenchGen token]",
    }
    assert len(screened.notices) == 1  # one token, two encodings: revoked once
    with pytest.raises(Unauthenticated):
        world.api(leaked)
