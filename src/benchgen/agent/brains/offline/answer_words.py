"""The wordings of a request to change one question's answer ("change the answer of question 3
to Paris", "set question 2's answer to 42", "the answer to question 5 should be Rome") or to be
told it ("what is the answer to question 1 of Capitals?"), and the button that asks a change
again naming the benchmark."""

from __future__ import annotations

import re

from benchgen.agent.brains.offline.forms import Form, ordinal, unquoted

_ORDINALS = r"first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last"
_WHICH = (
    r"(?:(?:question|q|item)\s*(?:number\s+|no\.?\s*)?#?\s*(?P<n>\d{1,6})"
    r"|(?:the\s+)?(?P<ord>" + _ORDINALS + r"|\d{1,6}(?:st|nd|rd|th))\s+question)"
)
_OF = r"(?:\s+(?:of|in|on|from)\s+(?P<bm>.+?))?"
_KEY = r"(?:the\s+)?(?:correct\s+|right\s+|expected\s+)?answer(?:\s+key)?"
_NEW = r"\s*:?\s+(?P<new>.+?)\s*[.!]*\s*$"
_SET = r"(?:change|set|update|edit|fix|correct|make|modify|replace)"
_PATTERNS = [
    # "change the answer of question 3 (of Capitals) to Paris"
    re.compile(
        rf"^{_SET}\s+{_KEY}\s+(?:of|to|for|on|in)\s+{_WHICH}{_OF}\s+(?:to|into|as|with|=)" + _NEW,
        re.I,
    ),
    # "set question 2's answer (in Capitals) to 42"
    re.compile(rf"^{_SET}\s+{_WHICH}'s\s+{_KEY}{_OF}\s+(?:to|as|=)" + _NEW, re.I),
    # "the answer to question 5 (of Capitals) should be Rome", "question 5's answer is Rome"
    *(
        re.compile(rf"^{subject}{_OF}\s+(?:should\s+be|must\s+be|is|=|:)" + _NEW, re.I)
        for subject in (rf"{_KEY}\s+(?:to|of|for)\s+{_WHICH}", rf"{_WHICH}'s\s+{_KEY}")
    ),
]


# "what is the answer to question 1 (of Capitals)?": a question about the key, not a change.
_ASKED = re.compile(
    r"^(?:what(?:'s|\s+is|\s+was)|tell\s+me|show(?:\s+me)?|give\s+me)\s+"
    rf"{_KEY}\s+(?:to|of|for|on)\s+{_WHICH}{_OF}[\s?.!]*$",
    re.I,
)


def read_answer_question(plain: str) -> Form | None:
    """A question about one question's answer, as `Form("answer_of", …)`: the words naming the
    benchmark ("" when none do) and the question's number (-1 for the last)."""
    found = _ASKED.match(plain)
    if found is None:
        return None
    return Form("answer_of", phrase=found["bm"] or "", numbers=(_number(found),))


def read_answer_edit(plain: str) -> Form | None:
    """A request to change one question's answer, as `Form("set_answer", …)`: the words naming
    the benchmark ("" when none do), the question's number (-1 for the last) and the answer."""
    for pattern in _PATTERNS:
        found = pattern.match(plain)
        if found:
            new = unquoted(found["new"])
            return Form("set_answer", phrase=found["bm"] or "", new=new, numbers=(_number(found),))
    return None


def _number(found: re.Match[str]) -> int:
    said = found["n"] or re.sub(r"(?<=\d)(?:st|nd|rd|th)$", "", found["ord"].casefold())
    return ordinal(said)


def answer_label(number: int, benchmark: str, new: str) -> str:
    """A button that asks the change again with the benchmark named (read back as a request)."""
    which = "the last question" if number == -1 else f"question {number}"
    return f'Change the answer of {which} of {benchmark} to "{new}"'
