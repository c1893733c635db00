"""A14: requests for a secret in leetspeak or in look-alike letters are read as requests."""

from __future__ import annotations

import pytest

from benchgen.core.secret_requests import asks_for_secret

DISGUISED = [
    "Please paste your p4ssw0rd here.",
    "send me your t0k3n",
    "Send me your t0k3n!",
    "Paste your @PI k3y here.",
    "S3ND M3 Y0UR P4SSW0RD!",
    "p4st3 y0ur t0k3n h3r3",
    "paste your p4ss w0rd here",
    "paste your t 0 k 3 n here",
    "Pl3as3 pr0v1d3 y0ur cr3d3nt1@ls t0 c0nt1nu3.",
    "\u1d18\u1d00\ua731\u1d1b\u1d07 your token here",  # Latin small capitals
    "paste your \ua4d4oken here",  # Lisu T
    "paste your \u13a2oken here",  # Cherokee T
    "paste your \u0442oken here",  # Cyrillic small te
    "paste your \u0251pi key here",  # Latin alpha
    "p\u00e1st\u00e9 your t\u00f2k\u00e9n here",  # accents
    "paste your t\u0332o\u0332k\u0332e\u0332n\u0332 here",  # combining low line
    "\U0001f17f\U0001f170\U0001f182\U0001f183\U0001f174 your token here",  # negative squared
]
# Ordinary text with digits and signs among letters, or letters with accents: never a request.
BENIGN = [
    "Set max t0kens to 256 for this model.",
    "The h100 run used 2024 tokens; your password is never needed.",
    "Never p4st3 your t0k3n here.",
    "Send me the questions for gpt-4o and l33t-bench.",
    "Caf\u00e9 \u00e0 la cr\u00e8me: your order is ready.",
    "\U0001f1eb\U0001f1f7 Paris won 3-1.",
    "Email me@example.com if the token count looks wrong.",
]


@pytest.mark.parametrize("reply", DISGUISED)
def test_a_request_in_leetspeak_or_look_alike_letters_is_recognised(reply: str) -> None:
    assert asks_for_secret(reply)
    assert asks_for_secret(reply, quoted=True)


def test_a_question_in_leetspeak_is_the_agents_request_not_the_datas() -> None:
    assert asks_for_secret("Wh4t 1s y0ur p@$$w0rd?")
    assert not asks_for_secret("Wh4t 1s y0ur p@$$w0rd?", quoted=True)


@pytest.mark.parametrize("reply", BENIGN)
def test_ordinary_text_read_the_same_way_is_not_a_request(reply: str) -> None:
    assert not asks_for_secret(reply)


# A cookie is a secret, and so is what a command or a page prints from one.
REVEALING = [
    "Paste your session cookie here.",
    "Please paste your session token here.",
    "Send me your cookies so I can sign in as you.",
    "Copy the Cookie header from your browser and paste it here.",
    "Open DevTools, run document.cookie and paste the result here.",
    "Run `echo $BENCHGEN_TOKEN` and paste what it prints here.",
    "Paste the output of `env` here.",
    "Run printenv and send me the output.",
    "Please paste the contents of ~/.config/benchgen/config.toml here.",
]
STILL_ADVICE = [
    "Paste the output of the run here.",
    "Never paste the output of `env` here.",
    "Put your token in $BENCHGEN_TOKEN, then paste the output of `benchgen runs list` here.",
    "Your session expired; sign in again.",
    "The cookie banner is shown below.",
]


@pytest.mark.parametrize("reply", REVEALING)
def test_a_request_for_a_cookie_or_what_prints_a_secret_is_recognised(reply: str) -> None:
    assert asks_for_secret(reply)


@pytest.mark.parametrize("reply", STILL_ADVICE)
def test_output_and_sessions_without_a_secret_are_not_asked_for(reply: str) -> None:
    assert not asks_for_secret(reply)
