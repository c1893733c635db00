"""Typing slips in the words requests are read by ("shwo Capitals", "pubish it", "list my
benchmraks"): one letter wrong, missing, extra, or two swapped. Only the first word is read as
a verb, and only lower-case words as the planner's nouns elsewhere, so titles and ids are left
as typed."""

from __future__ import annotations

MIN_VERB = 4
MIN_NOUN = 5
# "run" and other short words are left alone: one letter from them is another word ("ran").
_VERBS = (
    *("show", "list", "publish", "create", "rename", "compare", "explain", "describe"),
    *("evaluate", "remove", "train", "fine-tune"),
)
_NOUNS = (
    *("benchmarks", "benchmark", "models", "model", "questions", "question", "datasets"),
    "dataset",
)


def corrected(plain: str) -> str:
    """`plain` with its verb and nouns spelled as the planner reads them."""
    words = plain.split(" ")
    if words and len(words[0]) >= MIN_VERB:
        words[0] = _nearest(words[0], _VERBS)
    return " ".join([words[0], *(_nearest(w, _NOUNS) if _noun_like(w) else w for w in words[1:])])


def _noun_like(word: str) -> bool:
    # A capitalised word may be a title's ("show Modles"): only lower-case words are nouns here.
    return len(word) >= MIN_NOUN and word.islower()


def _nearest(word: str, known: tuple[str, ...]) -> str:
    core = word.rstrip("?!.,:;")
    lowered = core.casefold()
    if lowered in known:
        return word
    close = [k for k in known if _one_slip(lowered, k)]
    return close[0] + word[len(core) :] if len(close) == 1 else word


def _one_slip(typed: str, word: str) -> bool:
    """Whether one letter changed, added, dropped, or two side by side swapped, make `word`."""
    if typed == word or abs(len(typed) - len(word)) > 1:
        return False
    if len(typed) == len(word):
        wrong = [i for i, (a, b) in enumerate(zip(typed, word, strict=True)) if a != b]
        swapped = len(wrong) == 2 and wrong[1] == wrong[0] + 1
        return len(wrong) == 1 or (
            swapped and typed[wrong[0]] == word[wrong[1]] and typed[wrong[1]] == word[wrong[0]]
        )
    shorter, longer = sorted((typed, word), key=len)
    return any(longer[:i] + longer[i + 1 :] == shorter for i in range(len(longer)))
