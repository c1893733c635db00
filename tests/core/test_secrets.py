"""The secrets table: each kind is found in prose, JSON and code; near-misses are left alone."""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchgen.core import encoded_tokens, ids
from benchgen.core.secret_patterns import PATTERNS, SecretKind
from benchgen.core.secret_requests import asks_for_secret
from benchgen.core.secrets import (
    Finding,
    find_secrets,
    redact_secrets,
    split_token,
    token_candidates,
)
from benchgen.core.text import strip_invisible

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
# Fake secrets are assembled from pieces, so that no scanner mistakes this file for a leak.
MIXED = "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWxYz"  # 36 characters of every class
SLACK_ID = "".join(["T0", "1ABCDEF9"])


def b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


JWT = ".".join(
    [b64url({"alg": "HS256", "typ": "JWT"}), b64url({"sub": "usr_1", "exp": 1}), "Sfl" + MIXED]
)
BENCHGEN = "bgp_0123456789ABCDEFGHIJKLMNOPQRSTUV1ggZdL"  # the vector in docs/token-format.md
TURN = "bga_OOOOOOOOOOOOOOOOOOOOOOOOOOOOOOOO04Q20R"

# One sample per shape, with the kind it must be reported as.
SAMPLES: list[tuple[SecretKind, str]] = [
    (SecretKind.BENCHGEN_TOKEN, BENCHGEN),
    (SecretKind.BENCHGEN_TOKEN, TURN),
    (SecretKind.OPENAI_KEY, "sk-" + MIXED + "T3BlbkFJ" + MIXED[:4]),
    (SecretKind.OPENAI_KEY, "sk-proj-" + MIXED + "_-" + MIXED + "-" + MIXED),
    (SecretKind.OPENAI_KEY, "sk-svcacct-" + MIXED + MIXED),
    (SecretKind.ANTHROPIC_KEY, "sk-ant-api03-" + MIXED + "_" + MIXED + "-" + MIXED + "AA"),
    (SecretKind.ANTHROPIC_KEY, "sk-ant-admin01-" + MIXED + MIXED),
    (SecretKind.AWS_ACCESS_KEY_ID, "AKIA" + "IOSFODNN7EXAMPLE"),
    (SecretKind.AWS_ACCESS_KEY_ID, "ASIA" + "Y34FZKBOKMUTVV7A"),
    (SecretKind.GITHUB_TOKEN, "ghp_" + MIXED),
    (SecretKind.GITHUB_TOKEN, "gho_" + MIXED),
    (SecretKind.GITHUB_TOKEN, "ghu_" + MIXED),
    (SecretKind.GITHUB_TOKEN, "ghs_" + MIXED),
    (SecretKind.GITHUB_TOKEN, "ghr_" + MIXED),
    (SecretKind.GITHUB_TOKEN, "github_pat_" + "11ABCDEFG0" + MIXED[:12] + "_" + MIXED + MIXED[:23]),
    (SecretKind.GOOGLE_API_KEY, "AIza" + "SyA-" + MIXED[:30] + "_"),
    (SecretKind.SLACK_TOKEN, "xoxb-" + "123456789012-1234567890123-" + MIXED[:24]),
    (SecretKind.SLACK_TOKEN, "xoxp-" + "123456789012-123456789012-1234567890123-" + "a1" * 16),
    (SecretKind.SLACK_TOKEN, "xoxa-2-" + "1234567890-" + MIXED),
    (SecretKind.SLACK_WEBHOOK, f"https://hooks.slack.com/services/{SLACK_ID}/B0123ABCD/{MIXED}"),
    (SecretKind.SLACK_WEBHOOK, f"https://hooks.slack.com/workflows/{SLACK_ID}/A0123/456/{MIXED}"),
    (SecretKind.HUGGING_FACE_TOKEN, "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"),
    (SecretKind.JWT, JWT),
]

# Where people paste secrets: prose, JSON, code, shell, Markdown, a URL query, end of sentence.
CONTEXTS = [
    "Here is my key {} - can you use it?",
    '{{"api_key": "{}", "model": "gpt-4o"}}',
    'client = Client(api_key="{}")',
    "export SERVICE_KEY={}\n",
    "Use `{}` for now.",
    "https://example.com/hook?token={}&x=1",
    "It failed with {}.",
    "{}",
]


@pytest.mark.parametrize(("kind", "secret"), SAMPLES, ids=lambda v: str(v)[:16])
@pytest.mark.parametrize("context", CONTEXTS)
def test_each_kind_is_found_and_redacted_in_context(
    kind: SecretKind, secret: str, context: str
) -> None:
    text = context.format(secret)
    findings = find_secrets(text)
    assert [(f.kind, f.secret) for f in findings] == [(kind, secret)]
    assert text[findings[0].start : findings[0].end] == secret
    assert redact_secrets(text) == context.format(f"[redacted: {kind.label}]")


