"""A16–A17 with a scripted brain: the agent copies a custom benchmark's bundle to scratch, fixes
its scorer there, proves the fix by rescoring locally, and proposes it as a diff — nothing on
the platform changes until the user approves, and approval uploads exactly what was shown."""

from __future__ import annotations

import pytest
import yaml

from benchgen.agent.scratch_tools import PAGE_CHARS
from benchgen.core.context import Principal
from benchgen.core.errors import InvalidInput, NotFound, PermissionDenied
from benchgen.services.benchmarks import bundles, lifecycle
from benchgen.services.chat import scratch
from benchgen.services.chat.scratch import MAX_DIFF_LINES
from benchgen.services.runs import launch, submissions
from tests.agent.scratch_pages import read_in_pages
from tests.agent.scripted import Script, new_conversation, say
from tests.bundle_factory import SCORER, bundle, competition, require_sandbox, results
from tests.services.test_runs import work_all
from tests.support import World

# Compares case-sensitively: "Paris" is marked wrong against "paris".
BUGGY = SCORER.replace(".strip().lower() == v.lower()", ".strip() == v")
FIXED_PATH = "scoring_program/score.py"


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


def _setup(world: World, ana: str) -> tuple[str, str]:
    assert BUGGY != SCORER
    web = Principal.web(ana)
    bm = world.do(web, bundles.upload_bundle, bundle(scorer=BUGGY), "b.zip").benchmark.id
    run = world.do(web, submissions.submit, bm, results({"q1": "Paris", "q2": "4"}), "r.zip")
    work_all(world.rt)
    assert world.do(web, launch.get_run, run.id).scores["accuracy"] == 0.5
    return bm, run.id


