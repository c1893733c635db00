"""normalize_text: SQuAD-style normalisation, checked by examples and properties."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchgen.evals.scorers.normalize import normalize_text, normalize_unicode

ascii_words = st.lists(st.text(string.ascii_letters + string.digits, min_size=1), max_size=8)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower.", "eiffel tower"),
        ("  an   apple,  a pear ", "apple pear"),
        ("Theory of the Mind", "theory of mind"),
        ("ＰＡＲＩＳ", "paris"),  # full-width letters fold by NFKC
        ("Straße", "strasse"),  # casefold, not lower
        ("well-known «quote»", "wellknown quote"),
        ("$5 + 3", "5 3"),
        ("", ""),
    ],
)
def test_examples(text: str, expected: str) -> None:
    assert normalize_text(text) == expected


@given(st.text())
def test_is_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once


@given(
    st.text(st.characters(categories=["Lu", "Ll", "Mn", "Nd", "Po", "Ps", "Pe", "Zs"]), max_size=30)
)
def test_is_idempotent_on_marks_and_punctuation(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once


@given(ascii_words)
def test_ignores_case(words: list[str]) -> None:
    text = " ".join(words)
    assert normalize_text(text.upper()) == normalize_text(text.lower())


@given(ascii_words, st.lists(st.sampled_from([" ", "\t", "\n", "  "]), min_size=8, max_size=8))
def test_ignores_whitespace(words: list[str], gaps: list[str]) -> None:
    spaced = "".join(word + gap for word, gap in zip(words, gaps, strict=False))
    assert normalize_text(" " + spaced) == normalize_text(" ".join(words))


@given(ascii_words, st.lists(st.sampled_from(string.punctuation), max_size=8))
def test_ignores_punctuation(words: list[str], marks: list[str]) -> None:
    punctuated = " ".join(w + m for w, m in zip(words, marks + [""] * len(words), strict=False))
    assert normalize_text(punctuated) == normalize_text(" ".join(words))


@given(ascii_words, st.lists(st.sampled_from(["a", "an", "the", "The", "A", "AN"]), max_size=8))
def test_ignores_articles(words: list[str], articles: list[str]) -> None:
    mixed = [token for pair in zip(articles, words, strict=False) for token in pair]
    mixed += words[len(articles) :]
    assert normalize_text(" ".join(mixed)) == normalize_text(" ".join(words))


@given(st.text(st.characters(max_codepoint=127)))
def test_ascii_shortcut_matches_the_general_path(text: str) -> None:
    assert normalize_text(text) == normalize_unicode(text)


@pytest.mark.parametrize("char", [chr(code) for code in range(128)])
def test_ascii_shortcut_matches_on_every_ascii_character(char: str) -> None:
    text = f"The {char}x{char} a{char}b an"
    assert normalize_text(text) == normalize_unicode(text)
