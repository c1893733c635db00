"""Previews show every character that prints as nothing by its code, wherever it came from (A7)."""

from __future__ import annotations

from benchgen.services.chat import previews

HIDDEN = "\u202e\u200b\u2028"
SHOWN = "\\u202e\\u200b\\u2028"


def test_metadata_file_names_and_solution_errors_show_hidden_characters_by_their_code() -> None:
    """A question's metadata, a changed binary file's name and a solution's error are the model's
    or a program's words: U+202E, a zero-width space or a line separator in them disguised the
    preview the user approves (a fake line, a reversed name)."""
    question = {"prompt": "Two plus two?", "answer": ["4"], "metadata": {"note": f"x{HIDDEN}"}}
    lines = previews.question_lines(1, question)
    assert f'   Metadata: {{"note": "x{SHOWN}"}}' in lines
    bundle = {
        "title": "Quiz",
        "benchmark_id": "bm_1",
        "base_version": 1,
        "sha256": "0" * 64,
        "binary_changes": [f"data{HIDDEN}.bin"],
        "solutions": [{"index": 0, "ok": False, "error": f"bad{HIDDEN}", "scores": {}}],
        "diff": "",
    }
    text = previews.bundle_text(bundle)
    assert f"too long to diff): data{SHOWN}.bin" in text
    assert f"Solution 0 FAILS: bad{SHOWN} {{}}" in text
    assert all(char.isprintable() or char in "\n\t" for char in "\n".join([*lines, text]))
