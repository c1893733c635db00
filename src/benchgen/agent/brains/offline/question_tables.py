"""Questions pasted as data rather than written as `Q:`/`A:` lines: a JSON list of objects with
a prompt (or question) and an answer, or CSV rows under a header naming those columns."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from typing import Any

_PROMPT_KEYS = ("prompt", "question")


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
    for at, line in enumerate(lines):
        cells = [c.strip().casefold() for c in next(csv.reader([line]), [])]
        prompt_column = next((cells.index(k) for k in _PROMPT_KEYS if k in cells), None)
        if prompt_column is None or "answer" not in cells:
            continue
        table = Table("\n".join(lines[:at]))
        answer_column = cells.index("answer")
        for number, row in enumerate(csv.reader(lines[at + 1 :]), at + 2):
            if not any(cell.strip() for cell in row):
                continue
            if max(prompt_column, answer_column) >= len(row):
                table.unread.append(f"line {number} ({','.join(row)[:60]})")
                continue
            prompt, answer = row[prompt_column].strip(), row[answer_column].strip()
            if prompt and answer:
                table.rows.append((prompt, [], answer))
            else:
                table.unread.append(f"line {number} ({','.join(row)[:60]})")
        return table
    return None
