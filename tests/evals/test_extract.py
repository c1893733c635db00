"""Answer extraction: examples of the known traps, and properties of the mcq extractor."""

from __future__ import annotations

import re
import string
import time

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from benchgen.evals.scorers import extract
from benchgen.evals.scorers.extract import extract_choice, extract_final_answer


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ANSWER: B", "B"),
        ("ANSWER: **B**", "B"),
        ("**Answer:** (B)", "B"),
        ("**Answer**: [C]", "C"),
        ("Answer - D", "D"),
        ("Final answer: B.", "B"),
        ("The answer is \\boxed{C}", "C"),
        ("$\\boxed{C}$", "C"),
        ("ANSWER: B. Paris is the capital", "B"),
        ("ANSWER: (A) dogs", "A"),
        ("ANSWER: A", "A"),
        ("answer: b", "B"),
        ("answer: (b)", "B"),
        ("**Answer:**\n\nC", "C"),
        ("B", "B"),
        ("**B**", "B"),
        ("(d)", "D"),
        ("B.", "B"),
        ("ANSWER: A\nWait, let me check.\nANSWER: C", "C"),
        ("ANSWER: C\n\\boxed{B}", "B"),
        ("- Answer: `D`", "D"),
        ("ANSWER: C. Vitamin C", "C"),  # the option's own text may hold a capital
        ("ANSWER: B) World War I", "B"),
        ("ANSWER: A. Paris, not Lyon", "A"),
        ("ANSWER: (C) or (C)", "C"),
        # Compatibility forms read as what they show (they were no answer at all).
        ("ANSWER：Ｂ", "B"),
        ("ANSWER:\u00a0C", "C"),
        ("**Answer:** \U0001d401", "B"),
        ("ANSWER: B。", "B"),
        ("Ｄ", "D"),
    ],
)
def test_extract_choice_finds_the_letter(raw: str, expected: str) -> None:
    assert extract_choice(raw, 4) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "ANSWER: a dog",
        "ANSWER: A dog is the answer",
        "A dog is a mammal.",
        "ANSWER: E",
        "ANSWER: b is my guess",
        "I am not sure.",
        "",
        "ANSWER: B\nAnswer: it depends on the dog",
        "Answer-based reasoning gives nothing",
        "ANSWER:",
        # Two options named, or the first taken back: no answer, never the first silently.
        "ANSWER: (A) or (C)",
        "ANSWER: A. No wait, it's C",
        "ANSWER: A) is wrong; C) is right",
        "ANSWER: B: wrong, C is right",
        "ANSWER: [A] [B]",
    ],
)
def test_extract_choice_refuses_what_is_not_a_choice(raw: str) -> None:
    assert extract_choice(raw, 4) is None


def test_a_lone_lower_case_letter_counts() -> None:
    assert extract_choice("a", 4) == "A"
    assert extract_choice("ANSWER: a", 4) == "A"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ANSWER: Paris", "Paris"),
        ("Let me think.\nANSWER: **Paris**", "Paris"),
        ("ANSWER: 1\nANSWER: 2", "2"),
        ("The result is $\\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}"),
        ("ANSWER: $\\boxed{\\text{Mount Everest}}$", "Mount Everest"),
        ("ANSWER: `x = 3`", "x = 3"),
        ("ANSWER: $2$", "2"),
        ("ANSWER: $a$ and $b$", "$a$ and $b$"),
        ("ANSWER: \\text{a} + \\text{b}", "\\text{a} + \\text{b}"),
        ("  Just the words  ", "Just the words"),
        ("**Answer:**\n\n42", "42"),
    ],
)
def test_extract_final_answer(raw: str, expected: str) -> None:
    assert extract_final_answer(raw) == expected


@pytest.mark.parametrize("raw", ["", "   ", "****", "ANSWER: ``"])
def test_extract_final_answer_is_none_when_nothing_is_left(raw: str) -> None:
    assert extract_final_answer(raw) is None


prefixes = st.text(max_size=200).filter(
    lambda text: "answer" not in text.casefold() and "\\boxed{" not in text
)
n_choices = st.integers(min_value=2, max_value=26)


@given(prefixes, n_choices, st.data())
def test_last_bold_answer_line_is_extracted(prefix: str, n: int, data: st.DataObject) -> None:
    letter = data.draw(st.sampled_from(string.ascii_uppercase[:n]))
    assert extract_choice(f"{prefix}\nANSWER: **{letter}**", n) == letter


@given(prefixes, n_choices, st.data())
def test_last_answer_line_wins(prefix: str, n: int, data: st.DataObject) -> None:
    labels = string.ascii_uppercase[:n]
    first, last = data.draw(st.sampled_from(labels)), data.draw(st.sampled_from(labels))
    raw = f"ANSWER: {first}\n{prefix}\nANSWER: {last}"
    assert extract_choice(raw, n) == last


@given(prefixes, n_choices, st.data())
def test_letters_beyond_the_choices_are_refused(prefix: str, n: int, data: st.DataObject) -> None:
    assume(n < 26)
    letter = data.draw(st.sampled_from(string.ascii_uppercase[n:]))
    assert extract_choice(f"{prefix}\nANSWER: {letter}", n) is None