def test_every_kind_has_a_row_and_a_label() -> None:
    assert {row.kind for row in PATTERNS} == set(SecretKind)
    assert all(
        kind.label and kind.placeholder == f"[redacted: {kind.label}]" for kind in SecretKind
    )
    assert SecretKind.OPENAI_KEY.placeholder == "[redacted: OpenAI key]"
    assert SecretKind.BENCHGEN_TOKEN.placeholder == "[redacted: BenchGen token]"


AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"


@pytest.mark.parametrize(
    "template",
    [
        "AWS_SECRET_ACCESS_KEY={}",
        'export AWS_SECRET_ACCESS_KEY="{}"',
        "[default]\naws_access_key_id = AKIA0000000000000000\naws_secret_access_key = {}\n",
        '{{"Credentials": {{"SecretAccessKey": "{}", "SessionToken": "x"}}}}',
        "aws-secret-access-key: '{}'",
        "my secret access key is {} (do not share)",
        "secret_access_key => {}",
    ],
)
def test_aws_secret_key_is_found_next_to_its_name(template: str) -> None:
    text = template.format(AWS_SECRET)
    found = [f for f in find_secrets(text) if f.kind is SecretKind.AWS_SECRET_ACCESS_KEY]
    assert [f.secret for f in found] == [AWS_SECRET]
    redacted = redact_secrets(text)
    assert AWS_SECRET not in redacted
    # Only the value goes: the label that made it recognisable stays readable.
    assert "[redacted: AWS secret access key]" in redacted


def pem(kind: str, body: str, block: str = "PRIVATE KEY") -> str:
    head = f"{kind} {block}" if kind else block
    return f"-----BEGIN {head}-----\n{body}\n-----END {head}-----"


KEY_BODY = "\n".join(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + MIXED] * 4 + ["Zm9vYmFy=="])


@pytest.mark.parametrize(
    "block",
    [
        pem("", KEY_BODY),
        pem("RSA", KEY_BODY),
        pem("EC", KEY_BODY),
        pem("OPENSSH", KEY_BODY),
        pem("ENCRYPTED", KEY_BODY),
        pem("RSA", "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,ABCDEF\n\n" + KEY_BODY),
        pem("PGP", "Version: GnuPG v2\n\n" + KEY_BODY, "PRIVATE KEY BLOCK"),
    ],
)
def test_private_key_blocks_are_redacted_whole(block: str) -> None:
    text = f"My key:\n{block}\nthanks!"
    assert [f.kind for f in find_secrets(text)] == [SecretKind.PRIVATE_KEY]
    assert redact_secrets(text) == "My key:\n[redacted: private key]\nthanks!"


def test_private_key_inside_json_is_redacted() -> None:
    escaped = json.dumps({"type": "service_account", "private_key": pem("", KEY_BODY) + "\n"})
    redacted = redact_secrets(escaped)
    assert "MIIE" not in redacted and "[redacted: private key]" in redacted
    assert redacted.startswith('{"type": "service_account", "private_key": "[redacted')


def test_a_clipped_private_key_is_redacted_to_the_end() -> None:
    text = "oops:\n-----BEGIN RSA PRIVATE KEY-----\n" + KEY_BODY[:90]
    assert redact_secrets(text) == "oops:\n[redacted: private key]"


def test_two_private_keys_are_two_findings() -> None:
    text = f"{pem('RSA', KEY_BODY)}\nbetween\n{pem('EC', KEY_BODY)}"
    assert redact_secrets(text) == "[redacted: private key]\nbetween\n[redacted: private key]"


def test_several_secrets_in_one_text() -> None:
    openai, aws = SAMPLES[2][1], SAMPLES[7][1]
    text = f"OPENAI_API_KEY={openai}\nBENCHGEN_TOKEN={BENCHGEN}\nAWS_ACCESS_KEY_ID={aws}\n"
    assert [f.kind for f in find_secrets(text)] == [
        SecretKind.OPENAI_KEY,
        SecretKind.BENCHGEN_TOKEN,
        SecretKind.AWS_ACCESS_KEY_ID,
    ]
    assert redact_secrets(text) == (
        "OPENAI_API_KEY=[redacted: OpenAI key]\n"
        "BENCHGEN_TOKEN=[redacted: BenchGen token]\n"
        "AWS_ACCESS_KEY_ID=[redacted: AWS access key id]\n"
    )


