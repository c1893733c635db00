"""CSV cells a spreadsheet could take for a formula, beyond the usual first characters."""

from __future__ import annotations

import csv
import io

import pytest

from benchgen.services.runs import exports


@pytest.mark.parametrize("value", ['\0=HYPERLINK("http://evil.example")', "\0", "\0-2"])
def test_a_cell_starting_with_nul_is_text(value: str) -> None:
    """OWASP ASVS 5.0 (1.2.10) names NUL with = + - @ and tab: a reader that drops it would
    find the formula behind it."""
    cell = exports.spreadsheet_safe(value)
    assert cell == "'" + value
    buffer = io.StringIO()
    csv.writer(buffer, quoting=exports.QUOTING).writerow([cell])
    assert next(csv.reader(io.StringIO(buffer.getvalue()))) == ["'" + value]
