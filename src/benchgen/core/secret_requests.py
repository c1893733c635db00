"""A14: whether a reply asks its reader for a secret (a token, key, password or credential)."""

from __future__ import annotations

import re
import string
import unicodedata
from functools import cache

from benchgen.core.text import INVISIBLE_RUN

# The agent acts with the user's own permissions, so it never needs a token or a password, and
# anything pasted is redacted before it is read anyway. A reply asking for one is therefore a
# sign of a confused or injected model (a benchmark or tool result telling it to phish), and is
# withheld. The patterns aim at requests ("paste your API token here", "send me your password",
# "what is your token?", "I need your API key"), not at advice about secrets ("never share your
# token", "put your token in BENCHGEN_TOKEN", "I can't see your tokens").

# A model told to get past a word filter spells the words out ("p a s t e", "t.o.k.e.n",
# "pass word"): one of these may stand between any two letters of a verb or a noun below.
_GAP = r"[\s.\-_*\u00b7\u2022/|+~]"
_VERBS = (
    "paste", "send", "share", "give", "provide", "enter", "type", "tell", "supply", "submit",
    "input", "post", "forward", "dm", "write", "include", "put", "copy", "drop", "attach",
    "reveal", "show",
)  # fmt: skip
_NOUNS = ("token", "password", "passphrase", "passcode", "credential", "secret", "cookie")


def _spread(word: str) -> str:
    return f"{_GAP}?".join(word)


