"""Typed confirmations (delete it by typing its name), compared as the page shows the name."""

from __future__ import annotations


def confirmed(typed: str, expected: str) -> bool:
    """Whether `typed` is `expected` as a page shows it. A browser renders a run of spaces as
    one, so a name with two in a row could be neither typed nor copied from the page exactly,
    and the thing could not be deleted; static/app.js compares the same way."""
    return typed.split() == expected.split()