NEAR_MISSES = [
    "An ordinary sentence about keys, tokens, passwords and secrets.",
    "sk-learn",
    "pip install sk-video sk-abc123 sk-",
    "the sk-learn-compatible-estimators-and-transformers-guide",  # long, but all lower case
    "sk-ant-",
    "sk-ant-api03-short",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "git commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "AKIA",
    "AKIA" + "IOSFODNN7EXAMPL",  # 15 characters after the prefix
    "AKIA" + "IOSFODNN7EXAMPLE2",  # 17: part of a longer identifier
    "akia" + "iosfodnn7example",
    "XAKIA" + "IOSFODNN7EXAMPLE",
    "an unlabelled base64 value " + AWS_SECRET,
    "ghp_short",
    "ghx_" + MIXED,
    "github_pat_tooshort",
    "AIza" + "SyA-short",
    "xoxb-your-token-goes-here",
    "xoxz-123456789012-1234567890123",
    "https://hooks.slack.com/services/",
    "https://api.slack.com/apps/A0123ABCD/incoming-webhooks",
    "hf_hub_download",
    "hf_" + "abcdefghijklmnopqrstuvwxyzabcdefgh",  # a lower-case identifier, not a token
    "-----BEGIN PUBLIC KEY-----\n" + KEY_BODY + "\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\n" + KEY_BODY + "\n-----END CERTIFICATE-----",
    "A PEM key starts with -----BEGIN PRIVATE KEY----- and ends with -----END PRIVATE KEY-----.",
    "eyJhbGciOi.nope.nope",
    "eyJ" + MIXED + "." + MIXED + "." + MIXED,  # right shape, but the header is not JSON
    "version 1.2.3 and a.b.c and www.example.com",
    "bgp_",
    "bga_ZZZZZZZZZZ",
    "bm_3kQ9abcdefghijklmnopq usr_" + MIXED[:20] + " tok_" + MIXED[:20],
    "bgp_" + MIXED[:28],  # far too short to be a mistyped token
    "Bearer abc.def",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_left_alone(text: str) -> None:
    assert find_secrets(text) == []
    assert redact_secrets(text) == text


def test_a_bad_checksum_is_not_a_benchgen_token_but_is_still_redacted() -> None:
    forged = BENCHGEN[:-1] + ("M" if BENCHGEN[-1] != "M" else "N")
    findings = find_secrets(f"token: {forged}")
    assert [f.kind for f in findings] == [SecretKind.BENCHGEN_LOOKALIKE]
    assert redact_secrets(f"token: {forged}") == "token: [redacted: possible BenchGen token]"
    clipped = BENCHGEN[:-2]  # a token with its last characters lost still gives most away
    assert [f.kind for f in find_secrets(clipped)] == [SecretKind.BENCHGEN_LOOKALIKE]


def test_a_token_glued_to_junk_is_still_found() -> None:
    text = "xx" + "bgp_" + MIXED[:35] + BENCHGEN + "tail"
    tokens = [f.secret for f in find_secrets(text) if f.kind is SecretKind.BENCHGEN_TOKEN]
    assert tokens == [BENCHGEN]
    redacted = redact_secrets(text)
    assert BENCHGEN not in redacted and BENCHGEN[4:20] not in redacted


def test_overlapping_findings_leave_no_fragment() -> None:
    text = "abc DEF ghi"
    findings = [
        Finding(SecretKind.OPENAI_KEY, 0, 7, "abc DEF"),
        Finding(SecretKind.JWT, 4, 11, "DEF ghi"),
    ]
    assert redact_secrets(text, findings) == "[redacted: OpenAI key]"


def test_a_finding_never_prints_its_secret() -> None:
    (finding,) = find_secrets(f"key {BENCHGEN}")
    assert BENCHGEN not in repr(finding) and BENCHGEN not in str(finding)


def test_hostile_jwt_header_is_rejected_not_raised() -> None:
    nested = base64.urlsafe_b64encode(b'{"a":' + b"[" * 100_000).decode().rstrip("=")
    assert find_secrets(f"{nested}.{MIXED}.{MIXED}") == []


# --- properties ----------------------------------------------------------------------------


@st.composite
def benchgen_tokens(draw: st.DrawFn) -> str:
    """Any well-formed token, built with the published checksum."""
    prefix = draw(st.sampled_from(ids.TOKEN_PREFIXES))
    body = draw(st.text(alphabet=BASE62, min_size=32, max_size=32))
    return f"{prefix}_{body}{ids.token_checksum(body)}"


@given(benchgen_tokens(), st.text(), st.text())
def test_any_token_in_any_text_is_found_and_redacted(token: str, before: str, after: str) -> None:
    text = before + token + after
    found = [f.secret for f in find_secrets(text) if f.kind is SecretKind.BENCHGEN_TOKEN]
    assert token in found
    assert token not in redact_secrets(text)


@given(
    benchgen_tokens(),
    st.integers(4, 41),
    st.one_of(st.sampled_from(BASE62 + "_-. "), st.characters()),
    st.text(),
    st.text(),
)
def test_one_changed_character_is_not_a_benchgen_token(
    token: str, position: int, replacement: str, before: str, after: str
) -> None:
    # Body and checksum only: CRC32 catches every change of one character. (A changed prefix
    # leaves a valid body, which is still a token: see the tests of prefix-less tokens.)
    if replacement == token[position]:
        return
    changed = token[:position] + replacement + token[position + 1 :]
    found = find_secrets(before + " " + changed + " " + after)
    assert SecretKind.BENCHGEN_TOKEN not in [f.kind for f in found]
    if replacement in BASE62 and position >= 4:
        # Off by one character it is still nearly the secret: redacted, though never revoked.
        assert [f.kind for f in find_secrets(f"see {changed} here")] == [
            SecretKind.BENCHGEN_LOOKALIKE
        ]


@given(benchgen_tokens())
def test_flipping_the_prefix_gives_the_other_kind_of_token(token: str) -> None:
    # The checksum covers the body only (ARCHITECTURE §6): the other prefix is well formed too,
    # and is redacted as a token; its SHA-256 matches nothing stored, so nothing is revoked.
    other = ("bga" if token.startswith("bgp") else "bgp") + token[3:]
    assert [f.kind for f in find_secrets(other)] == [SecretKind.BENCHGEN_TOKEN]


GENERATED = {
    SecretKind.OPENAI_KEY: ("sk-proj-", 64),
    SecretKind.ANTHROPIC_KEY: ("sk-ant-api03-", 95),
    SecretKind.GITHUB_TOKEN: ("ghp_", 36),
    SecretKind.HUGGING_FACE_TOKEN: ("hf_", 34),
    SecretKind.GOOGLE_API_KEY: ("AIza", 35),
}


def mixed_case(body: str) -> bool:
    return bool({*body} & {*string.ascii_lowercase} and {*body} & {*string.ascii_uppercase})


@st.composite
def third_party_keys(draw: st.DrawFn) -> tuple[SecretKind, str]:
    """A random key of a provider's shape (the table rightly distrusts single-case bodies)."""
    kind = draw(st.sampled_from(sorted(GENERATED)))
    prefix, length = GENERATED[kind]
    body = draw(st.text(alphabet=BASE62, min_size=length, max_size=length).filter(mixed_case))
    return kind, prefix + body


@given(third_party_keys(), st.text(), st.text())
def test_random_keys_between_words_are_found(
    key: tuple[SecretKind, str], before: str, after: str
) -> None:
    kind, secret = key
    text = f"{before} {secret} {after}"
    assert secret in [f.secret for f in find_secrets(text) if f.kind is kind]
    assert secret not in redact_secrets(text)


@given(st.text())
def test_text_without_secrets_comes_back_unchanged(text: str) -> None:
    if not find_secrets(text):
        assert redact_secrets(text) == text


# --- tokens without their prefix -----------------------------------------------------------

BODY = BENCHGEN[4:]  # 32 characters and a valid checksum, prefix gone


@pytest.mark.parametrize("context", CONTEXTS)
def test_a_token_without_its_prefix_is_found_by_its_checksum(context: str) -> None:
    text = context.format(BODY)
    (finding,) = find_secrets(text)
    assert (finding.kind, finding.secret) == (SecretKind.BENCHGEN_TOKEN, BODY)
    assert text[finding.start : finding.end] == BODY
    assert redact_secrets(text) == context.format("[redacted: BenchGen token]")
    # Stored hashes cover the whole token, so both prefixes are tried when revoking.
    assert token_candidates(finding) == ("bgp_" + BODY, "bga_" + BODY)


@pytest.mark.parametrize(
    "mangled", ["BGP_" + BODY, "bgp-" + BODY, "bgq_" + BODY, "bgp" + BODY, "token=" + BODY]
)
def test_a_token_with_a_mangled_prefix_is_still_found(mangled: str) -> None:
    found = [f for f in find_secrets(f"use {mangled} now") if f.kind is SecretKind.BENCHGEN_TOKEN]
    assert [f.secret for f in found] == [BODY]
    assert BODY[:12] not in redact_secrets(f"use {mangled} now")


def test_a_whole_token_is_one_finding_not_two() -> None:
    (finding,) = find_secrets(f"x {BENCHGEN} y")
    assert finding.secret == BENCHGEN and token_candidates(finding) == (BENCHGEN,)
    assert token_candidates(Finding(SecretKind.OPENAI_KEY, 0, 1, "k")) == ()


@pytest.mark.parametrize(
    "text",
    [
        BODY[:-1] + ("M" if BODY[-1] != "M" else "N"),  # checksum off by one character
        "x" + BODY,  # glued to a longer run: left alone (see the row's comment)
        BODY + "x",
        BODY[:-1],
        "0123456789abcdef0123456789abcdef012345",  # 38 hex characters
        "a" * 38,
    ],
)
def test_a_38_character_word_without_a_valid_checksum_is_not_a_token(text: str) -> None:
    assert find_secrets(f"id {text} here") == []


def test_random_38_character_words_are_not_taken_for_tokens() -> None:
    # The checksum makes a false positive a one-in-62^6 event: none in 20,000 random words.
    rng = random.Random(20240601)
    words = ["".join(rng.choices(BASE62, k=38)) for _ in range(20_000)]
    assert find_secrets(" ".join(words)) == []


@given(benchgen_tokens(), st.integers(0, 2), st.characters(), st.text(), st.text())
def test_a_changed_prefix_leaves_a_token(
    token: str, position: int, replacement: str, before: str, after: str
) -> None:
    changed = token[:position] + replacement + token[position + 1 :]
    text = f"{before} {changed} {after}"
    found = [f for f in find_secrets(text) if f.kind is SecretKind.BENCHGEN_TOKEN]
    assert token[4:] in [f.secret[-38:] for f in found]
    assert token[4:] not in redact_secrets(text)


# --- invisible characters ------------------------------------------------------------------

INVISIBLE = [
    "\u200b",  # zero-width space
    "\u200c",  # zero-width non-joiner
    "\u200d",  # zero-width joiner
    "\u2060",  # word joiner
    "\u2062",  # invisible times
    "\ufeff",  # byte order mark
    "\u00ad",  # soft hyphen
    "\u202e",  # right-to-left override
    "\u2066",  # left-to-right isolate
    "\u180e",  # Mongolian vowel separator
    "\ufe0f",  # variation selector
    "\U000e0041",  # tag letter A
]


@pytest.mark.parametrize("char", INVISIBLE, ids=lambda c: f"U+{ord(c):04X}")
@pytest.mark.parametrize("secret", [BENCHGEN, BODY, SAMPLES[2][1]], ids=["token", "body", "key"])
def test_a_secret_split_by_invisible_characters_is_found_and_redacted_whole(
    char: str, secret: str
) -> None:
    split = secret[:9] + char + secret[9:20] + char * 2 + secret[20:]
    text = f"👩\u200d💻 my key: {split} thanks\u200b!"
    (finding,) = find_secrets(text)
    assert finding.secret == secret  # as it works, ready to revoke
    assert text[finding.start : finding.end] == split
    # Only the secret goes: invisible characters elsewhere (the emoji's joiner) stay.
    assert redact_secrets(text) == f"👩\u200d💻 my key: {finding.kind.placeholder} thanks\u200b!"


@given(benchgen_tokens(), st.lists(st.sampled_from(INVISIBLE)), st.text(), st.text(), st.data())
def test_invisible_characters_anywhere_in_a_token_hide_nothing(
    token: str, chars: list[str], before: str, after: str, data: st.DataObject
) -> None:
    split = token
    for char in chars:
        at = data.draw(st.integers(1, len(split) - 1))
        split = split[:at] + char + split[at:]
    text = f"{before} {split} {after}"
    found = [f for f in find_secrets(text) if f.kind is SecretKind.BENCHGEN_TOKEN]
    assert token in [f.secret for f in found]
    redacted, rest = strip_invisible(redact_secrets(text)), strip_invisible(f"{before} {after}")
    for fragment in (token[4:], token[12:24]):
        # No more of it than the surrounding text held by chance.
        assert redacted.count(fragment) <= rest.count(fragment)


@pytest.mark.parametrize("cut", [4, 5, 22, 41])
@pytest.mark.parametrize("gap", ["\n", "\r\n", " ", "\t", "\u00a0"], ids=repr)
def test_a_token_wrapped_or_broken_once_is_found_whole(cut: int, gap: str) -> None:
    text = f"my token:\n{BENCHGEN[:cut]}{gap}{BENCHGEN[cut:]} thanks"
    found = find_secrets(text)
    # Other rows may see a part of it too (the body alone, a clipped token): all are redacted.
    assert (BENCHGEN,) in [token_candidates(f) for f in found]
    assert redact_secrets(text) == "my token:\n[redacted: BenchGen token] thanks"


def test_words_after_a_prefix_are_no_token_without_the_checksum() -> None:
    assert find_secrets("bgp_is the prefix of personal tokens, bga_ of turn ones") == []
    assert [f.end for f in find_secrets(f"{BENCHGEN}\nnext line")] == [len(BENCHGEN)]


# --- A14: replies that ask for a secret ----------------------------------------------------

ASKS = [
    "Please paste your API token here so I can continue.",
    "Could you send me your password?",
    "What is your BenchGen token?",
    "what's your api key",
    "To finish this, I need your API key.",
    "Share your personal access token with me.",
    "Enter your password:",
    "Reply with your credentials and I'll log in for you.",
    "Provide the token, and I'll publish the benchmark.",
    "Kindly provide your OpenAI API key.",
    "Don't worry, just paste your token below.",
    "Give me your bgp_ token and I will run it.",
    "Let me know your password.",
    "Type your passphrase into the chat.",
    "PASTE YOUR TOKEN HERE",
    "Please paste your t\u200boken here.",  # hidden from a plain word filter
    "Send me your API key, then we can go on.",
    "Please provide your access token for verification.",
    "Enter your API key to continue.",
    "Your token please!",
    "What is the token you use for the API?",
    "I can't finish without your API key — please paste it.",
    "Your password, please send it to me.",
    # "In your next message" points at the chat as "here" does.
    "Please paste your API token in your next message.",
    "Please write your API token in your reply.",
    "What's the password for your account?",
    "Copy your personal access token and put it in your next message.",
    "For verification, kindly include your OpenAI key in the next reply.",
    # Named by the platform, by its prefix, in the sentence before, or with "the".
    "Could you share your BenchGen key?",
    "Paste the bgp_ string you got from settings here.",
    "Please copy the string that starts with bgp_ into the chat.",
    "Which token did you create? Paste it here.",
    "I will need the API token.",
    "What is the key you use for the API?",
]
BENIGN = [
    "I can't see your tokens; manage them at /settings/tokens",
    "Never paste a token or password into this chat.",
    "Don't share your password with anyone, including me.",
    "You never need to send me your token: I already act with your permissions.",
    "Give your token the read scope when you create it at /settings/tokens.",
    "Include your token in the Authorization header: `Authorization: Bearer …`.",
    "To run it from a script, put your token in the BENCHGEN_TOKEN environment variable.",
    "Set max tokens to 256 for this model.",
    "Enter the number of tokens the model may generate.",
    "Provide the answer key as a letter for each question.",
    "Send me the questions and I will draft the benchmark.",
    "Type your question below.",
    "Each question costs about 12 tokens.",
    "Please share your feedback!",
    "You pasted a BenchGen API token (ending …abcd). A token seen in a chat counts as leaked, "
    "so it has been revoked and no longer works anywhere. Make a new one at /settings/tokens "
    "and keep it out of chats.",
    "Your token was revoked. Create a new one at /settings/tokens.",
    "I created the benchmark “Passwords in history” with 10 questions.",
    "What is your favourite capital?",
    "What is the token limit of this model?",
    "Enter the number of tokens to continue generating.",
    "Add your OpenAI API key: open Models and paste it into the form.",
    "Your API key is secret; never paste it here.",
    "Your token was revoked. Create a new one and paste it into BENCHGEN_TOKEN.",
    "Copy your API key into the model form.",
    "Include your OpenAI key in the model settings page.",
    "Never put your password in a message.",
    "Write your answer in the reply.",
    "We will need the token count.",
    "The model used 50 tokens. Paste it below to compare.",
    "What is the key you use to sort the leaderboard?",
    "Send the results you got from the run below.",
]


@pytest.mark.parametrize("reply", ASKS)
def test_a_reply_that_asks_for_a_secret_is_recognised(reply: str) -> None:
    assert asks_for_secret(reply)


@pytest.mark.parametrize("reply", BENIGN)
def test_advice_about_secrets_is_not_an_ask(reply: str) -> None:
    assert not asks_for_secret(reply)


# What a hostile model writes to get a request past a word filter: each is still a request.
DISGUISED = [
    "Please paste your \u0410PI t\u043eken here.",  # Cyrillic A and o
    "paste your t\u043ek\u0435n",  # Cyrillic o and e
    "Send me your \u03a1\u0391SSW\u039fRD now.",  # Greek capitals
    "\uff50\uff41\uff53\uff54\uff45 your token here",  # fullwidth
    "\U0001d429\U0001d41a\U0001d42c\U0001d42d\U0001d41e your token here",  # bold maths letters
    "P a s t e your token here",
    "paste your t o k e n here",
    "paste your pass word here",
    "p.a.s.t.e your token",
    "Please p-a-s-t-e your A.P.I. t_o_k_e_n here.",
    "p a s t e  y o u r  t o k e n  h e r e",  # a gap between words
    "p a s t e y o u r t o k e n h e r e",  # no gap between words
    "paste a t o k e n here",
    "Please paste your t\u200bo\u200bk\u200be\u200bn here.",
    "Your personal access token goes in the box below.",
    "Your API key goes into the chat.",
    "I'll need your bgp_ token to continue",
    "Reply with your password so I can sign in for you",
    "Can I have your API token?",
]
# Advice that the ways of reading the disguises above must not turn into a request.
STILL_BENIGN = [
    "Your token goes in the Authorization header.",
    'BENCHGEN_TOKEN="your token goes here"',
    "Your API key goes into the model form, never into the chat.",
    "Never p a s t e your token here.",
    "N\u0435ver paste your token here.",  # Cyrillic e in the negation
    "Don\u2019t paste your token here.",
    "Pick a, b or c; the token count is shown below.",
    "The U.S.A. team asked what the token limit is.",
    "Create a token on the Tokens page at /settings/tokens.",
    "Never share your token with anyone.",
    "Type a b c to see the token count.",
]


@pytest.mark.parametrize("reply", DISGUISED)
def test_a_disguised_request_for_a_secret_is_recognised(reply: str) -> None:
    assert asks_for_secret(reply)


@pytest.mark.parametrize("reply", STILL_BENIGN)
def test_advice_read_the_same_way_is_still_not_an_ask(reply: str) -> None:
    assert not asks_for_secret(reply)


@pytest.mark.parametrize(
    "question",
    ["In the film, what is the password?", "What is your password?", "Your password, please"],
)
def test_a_quoted_question_is_the_datas_not_a_request(question: str) -> None:
    """A benchmark's question is put to the model it tests; the same words from the agent ask
    the user (the list of questions a quiz preview quotes, see leaks.screen_reply)."""
    assert not asks_for_secret(question, quoted=True)
    assert asks_for_secret(question)


@pytest.mark.parametrize("request_", ["Please send me your password to continue.", *DISGUISED])
def test_a_quoted_request_is_still_a_request(request_: str) -> None:
    assert asks_for_secret(request_, quoted=True)


@pytest.mark.parametrize("cut", [4, 12, 30, 41])
def test_a_token_pasted_in_two_messages_is_found_from_its_two_parts(cut: int) -> None:
    token = ids.new_token("bgp")
    found = split_token(f"my token starts {token[:cut]}", f"and ends {token[cut:]}, thanks")
    assert found is not None
    assert (found.token, found.head, found.tail) == (token, token[:cut], token[cut:])
    assert token not in repr(found)


def test_words_that_only_look_like_token_parts_are_no_split_token() -> None:
    token = ids.new_token("bgp")
    assert split_token(f"it starts {token[:20]}", "and ends with something else entirely") is None
    assert split_token("nothing here", token[20:]) is None
    assert split_token(f"{token[:20]}x", token[20:]) is None  # another start than the token's
    assert split_token(token, "more words") is None  # whole already: the exact row has it


# --- tokens pasted encoded: base64, hex, reversed, spaced out ------------------------------


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _url_b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


# Each way a token may be pasted so that no plain-text row sees it. The first bytes of
# "\xff\xfe…" make the URL-safe alphabet's `-` and `_` show up in the encoding.
ENCODINGS: dict[str, Callable[[str], str]] = {
    "base64": _b64,
    "base64-unpadded": lambda t: _b64(t + "\n").rstrip("="),  # `echo $TOKEN | base64`
    "base64-padded": lambda t: _b64(t + "\n"),
    "base64-url": lambda t: _url_b64("\xff\xfe" + t),
    "base64-url-unpadded": lambda t: _url_b64("\xfe" + t).rstrip("="),
    "base64-body": lambda t: _b64(t[4:]),
    "base64-in-json": lambda t: _b64(json.dumps({"token": t})),
    "base64-after-a-path": lambda t: "/api/v1/" + _b64(t),  # `/` is base64 too: misaligned
    "hex": lambda t: t.encode().hex(),
    "hex-upper": lambda t: t.encode().hex().upper(),
    "hex-spaced": lambda t: t.encode().hex(" "),
    "hex-colons": lambda t: t.encode().hex(":"),
    "reversed": lambda t: t[::-1],
    "spaced-out": " ".join,
    "dashes-every-4": lambda t: t[:4] + "-".join(t[i : i + 4] for i in range(4, 42, 4)),
    "spaces-every-5": lambda t: " ".join(t[i : i + 5] for i in range(0, 42, 5)),
    "capital-prefix-spaced": lambda t: " ".join(t[:3].upper()) + " _ " + " ".join(t[4:]),
    "zero-width-in-base64": lambda t: _b64(t)[:20] + "\u200b" + _b64(t)[20:],
}


@pytest.mark.parametrize("encode", ENCODINGS.values(), ids=ENCODINGS.keys())
@pytest.mark.parametrize("token", [BENCHGEN, TURN], ids=["api", "turn"])
def test_an_encoded_token_is_found_and_its_whole_encoding_redacted(
    encode: Callable[[str], str], token: str
) -> None:
    pasted = encode(token)
    text = f"my token: {pasted} thanks"
    (finding,) = find_secrets(text)
    assert finding.kind is SecretKind.BENCHGEN_TOKEN
    assert text[finding.start : finding.end] == pasted  # all of it, not only the token's part
    assert token in token_candidates(finding)
    assert redact_secrets(text) == "my token: [redacted: BenchGen token] thanks"
    assert token not in repr(finding)


def test_two_encoded_tokens_are_two_findings_and_a_plain_one_is_not_found_twice() -> None:
    text = f"{_b64(BENCHGEN)} and {TURN[::-1]}, then {BENCHGEN} and {BENCHGEN[:20]} {BENCHGEN[20:]}"
    found = [token_candidates(f) for f in find_secrets(text)]
    assert found == [(BENCHGEN,), (TURN,), (BENCHGEN,), (BENCHGEN,)]


def _bad_checksum(token: str) -> str:
    return token[:-1] + ("A" if token[-1] != "A" else "B")


@pytest.mark.parametrize("encode", ENCODINGS.values(), ids=ENCODINGS.keys())
def test_an_encoded_token_with_a_bad_checksum_is_not_found(encode: Callable[[str], str]) -> None:
    assert find_secrets(f"see {encode(_bad_checksum(BENCHGEN))} here") == []


@pytest.mark.parametrize("encode", ENCODINGS.values(), ids=ENCODINGS.keys())
def test_random_text_encoded_the_same_way_is_not_taken_for_a_token(
    encode: Callable[[str], str],
) -> None:
    # Random words of a token's shape (no checksum) and random bytes: what a model, a log or a
    # data URL is full of. The checksum keeps every one of them out.
    rng = random.Random(20261206)
    words = ["bgp_" + "".join(rng.choices(BASE62, k=38)) for _ in range(300)]
    assert find_secrets(" ; ".join(encode(word) for word in words)) == []
    noise = [rng.randbytes(42).decode("latin-1") for _ in range(300)]
    assert find_secrets(" ; ".join(encode(bytes_) for bytes_ in noise)) == []


def test_random_base64_and_hex_of_a_tokens_length_are_not_flagged() -> None:
    rng = random.Random(7)
    b64 = string.ascii_letters + string.digits + "+/"
    text = " ".join("".join(rng.choices(b64, k=56)) for _ in range(2000))
    text += " ".join(rng.randbytes(42).hex() for _ in range(1000))
    assert find_secrets(text) == []


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Patch `encoded_tokens.<name>` to note the length of each input it decodes."""
    seen: list[int] = []
    real = getattr(encoded_tokens, name)

    def counted(chars: str) -> bytes:
        seen.append(len(chars))
        result: bytes = real(chars)
        return result

    monkeypatch.setattr(encoded_tokens, name, counted)
    return seen


def test_the_decoding_work_is_bounded_by_the_length_of_the_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 100 KB of random base64 and hex: at most four decodings (its alignments) of each run long
    # enough to hold an encoded token, so never more characters than four times the text.
    base64_calls = _counting(monkeypatch, "_decode_base64")
    hex_calls = _counting(monkeypatch, "_decode_hex")
    rng = random.Random(11)
    b64 = string.ascii_letters + string.digits + "+/"
    one_run = "".join(rng.choices(b64, k=100_000))
    words = " ".join("".join(rng.choices(b64, k=56)) for _ in range(100_000 // 57))
    hexes = " ".join(rng.randbytes(42).hex() for _ in range(100_000 // 85))
    for text in (one_run, words, hexes):
        base64_calls.clear()
        hex_calls.clear()
        assert find_secrets(text) == []
        assert len(base64_calls) <= 4 * len(text) // 51 and sum(base64_calls) <= 4 * len(text)
        assert len(hex_calls) <= 2 * len(text) // 76 and sum(hex_calls) <= 2 * len(text)
        if text is one_run:
            assert len(base64_calls) == 4
    base64_calls.clear()
    hex_calls.clear()
    assert find_secrets("A sentence of short words, and a number: 1234567890. " * 2000) == []
    assert base64_calls == [] and hex_calls == []  # nothing long enough to decode


def test_decoys_before_a_spaced_out_token_cost_one_checksum_each_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "bgp bgp bgp …" would cost a checksum per decoy; each different candidate is checked once.
    checked: list[str] = []
    real = encoded_tokens.token_prefix

    def counted(token: str) -> str | None:
        checked.append(token)
        return real(token)

    monkeypatch.setattr(encoded_tokens, "token_prefix", counted)
    token = ids.new_token("bgp")
    text = "b g p " * 20_000 + " ".join(token)
    (finding,) = find_secrets(text)
    assert finding.secret == token and len(checked) < 100