_HANDOVER = (
    rf"(?:{'|'.join(_spread(verb) for verb in _VERBS)}|"
    r"hand\s+over|reply\s+with|respond\s+with|read\s+out|let\s+(?:me|us)\s+(?:know|have|see))"
)
_DETERMINER = r"(?:your|the|a|an|that|this)"
# Only words that describe a secret may stand between the determiner and the noun, so "the
# number of tokens" or "your answer key" are never taken for one.
_QUALIFIERS = (
    "personal", "benchgen", "api", "access", "auth", "authentication", "bearer", "login",
    "account", "admin", "user", "secret", "private", "current", "existing", "new", "valid", "own",
    "full", "openai", "anthropic", "github", "aws", "hf", "cli", "session", "browser", "csrf",
)  # fmt: skip
_QUALIFIER = rf"(?:(?:{'|'.join(_QUALIFIERS)}|hugging\s*face|bgp_?|bga_?)[\s-]+){{0,3}}"
_NOUN = (
    rf"(?:(?:{'|'.join(_spread(noun) for noun in _NOUNS)})s?|"
    r"(?:api|secret|access|private|ssh|auth)[\s-]?keys?|"
    r"(?:openai|anthropic|github|aws|hugging\s*face|hf|provider|model|benchgen)[\s-]+keys?|"
    # A token named by its prefix: "the bgp_ string", "the value that starts with bgp_".
    r"bg[pa]_\S*(?:\s+(?:string|value|code|text|one))?|"
    r"(?:string|value|code|text|one)\s+(?:that\s+)?(?:starts|begins|starting|beginning)\s+with\s+"
    r"[\"'`]?bg[pa]_\S*)"
)
_SECRET = rf"{_DETERMINER}\s+{_QUALIFIER}{_NOUN}\b"
# After the noun: the end of the request, or words that point the secret at the chat; an aside
# may come first ("paste your token (bgp_…) here", "your API key [sk-…] below").
_ASIDE = (
    r"(?:\s*(?:\([^()\n]{0,80}\)|\[[^\[\]\n]{0,80}\]|`[^`\n]{0,80}`)|"
    # "… the bgp_ string you got from settings here": which one, said on the way.
    r"\s+(?:that\s+|which\s+)?(?:you|we)\s+(?:got|made|created|have|received|copied|generated|saw)"
    r"(?:\s+(?:from|at|in|on|under)\s+[^\s.?!,;:]+){0,2})?"
)
_CHAT = (
    r"(?:in(?:to)?\s+(?:the|this|our)\s+(?:chat|conversation|message|box|reply|field)|"
    # "… in your next message", "… in the next reply": the chat, in other words.
    r"in\s+(?:your|the|a)\s+(?:next\s+|following\s+)?(?:message|reply|answer|response))"
)
_POINTED = (
    rf"{_ASIDE}\s*(?:$|[.?!:;,)\n\u2014\u2013]|\s(?:here|below|now|please|{_CHAT}|"
    r"(?:to|with|for)\s+(?:me|us)|so\s+(?:that\s+)?(?:i|we)\b|and\s+(?:i|we)\b|"
    # "… to continue", "… for verification": the reason a phisher gives.
    r"(?:to|for|so\s+as\s+to|in\s+order\s+to)\s+(?:continue|proceed|go\s+on|finish|complete|"
    r"verif(?:y|ication)|authenticat(?:e|ion)|confirm|validat(?:e|ion)|log\s*in|sign\s*in|"
    r"unlock)\b))"
)
# The word first and its start checked behind it: a pattern that begins with a literal is
# looked for by `re` many times faster than one that begins with `\b` (a 60k reply: 0.1 ms
# against 0.9).
_YOUR = r"your(?<=\byour)"
# "I need", "we'll require", "can I have": wanting what follows.
_WANT = (
    r"(?:(?:i|we)(?:'ll|'d|\s+will|\s+would)?\s+(?:need|require|must\s+have)|"
    r"(?:can|could|may)\s+(?:i|we)\s+(?:have|get|see|borrow))"
)
# Requests, whoever's words they are: a benchmark's question that says "send me your password"
# phishes as well as the model's own reply.
_REQUESTS = (
    # "send me your token, …": asked of the reader, addressed to the agent.
    rf"\b{_HANDOVER}\s+(?:me|us)\s+(?:back\s+)?{_SECRET}",
    # "paste your API token here", "please provide the password."
    rf"\b{_HANDOVER}\s+(?:(?:over|in|back)\s+)?{_SECRET}{_POINTED}",
    # "I need your API key", "we'll require your credentials", "can I have your password?"
    rf"\b{_WANT}\s+your\s+{_QUALIFIER}{_NOUN}\b",
    # "I will need the API token.": "the" only where the request ends there, since "we'll
    # need the token count" asks for none.
    rf"\b{_WANT}\s+the\s+{_QUALIFIER}{_NOUN}{_POINTED}",
    # "your personal access token goes in the box below": a request without a verb to ask.
    rf"{_YOUR}\s+{_QUALIFIER}{_NOUN}\s+(?:goes|go|belongs|(?:can|should|must)\s+go)\s+"
    rf"(?:below|{_CHAT})",
)
# Questions, asked only in the agent's own words: in a quoted question of a benchmark ("In the
# film, what is the password?") they are put to the model the benchmark tests, not to the user.
_QUESTIONS = (
    # "what is your password?", "what's your BenchGen token", "what is the token you use?"
    rf"what(?<=\bwhat)(?:'s|\s+is|\s+are)\s+(?:your|the)\s+{_QUALIFIER}{_NOUN}"
    r"(?:\s*(?:$|[?.!,:;])|\s+(?:that\s+)?you\s+(?:use|have|got)\b|"
    r"\s+(?:for|of|to)\s+your\s+(?:account|login|profile)\b)",
    # "your token, please!"
    rf"{_YOUR}\s+{_QUALIFIER}{_NOUN}\s*,?\s*please\b",
    # "What is the key you use for the API?": a bare "key" is a secret only so described.
    r"what(?<=\bwhat)(?:'s|\s+is|\s+are)\s+(?:your|the)\s+keys?\s+(?:that\s+)?you\s+use\s+"
    r"(?:for|with|on|in)\s+(?:the\s+)?(?:api|benchgen)\b",
)
# "… without your API key — please paste it.": the secret named earlier in the sentence and
# asked for by a pronoun, pointed at the chat. Told apart from advice ("paste it into the model's
# form") by the pointing, as above.
_PRONOUN_ASK = rf"\b{_HANDOVER}\s+(?:me\s+|us\s+)?(?:it|them){_POINTED}"
# Named in this sentence, or as a thing of the reader's in the one before ("Which token did
# you create? Paste it here.", where "It used 50 tokens. Paste it below." names none).
_NAMED_BEFORE = (
    rf"(?:{_NOUN}\b[^.?!\n]*|(?:your|which|the|that|this)\s+{_QUALIFIER}{_NOUN}\b"
    r"[^.?!\n]*[.?!]+\s+[^.?!\n]*)$"
)
# "… run `echo $BENCHGEN_TOKEN` and paste what it prints here": what a command or a page shows
# asked for in the secret's stead, where what shows one is named in the clause or the request.
_PRINTED_ASK = (
    rf"\b{_HANDOVER}\s+(?:me\s+|us\s+)?(?:(?:the\s+|its\s+)?(?:output|result|value|contents?)"
    r"(?:\s+of\s+\S+(?:\s+\S+){0,5}?)?|what\s+(?:it|that|this)\s+(?:prints|shows|returns|says|outputs))"
    rf"{_POINTED}"
)
# Where a secret shows: the browser's cookies and storage, a variable named for one, the
# environment, and the files that keep them.
_REVEALERS = (
    r"document\s*\.\s*cookie|localstorage|sessionstorage|"
    r"[$%]\{?[a-z0-9_]*(?:token|key|secret|password|passwd|cookie)|"
    r"\bprintenv\b|`env`|\.netrc\b|\.env\b|\.benchgen\b|benchgen/config"
)
# A request in the same clause after one of these is advice, not a request: "never paste your
# token here", "you don't need to send me your password".
_NEGATION = re.compile(
    r"\b(?:don't|dont|do\s+not|never|not|no\s+need|needn't|shouldn't|should\s+not|mustn't|"
    r"must\s+not|avoid|without|nor|won't|will\s+not|cannot|can't|nobody|no\s+one)\b"
)
_CLAUSE_END = re.compile(r"[.!?;:,\n\u2014\u2013]")

