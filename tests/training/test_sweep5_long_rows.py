"""A row far longer than max_seq_length is tokenized only as far as training can use it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchgen.training.records import IGNORE, load_examples
from benchgen.training.spec import BaseWeights

_LONG = "The secret word is pineapple. " * 40_000  # 1.2 million characters


class _CountingTokenizer:
    """One token per character (of at most 4: its vocabulary's longest entry), remembering the
    longest text it was given."""

    chat_template = None
    eos_token = "</s>"
    eos_token_id = 0

    def __init__(self) -> None:
        self.longest = 0

    def get_vocab(self) -> dict[str, int]:
        return {"</s>": 0, "a": 97}

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, Any]:
        self.longest = max(self.longest, len(text))
        return {"input_ids": [ord(ch) for ch in text]}


def _write(path: Path, *rows: dict[str, Any]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def test_only_the_head_of_a_huge_row_is_tokenized(tmp_path: Path) -> None:
    """Before, every character was tokenized whatever max_seq_length kept: a 60 MB row took
    about 12 GB in the training process, past its memory limit, and the job failed."""
    rows = _write(
        tmp_path / "rows.jsonl",
        {"prompt": "Q", "completion": _LONG},
        {"messages": [{"role": "user", "content": _LONG}, {"role": "assistant", "content": "A"}]},
    )
    tokenizer = _CountingTokenizer()
    data = load_examples(rows, tokenizer, max_seq_length=16)
    # The chat template adds a few characters around each message's cut content.
    assert tokenizer.longest < 16 * 4 + 100
    assert len(data.examples) == 1 and data.skipped == 1  # the chat row's answer lies past 16
    assert len(data.examples[0].input_ids) == 16


def test_a_long_row_keeps_the_tokens_it_kept_before(tiny_base: BaseWeights, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_base.path)
    head = "How much is two and two?"
    rows = _write(tmp_path / "rows.jsonl", {"prompt": head, "completion": _LONG[:200_000]})
    (example,) = load_examples(rows, tokenizer, max_seq_length=64).examples
    whole = tokenizer(head)["input_ids"] + tokenizer(_LONG[:200_000])["input_ids"]
    assert list(example.input_ids) == whole[:64]
    assert example.labels.count(IGNORE) == len(tokenizer(head)["input_ids"])
