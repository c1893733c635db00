"""Find the final answer in a model's reply: the last `ANSWER:` line or `\\boxed{}`, unwrapped."""

from __future__ import annotations

import re
import string
import unicodedata
from itertools import accumulate

from benchgen.evals.prompts import LABELS

# A label line: optional markdown (bullets, headers, bold, quotes) before "answer", which may be
# preceded by "final" and followed by bold markers, then ":" or a spaced dash. The dash must be
# followed by a space so that prose such as "Answer-based" is not read as a label.
_LABEL_LINE = re.compile(
    r"^[ \t>#*_-]*(?:the[ \t]+)?(?:final[ \t]+)?answer[*_ \t]*(?::|[-–—][ \t])(?P<body>.*)$",
    re.IGNORECASE | re.MULTILINE,
)
# The same in lower-case text, where it needs no case folding (the pattern is in lower case).
_LOWER_LABEL_LINE = re.compile(_LABEL_LINE.pattern, re.MULTILINE)
_BOXED = "\\boxed{"
_WRAPPERS = (
    re.compile(r"^(\$\$?)(?P<inner>[^$]*)\1$"),
    re.compile(r"^\\\((?P<inner>.*)\\\)$", re.DOTALL),
    re.compile(r"^\\\[(?P<inner>.*)\\\]$", re.DOTALL),
    re.compile(r"^\\(?:boxed|text|textbf|mathrm)\{(?P<inner>.*)\}$", re.DOTALL),
)
_EDGE_MARKUP = " \t\r\n*`"
_WRAPPER_STARTS = ("$", "\\")  # what every pattern of _WRAPPERS begins with
# A letter alone, optionally wrapped: "B", "(b)", "[B]", "B.", "B)", "{B}", "Option B".
_ALONE = re.compile(
    r"^(?:(?:option|choice)[ \t]+)?[(\[{]?[ \t]*(?P<letter>[A-Za-z])[ \t]*[)\]}]?\.?$",
    re.IGNORECASE,
)
# The commonest body, a bare letter, which `_ALONE` would match: found without a regex.
_BARE_LETTERS = {letter: letter.upper() for letter in string.ascii_letters}
# A capital letter marked as a label and followed by the option's text: "B. Paris", "(B) Paris".
# Capital only, and the mark is required, so "A dog" (the article) never reads as choice A.
_LABELLED = re.compile(r"^[(\[]?(?P<letter>[A-Z])[.:)\]][ \t]+\S")
# What, after such a label, names another option: "(C)", "[C]" or "C)" as a label, or a lone
# capital after a word that takes the first back ("A. No wait, it's C", "B: wrong, C is right").
# Either makes the reply ambiguous: no answer found, never the first letter silently.
_OTHER_LABEL = re.compile(r"(?<![A-Za-z])(?:[(\[](?P<boxed>[A-Z])[)\]]|(?P<closed>[A-Z])\))")
# A word that takes the first back, or a lone capital: read in one pass, each capital after
# such a word (and no capital between) counts. One pattern spanning from the word to its
# capital rescanned the rest of the line for every "no" with none after it: quadratic.
_TAKING_BACK = re.compile(
    r"(?P<word>(?i:\b(?:no|not|wait|wrong|incorrect|actually|instead|rather|correction)\b))"
    r"|(?<![\w'’])(?P<lone>[A-Z])(?![\w'’])"
)
# Wrappers peeled off one answer at most: real ones are a few deep ("**$\boxed{\text{B}}$**");
# each peel reads the whole text, so thousands nested cost quadratic time.
_MAX_UNWRAPS = 8
# What `_last_boxed` reads: a box's start, or a brace.
_BRACES = re.compile(r"\\boxed\{|[{}]")
_BRACE = re.compile("[{}]")
_DEPTH_STEP = {"{": 1, "}": -1}


def extract_final_answer(raw: str) -> str | None:
    """The final answer of a free-form (qa) reply.

    Takes the last `ANSWER:`-style line or `\\boxed{...}`, whichever comes later; without
    either, the whole reply. Markdown and LaTeX wrappers (`**`, backticks, `$...$`,
    `\\boxed{}`, `\\text{}`) are stripped.

    Args:
        raw: the model's reply.

    Returns:
        The answer text, or None when nothing is left after stripping.
    """
    candidate = _last_candidate(raw)
    answer = _unwrap(raw if candidate is None else candidate)
    return answer or None


def extract_choice(raw: str, n_choices: int) -> str | None:
    """The letter an mcq reply chose, or None when no valid choice can be found.

    The last `ANSWER: X`-style line or `\\boxed{X}` decides (also `Answer - X`,
    `**Answer:** (B)`, `ANSWER: B. Paris`); without one, a reply that is only a letter
    (optionally wrapped) counts. A lower-case letter counts only when it stands alone, and a
    capital followed by prose without a label mark ("A dog") never counts, so the article "a"
    is never read as choice A. Letters beyond the first `n_choices` are rejected.

    Args:
        raw: the model's reply.
        n_choices: how many options the question had.

    Returns:
        An upper-case letter within the first `n_choices`, or None.
    """
    if not raw.isascii():
        # Compatibility forms read as what they show: "ANSWER：Ｂ" (full-width, as models write
        # in East Asian text), a no-break space after the label, a bold 𝐁. The ideographic
        # full stop (NFKC keeps it) ends a sentence as "." does: "B。".
        raw = unicodedata.normalize("NFKC", raw).replace("。", ".")
    candidate = _last_candidate(raw)
    body = _unwrap(raw if candidate is None else candidate)
    letter = _BARE_LETTERS.get(body) or _letter_in(body, labelled=candidate is not None)
    return letter if letter is not None and letter in LABELS[:n_choices] else None