# Letters that look Latin but are not (Cyrillic, Greek, Armenian), read as the Latin letter they
# pass for: "АPI tоken" with a Cyrillic А and о reads "API token" to the user. Capitals are
# folded before casefolding, since a capital and its small letter may mimic different letters
# (Greek Η looks like H, η like n). Fullwidth and styled letters are NFKD's.
# Latin small capitals, IPA letters, letters with a stroke, Lisu and Cherokee capitals and
# Cyrillic small letters shaped as small capitals pass for Latin ones too ("ᴘᴀꜱᴛᴇ", "ꓔoken",
# "тoken"); NFKC leaves all of them alone.
_LOOKALIKE = (
    "АВЕЅІЈКМНОРСТХУԚԜаеѕіјһԁоԛрсуԝхӏѵΑΒΕΖΗΙΚΜΝΟΡΤΥΧαεικνορτυχγՕօսոհՏ"
    "кмтнвүҮҺςϳց"
    "ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢɑɡɩıȷʋøđłħŧ"
    "ꓐꓚꓓꓰꓝꓖꓧꓲꓙꓗꓡꓟꓠꓳꓑꓣꓢꓔꓴꓦꓪꓫꓬꓜᎪᏴᏟᎠᎬᏀᎻᎥᎫᏦᏞᎷᏢᏚᎢᏙᎳᏃ"
)
_LATIN = (
    "ABESIJKMHOPCTXYQWaesijhdoqpcywxlvABEZHIKMNOPTYXaeikvoptuxyOounhS"
    "kmthbyYHcjg"
    "abcdefghijklmnoprstuvwyzagiijvodlht"
    "BCDEFGHIJKLMNOPRSTUVWXYZABCDEGHiJKLMPSTVWZ"
)
# Letters drawn in a negative circle or square, and the regional indicators that pair into
# flags, from A to Z ("🅿🅰🆂🆃🅴"); NFKC folds only the plain circled and squared ones.
_BOXED = (0x1F150, 0x1F170, 0x1F1E6)
_LOOKALIKES = str.maketrans(_LOOKALIKE, _LATIN) | {
    start + offset: ord("A") + offset for start in _BOXED for offset in range(26)
}
_LOOKALIKE_CLASS = f"[{_LOOKALIKE}{''.join(f'{chr(s)}-{chr(s + 25)}' for s in _BOXED)}]"
# Accents and other marks put over or under a letter ("pásté your tòkén", "t̲o̲k̲e̲n̲"), once
# NFKD has set them apart from it.
_MARKS = "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]"
# Digits and signs written for the letters they resemble ("p4ssw0rd", "t0k3n", "@PI k3y"): a
# word holding one is read as the word of the patterns it spells, if any; every other word,
# a number or "h100" or "gpt-4o", stays as it is.
_LEET = {
    "0": "o", "1": "il", "!": "il", "|": "il", "3": "e", "€": "e", "4": "a", "@": "a",
    "5": "s", "$": "s", "7": "t", "+": "t", "8": "b", "9": "g", "6": "g", "2": "z",
}  # fmt: skip
_LEET_CHARS = "0-9@$|!+€"
# A digit or sign beside a letter: the sign first, since a pattern that begins with a class of
# a few characters is looked for many times faster than a whole word is (60k of prose: 0.2 ms
# against 2).
_LEET_BY_LETTER = f"[{_LEET_CHARS}](?:(?<=[a-z].)|(?=[a-z]))"
_LEET_WORD_CHARS = string.ascii_lowercase + "".join(_LEET)
# Curly and modifier apostrophes read as "'", so "don’t" negates as "don't" does.
_APOSTROPHE = "[\u2018\u2019\u02bc\u2032]"
# Three or more single letters with a gap after each: a word spelled out ("p a s t e",
# "t.o.k.e.n", "a.p.i.", "t 0 k 3 n"), joined again before matching.
_SPELLED = rf"(?<![a-z0-9])(?:[a-z0-9@$]{_GAP}){{2,}}[a-z0-9@$]\.?(?![a-z0-9])"
# A whole request spelled out with single gaps ("p a s t e y o u r t o k e n") joins into one
# run; the words the patterns look for are set apart in it again.
_FILLERS = ("your", "the", "me", "us", "api", "key", "keys", "here", "below", "now")
_WORDS = "|".join(sorted([*_VERBS, *_NOUNS, *(f"{n}s" for n in _NOUNS), *_FILLERS], key=len)[::-1])
# The words a leet spelling is read as: those the patterns look for, and the halves of
# "pass word" that a gap may part.
_SPELLABLE = frozenset(
    [*_VERBS, *_NOUNS, *(f"{n}s" for n in _NOUNS), *_FILLERS, *_QUALIFIERS, "pass", "word",
     "what", "is", "to", "for", "please", "continue", "proceed", "verify", "verification"]
)  # fmt: skip
_LONGEST = max(map(len, _SPELLABLE))
_SPELLABLE_BY_LENGTH = {
    size: [known for known in _SPELLABLE if len(known) == size] for size in map(len, _SPELLABLE)
}


