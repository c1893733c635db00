"""Email addresses that read as another's: mixed alphabets, stray marks, look-alike-only labels.

Each part of an address (the local part, and each label of the domain) is judged alone, as
browsers judge the labels of a domain name before showing it in Unicode: no confusables table,
and no comparison with the accounts already made, so the same address gets the same answer at
every door, whoever came first. An address written in one alphabet is anyone's own ("иван@
пример.рф" is real), unless each of its letters copies a Latin one.
"""

from __future__ import annotations

import unicodedata
from itertools import pairwise

# Alphabets with letters that look like one another's (Cyrillic а and Latin a, Greek ο and o): a
# part of an address written in two of them reads as another person's address in every list.
_LOOK_ALIKE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE")

# The lower-case letters of each alphabet that read as Latin ones (Chrome's list for Cyrillic,
# Unicode's confusables for the others). A part made of these alone, "ехарѕ", reads as a Latin
# word ("exaps"), unless the domain's top level is one where that alphabet is at home.
_LATIN_LOOKING = {
    "CYRILLIC": set("асԁеһіјӏорԛѕԝхуъьҽпгѵѡ"),
    "GREEK": set("αγινορυχ"),
    "ARMENIAN": set("հոսօցզ"),
}
_HOME_TOPS = {
    "CYRILLIC": {"bg", "by", "kz", "mk", "mn", "rs", "ru", "su", "ua", "uz"},
    "GREEK": {"gr", "cy"},
    "ARMENIAN": {"am"},
}


def problem(address: str) -> str:
    """Why `address` (normalised: NFC, lower-cased) reads as another address; "" when it does
    not."""
    parts = address.replace("@", ".").split(".")
    for part in parts:
        found = _mixed(part) or _marked(address, part) or _latin_looking(part, parts[-1])
        if found:
            return found
    return ""


def _script(char: str) -> str:
    """The alphabet a letter belongs to, as its Unicode name starts ("LATIN", "CYRILLIC"…)."""
    return unicodedata.name(char, "").split(" ", 1)[0]


def _mixed(part: str) -> str:
    scripts = {_script(char) for char in part if char.isalpha()}
    found = sorted(scripts.intersection(_LOOK_ALIKE_SCRIPTS))
    if len(found) > 1:
        names = " and ".join(script.capitalize() for script in found)
        return f"mixes look-alike alphabets ({names}) in one part"
    return ""


def _marked(address: str, part: str) -> str:
    """A separate mark on a letter that no single letter carries (an accent that composes, as
    in é, is one letter by now): "i" and a combining dot, which "İnfo" lower-cases to, reads
    as "info". Marks on letters of other alphabets (Devanagari's vowel signs) are their
    writing, and pass."""
    for before, char in pairwise(part):
        if _is_stray_mark(before, char):
            plain = address[0] + "".join(
                c for b, c in pairwise(address) if not _is_stray_mark(b, c)
            )
            mark = unicodedata.name(char, "a mark").lower()
            return f"has a letter with a separate mark ({before} and {mark}): write {plain}"
    return ""


def _is_stray_mark(before: str, char: str) -> bool:
    return unicodedata.category(char) in ("Mn", "Me") and _script(before) in _LOOK_ALIKE_SCRIPTS


def _latin_looking(part: str, top: str) -> str:
    letters = [char for char in part if char.isalpha()]
    scripts = {_script(char) for char in letters}
    if len(scripts) != 1:
        return ""
    [script] = scripts
    looking = _LATIN_LOOKING.get(script)
    if looking is None or not set(letters) <= looking:
        return ""
    if top in _HOME_TOPS[script] or _script(top[:1]) == script:
        return ""
    return (
        f"has a part written in {script.capitalize()} letters that each look Latin ({part}), "
        "so it reads as another address: write it in Latin letters"
    )
