"""Leaderboard downloads as CSV or JSON, and the CSV rules every export shares: text a
spreadsheet would run as a formula is written as plain text, and every text cell is quoted."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any, Final

from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.services.runs import leaderboards

FORMATS = ("csv", "json")
MEDIA = {"csv": "text/csv", "json": "application/json"}
# Spreadsheets run a cell starting with these as a formula (CSV injection): a model's name or a
# column title chosen by someone else could make the reader's spreadsheet fetch or compute. NUL
# too (OWASP ASVS 5.0, 1.2.10): a reader that drops it finds the formula behind it.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\0")
# A plain number ("-2", "-0.5", "+1e3") is no formula: a model's answer -2 must stay a number.
_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
# Every text cell in quotes: a spreadsheet that splits at ";" or tabs besides "," (LibreOffice's
# import, with several separators ticked) keeps a quoted cell whole, where "x;=cmd|..." unquoted
# gives a cell of its own starting with "=". Numbers stay unquoted, so they stay numbers.
QUOTING: Final = csv.QUOTE_NONNUMERIC


def spreadsheet_safe(value: Any) -> Any:
    """`value` for a CSV cell: lists and objects as JSON, text that a spreadsheet would take for
    a formula prefixed with `'` (shown as text, not run); numbers, and text that is only a
    number, unchanged."""
    if isinstance(value, list | dict):
        # Readable text, as every other cell: escaped, ["東京"] would read ["\u6771\u4eac"].
        value = json.dumps(value, ensure_ascii=False)
    if (
        isinstance(value, str)
        and value.startswith(_FORMULA_STARTS)
        and not _NUMBER.fullmatch(value)
    ):
        return "'" + value
    return value


def export_leaderboard(
    ctx: Context, benchmark_id: str, fmt: str, phase_id: str | None = None
) -> tuple[str, str]:
    """A phase's ranked leaderboard (the first phase by default) as (media type, text), with
    what the leaderboard page shows and nothing more.

    Raises:
        NotFound: the benchmark or phase is not visible.
        InvalidInput: a format other than csv or json.
    """
    if fmt not in FORMATS:
        raise invalid(["format"], f"choose one of {', '.join(FORMATS)}")
    board = leaderboards.get_leaderboard(ctx, benchmark_id, phase_id)
    rows = [
        {
            "rank": row.rank,
            "run_id": row.run_id,
            "model": row.model_name,
            "submitted_by": row.submitted_by,
            "scores": {column: row.scores.get(column) for column in board.columns},
            "score_edited": row.score_edited,
            "finished_at": row.finished_at.isoformat() if row.finished_at else None,
        }
        for row in board.rows
    ]
    if fmt == "json":
        columns = [
            {"key": key, "title": board.titles.get(key, key), "sorting": board.sorting.get(key)}
            for key in board.columns
        ]
        document = {
            "benchmark_id": board.benchmark_id,
            "phase_id": board.phase_id,
            "columns": columns,
            "rows": rows,
        }
        return MEDIA[fmt], json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return MEDIA[fmt], _csv(board, rows)


def _csv(board: leaderboards.Leaderboard, rows: list[dict[str, Any]]) -> str:
    titles = [board.titles.get(key, key) for key in board.columns]
    header = ["rank", "model", "submitted_by", *titles, "score_edited", "finished_at", "run_id"]
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=QUOTING)
    writer.writerow([spreadsheet_safe(cell) for cell in header])
    for row in rows:
        scores = [row["scores"][key] for key in board.columns]
        cells = [row["rank"], row["model"], row["submitted_by"], *scores]
        cells += [row["score_edited"], row["finished_at"], row["run_id"]]
        writer.writerow([spreadsheet_safe(cell) for cell in cells])
    return buffer.getvalue()
