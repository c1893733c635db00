"""Two editors saving the same benchmark at the same moment, each sending the entity tag of
what they read: the tag was not checked at all, and the second save silently replaced the first.
Checked under the benchmark's lock, one save is made and the other is refused, saying what
changed; the title, description and questions of the one made are all kept."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.services.benchmarks import edit_tags, lifecycle
from benchgen.services.benchmarks.edit_tags import Stale
from tests.support import QA, World, at_once

pytestmark = pytest.mark.both_backends  # PostgreSQL lets both transactions read at once


def test_two_saves_from_one_read_at_once_make_one_and_refuse_the_other(world: World) -> None:
    ana = Principal.web(world.user("ana@example.com"))
    bm = world.benchmark(ana.user_id or "", QA)
    read = world.do(ana, lifecycle.get_benchmark, bm)
    tag = edit_tags.tag_of(read.version, read.title, read.description)
    renamed = {"title": "Capitals of Europe"}
    replaced = {"questions": [{"prompt": "Capital of Peru?", "answer": "Lima"}]}
    outcomes = at_once(
        [
            lambda: world.do(ana, lifecycle.edit_benchmark, bm, renamed, tag),
            lambda: world.do(ana, lifecycle.edit_benchmark, bm, replaced, tag),
        ]
    )
    refused = [o for o in outcomes if isinstance(o, Stale)]
    assert len(refused) == 1, outcomes
    now = world.do(ana, lifecycle.get_benchmark, bm)
    prompts = [q["prompt"] for q in world.do(ana, lifecycle.list_questions, bm)]
    if refused[0].details["changed"] == ["title"]:  # the rename was made first
        assert (now.title, now.version, len(prompts)) == ("Capitals of Europe", 1, 2)
    else:
        assert refused[0].details["changed"] == ["questions"]
        assert (now.title, now.version, prompts) == ("Capitals", 2, ["Capital of Peru?"])
    assert refused[0].http_status == 412
    assert refused[0].details["etag"] == edit_tags.tag_of(now.version, now.title, "")


def test_a_tag_read_before_a_run_froze_the_questions_still_renames(world: World) -> None:
    """The tag names what a change may set: a run freezing the questions changes none of it."""
    ana = Principal.web(world.user("ana@example.com"))
    bm = world.benchmark(ana.user_id or "", QA)
    read = world.do(ana, lifecycle.get_benchmark, bm)
    tag = edit_tags.tag_of(read.version, read.title, read.description)
    world.do(ana, lifecycle.freeze_questions, bm)
    edited, _ = world.do(ana, lifecycle.edit_benchmark, bm, {"title": "Renamed"}, tag)
    assert edited.title == "Renamed"
