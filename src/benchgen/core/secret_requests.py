"""A14: whether a reply asks its reader for a secret (a token, key, password or credential)."""

from __future__ import annotations

import re
from functools import cache

from benchgen.core.text import INVISIBLE_RUN

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
# After the noun: the end of the request, or words that point the secret at the chat; an aside
# may come first ("paste your token (bgp_…) here", "your API key [sk-…] below").
_ASIDE = r"(?:\s*(?:\([^()\n]{0,80}\)|\[[^\[\]\n]{0,80}\]|`[^`\n]{0,80}`))?"
_POINTED = (
    rf"{_ASIDE}\s*(?:$|[.?!:;,)\n\u2014\u2013]|\s(?:here|below|now|please|in(?:to)?\s+(?:the|this|our)\s+"
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