def _letter_in(body: str, labelled: bool) -> str | None:
    """The upper-cased letter of a body `_ALONE` matches, or `_LABELLED` after a label unless
    the text after it names another option."""
    alone = _ALONE.match(body)
    if alone is not None:
        return alone.group("letter").upper()
    match = _LABELLED.match(body) if labelled else None
    if match is None:
        return None
    letter, rest = match.group("letter"), body[match.end("letter") + 1 :]
    return None if _names_another(rest, letter) else letter


def _names_another(rest: str, letter: str) -> bool:
    """Whether the text after a labelled letter names another option, as a label or after a
    word that takes the first back."""
    for found in _OTHER_LABEL.finditer(rest):
        if next(group for group in found.groups() if group) != letter:
            return True
    taken_back = False
    for found in _TAKING_BACK.finditer(rest):
        if found.group("word"):
            taken_back = True
        elif taken_back:
            if found.group("lone") != letter:
                return True
            taken_back = False
    return False


def _last_candidate(raw: str) -> str | None:
    """The text of whichever comes last: an answer label line or a `\\boxed{}`."""
    label = _last_label_line(raw)
    boxed = _last_boxed(raw) if _BOXED in raw else None
    if boxed is not None and (label is None or boxed[0] > label[0]):
        return boxed[1]
    if label is None:
        return None
    _, body, end = label
    text = raw[body:end]
    if not text.strip(_EDGE_MARKUP):
        # "**Answer:**" alone on its line: the answer is on the next non-blank line.
        return _next_nonblank_line(raw, end)
    return text


def _last_label_line(raw: str) -> tuple[int, int, int] | None:
    """Where the last line that `_LABEL_LINE` matches starts, where its body starts, and where
    it ends (a match never leaves its line)."""
    if not raw.isascii():
        matches = list(_LABEL_LINE.finditer(raw))
        if not matches:
            return None
        return matches[-1].start(), matches[-1].start("body"), matches[-1].end()
    # In ASCII, a label line holds "answer" in some case, and lower() keeps every index: look
    # only at the lines that do, from the last one up, instead of trying every line start;
    # matched in lower case, which spares the regex its case folding.
    lowered, end = raw.lower(), len(raw)
    while (found := lowered.rfind("answer", 0, end)) != -1:
        end = raw.rfind("\n", 0, found) + 1
        match = _LOWER_LABEL_LINE.match(lowered, end)
        if match is not None:
            return end, match.start("body"), match.end()
    return None


def _next_nonblank_line(text: str, start: int) -> str:
    return next((line for line in text[start:].splitlines() if line.strip()), "")


def _last_boxed(raw: str) -> tuple[int, str] | None:
    """The position and content of the last `\\boxed{...}`, braces balanced.

    One pass over the braces: each closing one closes the latest still open. Trying each box
    from the last one back, to the end of the reply, was quadratic in unclosed boxes."""
    opened: list[tuple[int, bool]] = []  # each open brace: where, and whether a box's
    last: tuple[int, int] | None = None  # the latest-starting closed box: its start and end
    for found in _BRACES.finditer(raw):
        if found.group() != "}":
            opened.append((found.start(), found.group() == _BOXED))
        elif opened:
            start, boxed = opened.pop()
            if boxed and (last is None or start > last[0]):
                last = start, found.start()
    return None if last is None else (last[0], raw[last[0] + len(_BOXED) : last[1]])


def _unwrap(text: str) -> str:
    """Strip markdown and LaTeX wrappers until none is left (`_MAX_UNWRAPS` at most)."""
    for _ in range(_MAX_UNWRAPS):
        stripped = text.strip(_EDGE_MARKUP)
        if not stripped.startswith(_WRAPPER_STARTS):
            return stripped  # no wrapper can match, and stripping twice changes nothing
        for wrapper in _WRAPPERS:
            match = wrapper.match(stripped)
            # "\text{a} + \text{b}" also matches the pattern; only a balanced inside is one wrapper.
            if match and _is_balanced(match.group("inner")):
                stripped = match.group("inner")
                break
        if stripped == text:
            return text
        text = stripped
    return text.strip(_EDGE_MARKUP)


def _is_balanced(text: str) -> bool:
    # The depth after each brace, computed in C: a loop in Python over each character of a
    # long reply, once per wrapper peeled, took a second.
    depths = list(accumulate(map(_DEPTH_STEP.__getitem__, _BRACE.findall(text))))
    return not depths or (min(depths) >= 0 and depths[-1] == 0)