def asks_for_secret(text: str, *, quoted: bool = False) -> bool:
    """True when `text` asks its reader for a token, key, password or other credential (A14).

    Matching ignores case, curly apostrophes, invisible characters, accents, fullwidth and
    styled letters, letters of other scripts that look Latin, digits and signs written for
    letters, and gaps spelled between letters, so "paste your t\u200boken", "paste your tоken"
    (Cyrillic о), "P a s t e your t.o.k.e.n" and "p4st3 y0ur @PI k3y" are caught. Advice
    about secrets ("never share your token", "put your token in BENCHGEN_TOKEN", "manage your
    tokens at /settings/tokens") is not a request.

    Args:
        text: the text to check.
        quoted: `text` quotes data (a benchmark's questions in a proposal's preview): only
            requests count, not questions such as "what is the password?", which the data
            puts to whoever answers the benchmark.
    """
    plain = _plain(text)
    for pattern in _REQUESTS if quoted else _REQUESTS + _QUESTIONS:
        for match in _regex(pattern).finditer(plain):
            if not _negated(plain, match.start()):
                return True
    named = (
        match
        for match in _regex(_PRONOUN_ASK).finditer(plain)
        if _regex(_NAMED_BEFORE).search(plain, max(0, match.start() - 200), match.start())
    )
    shown = (m for m in _regex(_PRINTED_ASK).finditer(plain) if _shows_secret(plain, m))
    return any(not _negated(plain, match.start()) for match in (*named, *shown))


