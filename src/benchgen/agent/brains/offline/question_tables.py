"""Questions pasted as data rather than written as `Q:`/`A:` lines: a JSON list of objects with
a prompt (or question) and an answer, or CSV or `|` table rows (Markdown's included) under a
header naming those columns."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from typing import Any

_PROMPT_KEYS = ("prompt", "question")
_TABLE_PROMPTS = (*_PROMPT_KEYS, "q")
_TABLE_ANSWERS = ("answer", "a")
_DELIMITERS = (",", "|")
# A Markdown table's line under its header: "|---|:---:|".
_RULE = re.compile(r"^[\s|:-]*-[\s|:-]*$")


@dataclass
class Table:
    """What was pasted: the words before it, its rows as (prompt, choices, answer), and the
    rows that could not be read, as people number them."""

    header: str
    rows: list[tuple[str, list[str], str]] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)


def read_table(text: str) -> Table | None:
    """The questions of a pasted JSON list or CSV table in `text`, or None when it holds none."""
    return _json_table(text) or _csv_table(text)


def _json_table(text: str) -> Table | None:
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end < start:
        return None
    try:
        items = json.loads(text[start : end + 1])
    except (ValueError, RecursionError):  # not JSON, or nested past what the parser follows
        return None
    if not isinstance(items, list) or not any(_prompt_of(item) for item in items):
        return None
    table = Table(text[:start])
    for number, item in enumerate(items, 1):
        prompt, answer = _prompt_of(item), _answer_of(item)
        if not prompt or not answer:
            table.unread.append(f"item {number} (it needs a prompt and an answer)")
            continue
        choices = item.get("choices") if isinstance(item.get("choices"), list) else []
        table.rows.append((prompt, [str(c) for c in choices], answer))
    return table


def _prompt_of(item: Any) -> str:
    if not isinstance(item, dict):
        return ""
    return next((str(item[k]).strip() for k in _PROMPT_KEYS if item.get(k)), "")


def _answer_of(item: dict[str, Any]) -> str:
    answer = item.get("answer")
    if isinstance(answer, list):
        # Accepted alternatives, written as a `Q:`/`A:` answer would give them.
        return " | ".join(str(a).strip() for a in answer if str(a).strip())
    return str(answer).strip() if answer is not None else ""


def _csv_table(text: str) -> Table | None:
    lines = text.splitlines()
    for delimiter in _DELIMITERS:
        for at, line in enumerate(lines):
            columns = _columns([c.strip().casefold() for c in _cells(line, delimiter)])
            if columns is not None:
                return _rows(lines, at, delimiter, columns)
    return None


def _columns(cells: list[str]) -> tuple[int, int] | None:
    """Where the prompt and the answer are in a header row, or None when it is no header."""
    prompt = next((cells.index(k) for k in _TABLE_PROMPTS if k in cells), None)
    answer = next((cells.index(k) for k in _TABLE_ANSWERS if k in cells), None)
    return None if prompt is None or answer is None else (prompt, answer)


def _rows(lines: list[str], at: int, delimiter: str, columns: tuple[int, int]) -> Table:
    table = Table("\n".join(lines[:at]))
    prompt_column, answer_column = columns
    for number, line in enumerate(lines[at + 1 :], at + 2):
        row = _cells(line, delimiter)
        if not any(cell.strip() for cell in row) or (delimiter == "|" and _RULE.match(line)):
            continue
        if max(prompt_column, answer_column) >= len(row):
            table.unread.append(f"line {number} ({line.strip()[:60]})")
            continue
        prompt, answer = row[prompt_column].strip(), row[answer_column].strip()
        if prompt and answer:
            table.rows.append((prompt, [], answer))
        else:
            table.unread.append(f"line {number} ({line.strip()[:60]})")
    return table


def _cells(line: str, delimiter: str) -> list[str]:
    return next(csv.reader([line], delimiter=delimiter), [])
