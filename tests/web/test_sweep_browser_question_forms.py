"""The question editor's forms as a hostile client sends them: a version that is no number."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.services.accounts import users
from benchgen.services.benchmarks import lifecycle
from tests.support import OPERATOR, World
from tests.web.support import WebUser

ONE = {"title": "One", "format": "qa", "questions": [{"prompt": "Question 1?", "answer": "1"}]}


@pytest.mark.parametrize("version", ["²", "9" * 5000, "abc"])
def test_a_version_that_is_no_number_is_a_conflict_never_a_crash_or_unchecked(
    signed_in: WebUser, world: World, version: str
) -> None:
    """ "²" passes `isdigit` and fails `int`, and so do 5000 digits: the page answered 500. A
    word skipped the check, so a stale or forged form wrote over whatever was there."""
    ana = world.do(OPERATOR, users.get_user_by_email, "ana@example.com").id
    bm = world.benchmark(ana, ONE)
    edit = {"version": version, "q0-prompt": "Edited?", "q0-answer": "2"}
    for path in (f"/benchmarks/{bm}/questions/new", f"/benchmarks/{bm}/questions/1"):
        refused = signed_in.post(path, edit)
        assert refused.status_code == 409, (path, refused.text[:300])
        assert "changed since this page was opened" in refused.text
        assert "Edited?" in refused.text  # what was typed is still in the form
    removed = signed_in.post(f"/benchmarks/{bm}/questions/1/delete", {"version": version})
    assert removed.status_code == 303
    listed = world.do(Principal.web(ana), lifecycle.list_questions, bm)
    assert [question["prompt"] for question in listed] == ["Question 1?"]


def test_leaving_a_question_goes_back_to_the_page_it_is_on(
    signed_in: WebUser, world: World
) -> None:
    """Cancel on question 30's editor led to page 1 of the list, where Save and Keep it lead
    to page 2, the one the person came from."""
    ana = world.do(OPERATOR, users.get_user_by_email, "ana@example.com").id
    thirty = [{"prompt": f"Question {n}?", "answer": str(n)} for n in range(1, 31)]
    bm = world.benchmark(ana, {"title": "Thirty", "format": "qa", "questions": thirty})
    listing = f"/benchmarks/{bm}/questions"
    for tail, label in (("30", "Cancel"), ("30/delete", "Keep it"), ("1", "Cancel")):
        link = signed_in.page(f"{listing}/{tail}").find("a", string=label)
        expected = "?page=1" if tail == "1" else "?page=2"
        assert link is not None and link["href"] == f"{listing}{expected}", (tail, link)