def _plain(text: str) -> str:
    """`text` as the patterns read it: each disguise above undone, in lower case."""
    if not text.isascii():
        text = INVISIBLE_RUN.sub("", unicodedata.normalize("NFKD", text))
        text = _regex(_MARKS).sub("", _regex(_APOSTROPHE).sub("'", text))
        # Looked for first: translating is slow, and most texts hold no look-alike at all.
        if _regex(_LOOKALIKE_CLASS).search(text):
            text = text.translate(_LOOKALIKES)
    return _regex(_SPELLED).sub(_joined, _unleet_words(text.casefold()))


def _unleet_words(text: str) -> str:
    """`text` with each word that mixes letters with digits or signs read by `_unleet`."""
    pieces, done = [], 0
    for found in _regex(_LEET_BY_LETTER).finditer(text):
        if found.start() < done:
            continue  # in the word read last
        # A word longer than any pattern word is read as it is, so the look back stops there.
        before = text[max(done, found.start() - _LONGEST) : found.start()]
        start = found.start() - len(before) + len(before.rstrip(_LEET_WORD_CHARS))
        after = _regex(f"[^a-z{_LEET_CHARS}]").search(text, found.start())
        end = after.start() if after else len(text)
        pieces += [text[done:start], _unleet(text[start:end])]
        done = end
    return "".join(pieces) + text[done:]


def _joined(spelled: re.Match[str]) -> str:
    letters = _unleet(_regex(_GAP).sub("", spelled.group()))
    return _regex(_WORDS).sub(r" \g<0> ", letters)


def _unleet(word: str) -> str:
    """`word` as the pattern word its digits and signs spell, with the signs that end it kept
    ("t0k3n!" reads "token!"), or as it is."""
    if not any("a" <= char <= "z" for char in word):
        return word
    for stem in (word, word.rstrip("!|+")):
        for known in _SPELLABLE_BY_LENGTH.get(len(stem), ()):
            if all(
                seen == meant or meant in _LEET.get(seen, "")
                for seen, meant in zip(stem, known, strict=True)
            ):
                return known + word[len(stem) :]
    return word


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    # Compiled at the first check, not on import: every process that may redact a text imports
    # this module, and compiling these and the table's shapes took ~8 ms of `benchgen run`'s
    # start, where nothing is redacted before the first model request.
    return re.compile(pattern)


def _shows_secret(text: str, ask: re.Match[str]) -> bool:
    """Whether what `ask` asks for shows a secret: named in its clause, or in it."""
    # A clause ends at a mark followed by a space: "document.cookie" is one clause.
    before = text[max(0, ask.start() - 200) : ask.start()]
    clause = _regex(r"[.!?;:,\n\u2014\u2013](?:\s|$)").split(before)[-1]
    return _regex(_REVEALERS).search(clause + ask.group()) is not None


def _negated(text: str, start: int) -> bool:
    clause = _CLAUSE_END.split(text[max(0, start - 200) : start])[-1]
    return _NEGATION.search(clause) is not None