words = st.text(string.ascii_letters, min_size=1, max_size=10)


@given(
    st.sampled_from(["a", "A"]),
    st.lists(words, min_size=1, max_size=8),
    st.sampled_from(["", ".", "!", "?"]),
    st.sampled_from(["", "ANSWER: ", "Answer - ", "**Answer:** ", "\\boxed{"]),
)
def test_a_sentence_starting_with_the_article_never_yields_a(
    article: str, rest: list[str], end: str, label: str
) -> None:
    sentence = f"{label}{article} {' '.join(rest)}{end}"
    assert extract_choice(sentence, 4) != "A"


def _unwrap_without_shortcut(text: str) -> str:
    """`extract._unwrap` as it was before its shortcut: the definition the shortcut keeps."""
    while True:
        stripped = text.strip(extract._EDGE_MARKUP)
        for wrapper in extract._WRAPPERS:
            match = wrapper.match(stripped)
            if match and extract._is_balanced(match.group("inner")):
                stripped = match.group("inner")
                break
        if stripped == text:
            return text
        text = stripped


_MARKUP = st.text(st.sampled_from(["$", "\\", "{", "}", "(", ")", "[", "]", "*", "`", " ", "\n"]))
_PIECES = st.sampled_from(["\\boxed{", "\\text{", "\\(", "\\[", "$$", "x", "B", "**", " "])


@given(st.lists(st.one_of(_MARKUP, _PIECES), max_size=12))
def test_unwrap_shortcut_changes_nothing(parts: list[str]) -> None:
    text = "".join(parts)
    assert extract._unwrap(text) == _unwrap_without_shortcut(text)


_LINES = st.sampled_from(
    [
        *("answer", "ANSWER", "Answer", "final ", "the ", ": ", ":", "- ", "— ", "**", "> "),
        *("#", "x", "B", " ", "\t", "\n", "\r\n", "\\boxed{C}", "ſ", "é", "Answer-based"),
    ]
)


@given(st.lists(_LINES, max_size=16))
def test_the_last_label_line_is_the_last_match(parts: list[str]) -> None:
    raw = "".join(parts)
    matches = list(extract._LABEL_LINE.finditer(raw))
    expected = matches[-1] if matches else None
    assert extract._last_label_line(raw) == (
        expected and (expected.start(), expected.start("body"), expected.end())
    )


@pytest.mark.parametrize("letter", list(string.ascii_letters))
@pytest.mark.parametrize("labelled", [True, False])
def test_a_bare_letter_reads_as_the_regexes_read_it(letter: str, labelled: bool) -> None:
    assert extract._BARE_LETTERS[letter] == extract._letter_in(letter, labelled)


@pytest.mark.parametrize(
    "raw",
    [
        "\\boxed{" * 15_000,  # each box read to the reply's end, from the last one back
        "ANSWER: B. " + "no " * 35_000,  # each "no" read to the end for a capital after it
        "\\text{" * 17_000 + "}" * 17_000,  # a wrapper peeled per round, each read whole
        "ANSWER: " + "\\(" * 25_000 + "\\)" * 25_000,
    ],
)
def test_a_reply_built_to_be_slow_is_read_in_linear_time(raw: str) -> None:
    """At 100,000 characters each took minutes of a worker, scoring one answer."""
    started = time.perf_counter()
    extract_choice(raw, 4)
    extract_final_answer(raw)
    assert time.perf_counter() - started < 2


def _last_boxed_one_by_one(raw: str) -> tuple[int, str] | None:
    """`_last_boxed` as defined: each box from the last one back, braces counted after it."""
    start = raw.rfind("\\boxed{")
    while start != -1:
        depth, pos = 1, start + len("\\boxed{")
        while pos < len(raw) and depth:
            depth += {"{": 1, "}": -1}.get(raw[pos], 0)
            pos += 1
        if depth == 0:
            return start, raw[start + len("\\boxed{") : pos - 1]
        start = raw.rfind("\\boxed{", 0, start)
    return None


@given(st.lists(st.sampled_from(["\\boxed{", "{", "}", "x", "B"]), max_size=16))
def test_the_last_box_is_the_last_that_closes(parts: list[str]) -> None:
    raw = "".join(parts)
    assert extract._last_boxed(raw) == _last_boxed_one_by_one(raw)


_TAKEN_BACK = re.compile(
    r"(?i:\b(?:no|not|wait|wrong|incorrect|actually|instead|rather|correction)\b)"
    r".*?(?<![\w'’])(?P<lone>[A-Z])(?![\w'’])",
    re.DOTALL,
)


@given(st.lists(st.sampled_from(["no", "Wait", "not", " ", ",", "\n", "A", "C", "x", "'"])))
def test_a_capital_after_a_word_taking_it_back_is_found_in_one_pass(parts: list[str]) -> None:
    """As the one pattern spanning from the word to its capital read it (no labels here)."""
    rest = "".join(parts)
    named = any(found.group("lone") != "A" for found in _TAKEN_BACK.finditer(rest))
    assert extract._names_another(rest, "A") == named
