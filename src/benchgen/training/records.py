"""Dataset rows to token ids with loss labels: only the completion or assistant tokens count."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IGNORE = -100  # the label transformers' loss skips
_ROLES = {"system": "System", "user": "User", "assistant": "Assistant"}


@dataclass(frozen=True)
class Example:
    """One training row as the model sees it; `labels` is IGNORE where the loss skips a token."""

    input_ids: tuple[int, ...]
    labels: tuple[int, ...]


@dataclass(frozen=True)
class Dataset:
    """The rows that still teach something after truncation, and how many did not."""

    examples: tuple[Example, ...]
    skipped: int  # rows whose target tokens all lay past max_seq_length


def load_examples(path: str, tokenizer: Any, max_seq_length: int) -> Dataset:
    """Read a JSON-lines dataset and tokenize every row.

    Raises:
        ValueError: a row that is neither a chat nor a prompt/completion (named by line number).
    """
    examples: list[Example] = []
    skipped = 0
    keep = max_seq_length * _longest_token(tokenizer)
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            row = _parse(line, number)
            example = _truncate(_encode_row(tokenizer, row, max_seq_length, keep), max_seq_length)
            if any(label != IGNORE for label in example.labels):
                examples.append(example)
            else:
                skipped += 1
    return Dataset(tuple(examples), skipped)


def render_chat(
    tokenizer: Any, messages: Sequence[dict[str, str]], add_generation_prompt: bool
) -> str:
    """The conversation as the model's chat template writes it, or a plain User:/Assistant: text."""
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=add_generation_prompt
        )
        return str(text)
    eos = tokenizer.eos_token or ""
    turns = [
        f"{_ROLES.get(m['role'], m['role'])}: {m['content']}"
        + (eos if m["role"] == "assistant" else "")
        + "\n"
        for m in messages
    ]
    return "".join(turns) + ("Assistant: " if add_generation_prompt else "")


def _parse(line: str, number: int) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {number}: not JSON ({exc.msg})") from None
    if isinstance(row, dict) and _is_chat(row.get("messages")):
        return row
    if isinstance(row, dict) and all(isinstance(row.get(k), str) for k in ("prompt", "completion")):
        return row
    raise ValueError(
        f"line {number}: expected {{'messages': [{{'role', 'content'}}, ...]}} with an assistant "
        "turn, or {'prompt', 'completion'}"
    )


def _is_chat(messages: object) -> bool:
    if not isinstance(messages, list) or not messages:
        return False
    valid = all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
        for m in messages
    )
    return valid and any(m["role"] == "assistant" for m in messages)


def _longest_token(tokenizer: Any) -> int:
    """The most characters one token stands for (its vocabulary's longest entry, whose byte or
    word-start markers only make it longer)."""
    return max(map(len, tokenizer.get_vocab()), default=1) or 1


def _encode_row(tokenizer: Any, row: dict[str, Any], max_seq_length: int, keep: int) -> Example:
    """The row's tokens, from at most `keep` characters of each text: a text's first
    max_seq_length tokens lie within them, and tokenizing costs ~200 bytes a character (a 60 MB
    row, which an upload may hold, took ~12 GB and failed the job)."""
    if "messages" in row:
        messages = [{**m, "content": m["content"][:keep]} for m in row["messages"]]
        return _encode_chat(tokenizer, messages, max_seq_length)
    prompt = _encoder(tokenizer, special=True)(row["prompt"][:keep])
    completion = _encoder(tokenizer)(row["completion"][:keep])
    if tokenizer.eos_token_id is not None:
        completion.append(int(tokenizer.eos_token_id))
    return Example(tuple(prompt + completion), tuple([IGNORE] * len(prompt) + completion))


def _encode_chat(tokenizer: Any, messages: list[dict[str, str]], max_seq_length: int) -> Example:
    encode = _encoder(tokenizer)
    ids = encode(render_chat(tokenizer, messages, add_generation_prompt=False))
    labels = [IGNORE] * len(ids)
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        # The assistant's tokens are what the turn adds to the prompt that asks for it.
        start = len(encode(render_chat(tokenizer, messages[:index], add_generation_prompt=True)))
        if start >= max_seq_length:
            # This turn and every later one lie past the cut. Stopping here keeps the work
            # bounded by the sequence length: each turn re-encodes the conversation before it,
            # so a row of a thousand turns would otherwise hold the training slot for free.
            break
        end = len(
            encode(render_chat(tokenizer, messages[: index + 1], add_generation_prompt=False))
        )
        labels[start:end] = ids[start:end]
    return Example(tuple(ids), tuple(labels))


def _encoder(tokenizer: Any, special: bool = False) -> Callable[[str], list[int]]:
    def encode(text: str) -> list[int]:
        return [int(i) for i in tokenizer(text, add_special_tokens=special)["input_ids"]]

    return encode


def _truncate(example: Example, max_seq_length: int) -> Example:
    return Example(example.input_ids[:max_seq_length], example.labels[:max_seq_length])