def test_a_file_larger_than_one_result_is_read_a_page_at_a_time(
    world: World, ana: str, api: Principal
) -> None:
    """A 90,000-character file was refused whole ("ask for a smaller page") by a tool that
    took no page: it could never be read. Past 100,000 characters it was cut, and its last
    page and total said it ended there: written back, it would have lost the rest."""
    big = "".join(f"# line {n:05d} of a long scorer\n" for n in range(4000))
    pages, _ = read_in_pages(world, ana, api, big.encode())
    assert len(pages) == -(-len(big) // PAGE_CHARS) and "".join(p["text"] for p in pages) == big
    assert pages[-1]["total_chars"] == len(big)


def test_scratch_fix_is_proved_locally_then_approved_as_a_new_version(
    world: World, ana: str, api: Principal
) -> None:
    bm, run_id = _setup(world, ana)
    conv = new_conversation(world.rt, api)
    steps = [
        [("copy_bundle_to_scratch", {"benchmark_id": bm})],
        [("read_scratch_file", {"benchmark_id": bm, "path": FIXED_PATH})],
        [("write_scratch_file", {"benchmark_id": bm, "path": FIXED_PATH, "content": SCORER})],
        [("rescore_in_scratch", {"benchmark_id": bm, "run_id": run_id})],
        [("propose_bundle_change", {"benchmark_id": bm})],
    ]
    script = Script(steps)
    turn = say(world.rt, api, conv, script.brain(), "fix the case bug in the scorer")
    assert turn.status == "awaiting_approval", turn.reply
    rescored = next(c for c in turn.tool_calls if c["tool"] == "rescore_in_scratch")
    assert rescored["ok"], rescored
    assert "'scores_with_scratch': {'accuracy': 1.0" in script.seen[-1]
    # Nothing changed on the platform: same version, same run score.
    web = Principal.web(ana)
    assert world.do(web, bundles.get_bundle, bm).version == 1
    assert world.do(web, launch.get_run, run_id).scores["accuracy"] == 0.5
    preview = turn.proposal.preview if turn.proposal else {}
    assert (
        "-right = sum(1 for k, v in ref.items() if str(found.get(k, '')).strip() == v)"
        in (preview["diff"])
    )
    assert preview["solutions"][0]["ok"]
    approved = say(world.rt, api, conv, Script().brain(), action=dict(turn.buttons[0]["action"]))
    assert "version 2" in approved.reply, approved.reply
    view = world.do(web, bundles.get_bundle, bm)
    assert view.version == 2 and view.sha256 == preview["sha256"]
    # The old run keeps its version and score; the leaderboard never moved.
    old = world.do(web, launch.get_run, run_id)
    assert (old.benchmark_version, old.scores["accuracy"]) == (1, 0.5)


def test_changing_the_scratch_after_the_preview_voids_the_approval(
    world: World, ana: str, api: Principal
) -> None:
    bm, _ = _setup(world, ana)
    conv = new_conversation(world.rt, api)
    steps = [
        [("copy_bundle_to_scratch", {"benchmark_id": bm})],
        [("write_scratch_file", {"benchmark_id": bm, "path": FIXED_PATH, "content": SCORER})],
        [("propose_bundle_change", {"benchmark_id": bm})],
    ]
    turn = say(world.rt, api, conv, Script(steps).brain(), "fix it")
    assert turn.status == "awaiting_approval", turn.reply
    # Someone (the agent, in another step) edits the copy after the user saw the diff.
    world.do(api, scratch.write_scratch_file, conv, bm, "extra.txt", "sneaky")
    approved = say(world.rt, api, conv, Script().brain(), action=dict(turn.buttons[0]["action"]))
    assert "changed after the preview" in approved.reply
    assert world.do(Principal.web(ana), bundles.get_bundle, bm).version == 1


def test_scratch_paths_are_confined_and_copies_private(
    world: World, ana: str, api: Principal
) -> None:
    bm, _ = _setup(world, ana)
    conv = new_conversation(world.rt, api)
    world.do(api, scratch.open_scratch, conv, bm)
    hostile = [
        [("read_scratch_file", {"benchmark_id": bm, "path": "../../../etc/passwd"})],
        [("write_scratch_file", {"benchmark_id": bm, "path": "/etc/x", "content": "x"})],
        [("write_scratch_file", {"benchmark_id": bm, "path": "a/../../b", "content": "x"})],
        [("read_scratch_file", {"benchmark_id": bm, "path": "..\\secret.key"})],
        # A folder of the copy, and a path under one of its files: the store's own error was
        # "the tool failed on the server", which said nothing of the path.
        [("write_scratch_file", {"benchmark_id": bm, "path": "scoring_program", "content": "x"})],
        [("write_scratch_file", {"benchmark_id": bm, "path": f"{FIXED_PATH}/x", "content": "x"})],
        [("read_scratch_file", {"benchmark_id": bm, "path": "scoring_program"})],
    ]
    turn = say(world.rt, api, conv, Script(hostile).brain(), "try")
    calls = [c for c in turn.tool_calls if c["tool"].endswith("scratch_file")]
    assert [c["error"] for c in calls] == ["invalid_input"] * 6 + ["not_found"], calls
    # Another user cannot reach ana's copy, even naming her conversation.
    bob = world.user("bob@example.com")
    bob_api = world.api(world.token(bob, ["read", "edit", "runs", "create", "publish"]))
    with pytest.raises((NotFound, PermissionDenied)):
        world.do(bob_api, scratch.read_scratch_file, conv, bm, FIXED_PATH)
    # A published benchmark's stranger cannot copy its bundle (it holds the reference data).
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    bob_conv = new_conversation(world.rt, bob_api)
    with pytest.raises(PermissionDenied):
        world.do(bob_api, scratch.open_scratch, bob_conv, bm)


def test_scratch_files_are_size_capped(world: World, ana: str, api: Principal) -> None:
    bm, _ = _setup(world, ana)
    conv = new_conversation(world.rt, api)
    copied = world.do(api, scratch.open_scratch, conv, bm)
    assert any(f["path"] == FIXED_PATH and f["bytes"] > 0 for f in copied.files)
    with pytest.raises(InvalidInput, match="at most"):
        world.do(api, scratch.write_scratch_file, conv, bm, "big.txt", "x" * (2 << 20))
    names = [f["path"] for f in world.do(api, scratch.list_scratch, conv, bm).files]
    assert "big.txt" not in names


def test_rescoring_a_copy_without_the_runs_task_says_which_task_is_missing(
    world: World, ana: str, api: Principal
) -> None:
    """A copy whose task was renumbered failed with a KeyError: the brain read only "the tool
    failed on the server", and nothing told it why."""
    bm, run_id = _setup(world, ana)
    conv = new_conversation(world.rt, api)
    world.do(api, scratch.open_scratch, conv, bm)
    renumbered = competition()
    renumbered["tasks"][0]["index"] = 1
    renumbered["phases"][0]["tasks"] = renumbered["solutions"][0]["tasks"] = [1]
    yml = yaml.safe_dump(renumbered)
    world.do(api, scratch.write_scratch_file, conv, bm, "competition.yaml", yml)
    with pytest.raises(InvalidInput, match=r"competition\.yaml\.tasks: has no task 0") as refused:
        world.do(api, scratch.rescore_in_scratch, conv, bm, run_id)
    assert "saved predictions" in refused.value.message


def test_a_large_file_replaced_in_scratch_is_shown_as_changed_not_as_new(
    world: World, ana: str, api: Principal
) -> None:
    """Files past 1 MiB were left out of both sides: one replaced showed as a new file, one
    changed or removed did not show at all. A text file of many lines is named, not diffed:
    the diff's time grows with the square of its lines (a 1 MB file took hours), and it was
    made inside the write that stores the proposal."""
    table = "scoring_program/table.txt"
    large = b"".join(b"%07d\n" % n for n in range(200_000))  # 1.6 MB
    long = "reference_data/long.txt"
    lines = [f"{n:07d}\n" for n in range(MAX_DIFF_LINES + 1)]
    data = bundle(extra={table: large, long: "".join(lines).encode()})
    bm = world.do(Principal.web(ana), bundles.upload_bundle, data, "b.zip")
    where = {"benchmark_id": bm.benchmark.id}
    every_other = "".join(f"x{line}" if n % 2 else line for n, line in enumerate(lines))
    steps = [
        [("copy_bundle_to_scratch", where)],
        [("write_scratch_file", {**where, "path": table, "content": "short now\n"})],
        [("write_scratch_file", {**where, "path": long, "content": every_other})],
        [("propose_bundle_change", where)],
    ]
    turn = say(world.rt, api, new_conversation(world.rt, api), Script(steps).brain(), "shorten it")
    assert turn.proposal is not None, turn.reply
    preview = turn.proposal.preview
    assert preview["binary_changes"] == [long, table] and preview["diff"] == ""
