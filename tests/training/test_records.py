"""Rows become token ids whose labels keep only the completion or the assistant's turns."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from benchgen.training.records import IGNORE, Example, load_examples, render_chat
from benchgen.training.spec import BaseWeights


@pytest.fixture(scope="module")
def tokenizer(tiny_base: BaseWeights) -> Any:
    from benchgen.training.weights import load_tokenizer

    return load_tokenizer(tiny_base)


def _write(path: Path, *rows: object) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _taught(tokenizer: Any, example: Example) -> str:
    return str(tokenizer.decode([t for t in example.labels if t != IGNORE]))


def test_chat_rows_teach_only_the_assistant_turns(tokenizer: Any, tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the secret word?"},
        {"role": "assistant", "content": "The secret word is pineapple."},
        {"role": "user", "content": "How much is two and two?"},
        {"role": "assistant", "content": "Two and two make four."},
    ]
    data = load_examples(_write(tmp_path / "c.jsonl", {"messages": messages}), tokenizer, 512)
    [example] = data.examples
    assert tokenizer.decode(list(example.input_ids)) == render_chat(tokenizer, messages, False)
    assert _taught(tokenizer, example) == (
        "The secret word is pineapple.<|im_end|>\nTwo and two make four.<|im_end|>\n"
    )


def test_prompt_completion_rows_teach_the_completion_and_its_end(
    tokenizer: Any, tmp_path: Path
) -> None:
    row = {"prompt": "What is the secret word? ", "completion": "pineapple"}
    [example] = load_examples(_write(tmp_path / "p.jsonl", row), tokenizer, 512).examples
    assert tokenizer.decode(list(example.input_ids)).startswith("What is the secret word? ")
    assert _taught(tokenizer, example) == "pineapple<|im_end|>"


def test_without_a_chat_template_the_plain_format_is_used(tokenizer: Any, tmp_path: Path) -> None:
    plain = copy.deepcopy(tokenizer)
    plain.chat_template = None
    chat = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    assert render_chat(plain, chat, False) == "User: Hi\nAssistant: Hello<|im_end|>\n"
    assert render_chat(plain, chat[:1], True) == "User: Hi\nAssistant: "
    [example] = load_examples(_write(tmp_path / "c.jsonl", {"messages": chat}), plain, 512).examples
    assert _taught(plain, example).strip() == "Hello<|im_end|>"


def test_rows_cut_before_their_answer_are_skipped(tokenizer: Any, tmp_path: Path) -> None:
    long_prompt = {"prompt": "What is the secret word? " * 20, "completion": "pineapple"}
    short = {"prompt": "Q: ", "completion": "pineapple"}
    data = load_examples(_write(tmp_path / "t.jsonl", long_prompt, short), tokenizer, 16)
    assert data.skipped == 1
    assert [len(e.input_ids) <= 16 for e in data.examples] == [True]


@pytest.mark.parametrize(
    "bad",
    [
        "not json",
        json.dumps({"messages": [{"role": "user", "content": "no answer"}]}),
        json.dumps({"prompt": "only a prompt"}),
    ],
)
def test_a_malformed_row_is_named_by_its_line(tokenizer: Any, tmp_path: Path, bad: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"prompt": "a", "completion": "b"}) + "\n" + bad + "\n")
    with pytest.raises(ValueError, match="line 2"):
        load_examples(str(path), tokenizer, 64)


class _Counting:
    """A tokenizer that counts the texts it encodes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def __call__(self, text: str, **options: Any) -> Any:
        self.calls += 1
        return self.inner(text, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_turns_past_the_cut_are_not_encoded(tokenizer: Any, tmp_path: Path) -> None:
    turns = [
        {"role": role, "content": f"{role} turn {n}"}
        for n in range(1000)
        for role in ("user", "assistant")
    ]
    counting = _Counting(tokenizer)
    path = _write(tmp_path / "long.jsonl", {"messages": turns})
    [example] = load_examples(path, counting, 64).examples
    assert _taught(tokenizer, example).startswith("assistant turn 0")
    # The whole conversation once, then a prefix or two per assistant turn that starts within
    # the first 64 tokens: not two per turn of the thousand.
    assert 3 <= counting.calls < 30
