"""Text hygiene: the invisible and control characters that spoof names or hide text."""

# Why this exists: a title such as "\u202e\u200bevil" renders as something other than what is
# stored, so a benchmark, model or token can pass itself off as another; invisible characters
# also hide text from people while language models and scanners still read it. Every door
# reaches storage through the services, and the services route every free-text field through
# the two checks here (`require_line` for names, `require_text` for prose), or through the
# request shapes in services/specs.py, which call the same problem finders.

from __future__ import annotations

import re
import unicodedata

from benchgen.core.errors import invalid

Loc = list[str | int]

# Names and titles fit their 200-character columns; prose is bounded alike wherever it comes
# from (typed, imported, or read from a bundle's competition.yaml).
MAX_TITLE = 200
MAX_DESCRIPTION = 20_000

# Unicode's Default_Ignorable_Code_Point set (what renderers draw as nothing), plus the other
# invisible format characters (interlinear annotation, Egyptian hieroglyph controls). Together
# they hold every format (Cf) character except the few that render as visible signs, such as
# the Arabic number sign U+0600; tests/core/test_text.py checks that against unicodedata.
INVISIBLE_CLASS = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
INVISIBLE_RUN = re.compile(f"[{INVISIBLE_CLASS}]+")

# Bidirectional embeddings, overrides and isolates reorder what follows them on screen
# ("Trojan Source"): refused in every stored text, prose included.
_BIDI = "\u202a-\u202e\u2066-\u2069"
# Controls other than tab and line breaks have no place in prose.
_PROSE_CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
# Tag characters spell out ASCII that people never see and language models read ("ASCII
# smuggling": hidden instructions in a title or a question). Their one visible use is a
# subdivision flag, black flag + tags + CANCEL TAG (England's), which stays allowed.
_TAGS = "\U000e0000-\U000e007f"
_FLAG = re.compile("\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f")
# A name is one line: no control character at all (tab and newline included), no line or
# paragraph separator, and none of the invisible characters that make two names look alike:
# every one of INVISIBLE_CLASS but those real scripts and emoji need, the joiners U+200C and
# U+200D, the variation selectors (U+FE0F makes an emoji colour; Mongolian and CJK ones pick
# a glyph) and the Mongolian vowel separator.
_NAME_INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u200b\u200e\u200f\u2060-\u206f\u3164\ufeff"
    "\uffa0\ufff0-\ufffb\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    f"{_TAGS}\U000e01f0-\U000e0fff"
)
# Lone surrogates are no text at all: a terminal in another encoding hands the CLI its bytes
# so, and writing them fails in the database (the API's JSON parser already refuses them).
_SURROGATES = "\ud800-\udfff"
# Refused in a name even when nothing else is there: controls, bidi, line breaks, zero widths.
_SPOOFING = f"\x00-\x1f\x7f-\x9f{_BIDI}\u200b\u2060\ufeff\u2028\u2029{_SURROGATES}"
_NAMED_ALONE = re.compile(f"[{_SPOOFING}]")
_LINE_FORBIDDEN = re.compile(f"[{_SPOOFING}{_NAME_INVISIBLE}]")
_TEXT_FORBIDDEN = re.compile(f"[{_PROSE_CONTROLS}{_BIDI}{_TAGS}{_SURROGATES}]")


def plural(count: int, noun: str) -> str:
    """ "1 question", "2 questions": a count and its noun, the noun in the plural unless one."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def describe(char: str) -> str:
    """A character as people can look it up, e.g. "U+202E (RIGHT-TO-LEFT OVERRIDE)"."""
    name = unicodedata.name(char, "")
    if not name and unicodedata.category(char) == "Cc":
        name = "a control character"
    elif not name and unicodedata.category(char) == "Cs":
        name = "a lone surrogate: bytes that are not UTF-8 text"
    return f"U+{ord(char):04X} ({name})" if name else f"U+{ord(char):04X}"


def line_problem(value: str) -> str | None:
    """Why `value` cannot be a name or title (a single-line field), or None when it can."""
    found = _LINE_FORBIDDEN.search(_FLAG.sub("", value))
    return f"must not contain {describe(found.group())}" if found else None


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as prose (question, answer, description), or None."""
    found = _TEXT_FORBIDDEN.search(_FLAG.sub("", value))
    return f"must not contain {describe(found.group())}" if found else None


def is_blank(value: str) -> bool:
    """True when nothing of `value` would be seen: only whitespace and invisible characters."""
    return not INVISIBLE_RUN.sub("", value).strip()


def strip_invisible(value: str) -> str:
    """`value` without any invisible character (for scanning, never for storing)."""
    return INVISIBLE_RUN.sub("", value)


def require_line(value: str, loc: Loc, *, required: bool = True) -> str:
    """Check a single-line field (title, name) and return it without surrounding whitespace.

    An optional field holding nothing visible comes back as "" rather than being stored as an
    invisible name.

    Raises:
        InvalidInput: a forbidden character, or (when `required`) nothing visible, at `loc`.
    """
    value = value.strip()
    if not required and is_blank(value) and not _NAMED_ALONE.search(value):
        return ""
    problem = name_problem(value)
    if problem is not None:
        raise invalid(loc, problem)
    return value


def name_problem(value: str) -> str | None:
    """Why `value` cannot be a required name or title, or None when it can.

    Only invisible marks (a soft hyphen, a filler) are an empty name, said so; a control or
    bidi character is named, even alone.
    """
    if is_blank(value) and not _NAMED_ALONE.search(value):
        return "must not be empty"
    return line_problem(value)


def require_text(value: str, loc: Loc) -> str:
    """Check a multi-line field (tab and line breaks allowed) and return it unchanged.

    Raises:
        InvalidInput: a control or bidirectional character, at `loc`.
    """
    problem = text_problem(value)
    if problem is not None:
        raise invalid(loc, problem)
    return value
