"""A problem the API reports is placed as the same problem found on this machine would be."""

from benchgen.cli.doors import place


def test_the_requests_part_is_not_shown() -> None:
    assert place({"loc": ["body", "file", 1, "answer"]}) == "line 1, answer"
    assert place({"loc": ["file", 1, "answer"]}) == "line 1, answer"
    assert place({"loc": ["query", "cursor"]}) == "cursor"
    assert place({"loc": ["body"]}) == "body"  # the whole body: nothing else to name
