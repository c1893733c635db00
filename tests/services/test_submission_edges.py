"""Custom benchmarks tried as a hostile participant would: a submission queued while the
organiser uploads a new bundle version, clock edges, removed access, odd zips."""

from __future__ import annotations

import copy
import io
import json
import stat
import zipfile

import pytest

from benchgen.core.clock import ManualClock
from benchgen.core.context import Principal
from benchgen.core.errors import Conflict, InvalidInput
from benchgen.services.accounts import ratelimits
from benchgen.services.benchmarks import bundles, lifecycle, phases
from benchgen.services.runs import launch, submissions
from benchgen.services.runtime import Runtime
from tests.bundle_factory import ANSWERS, bundle, competition, require_sandbox, results, zip_of
from tests.services.test_runs import work_all
from tests.support import World


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


def _upload(world: World, owner: str, comp: dict | None = None) -> str:
    data = bundle(comp or competition())
    return world.do(Principal.web(owner), bundles.upload_bundle, data, "tiny.zip").benchmark.id


def test_a_queued_submission_runs_only_the_tasks_its_version_has(
    world: World, runtime: Runtime
) -> None:
    ana = world.user("ana@example.com")
    benchmark = _upload(world, ana)
    queued = world.do(Principal.web(ana), submissions.submit, benchmark, results(ANSWERS), "a.zip")
    # The organiser adds a second task to the phase before a worker takes the submission.
    comp = competition()
    comp["tasks"].append({**copy.deepcopy(comp["tasks"][0]), "index": 1, "name": "Again"})
    comp["phases"][0]["tasks"] = [0, 1]
    data = bundle(comp)
    world.do(Principal.web(ana), bundles.upload_bundle_version, benchmark, data, "v2.zip")
    work_all(runtime)
    done = world.do(Principal.web(ana), launch.get_run, queued.id)
    assert (done.status, done.error, done.benchmark_version) == ("completed", "", 1)
    assert list(done.summary["tasks"]) == ["0"] and done.scores["accuracy"] == 1.0


def _zip_with(info: zipfile.ZipInfo, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("predictions.json", json.dumps(ANSWERS))
        archive.writestr(info, data, zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def _link() -> bytes:
    info = zipfile.ZipInfo("answers.json")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return _zip_with(info, b"/app/input/ref/answers.json")


HOSTILE = {
    "a link": (_link, "symbolic links are refused"),
    "a path leaving the folder": (
        lambda: _zip_with(zipfile.ZipInfo("../../escape.py"), b"x"),
        "'..' path parts",
    ),
    "a zip bomb": (
        lambda: _zip_with(zipfile.ZipInfo("zeros.bin"), bytes(4 << 20)),
        "compression ratio",
    ),
    "folders nested too deep": (
        lambda: zip_of({"predictions.json": b"{}", "d/" * 1500 + "x": b"x"}),
        "nested more than 100 deep",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_zip_the_worker_would_refuse_is_refused_at_once_and_counts_nothing(
    world: World, case: str
) -> None:
    """Such a zip was queued, counted against the daily quota, and failed later."""
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    benchmark = _upload(world, ana)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, benchmark)
    make, why = HOSTILE[case]
    with pytest.raises(InvalidInput, match=why):
        world.do(Principal.web(bob), submissions.submit, benchmark, make(), "bad.zip")
    assert world.do(Principal.web(bob), ratelimits.run_quota, benchmark).remaining == 5
    assert world.do(Principal.web(ana), launch.list_runs, benchmark) == []


def _two_phases() -> dict:
    """Development until 10 January 00:00 UTC; Final from the same instant, written in +01:00."""
    comp = competition()
    comp["phases"][0]["end"] = "2026-01-10T00:00:00Z"
    final = {**copy.deepcopy(comp["phases"][0]), "index": 1, "name": "Final"}
    final.update(start="2026-01-10T01:00:00+01:00", end=None)
    comp["phases"].append({k: v for k, v in final.items() if v is not None})
    return comp


def _phase_of(world: World, owner: str, benchmark: str, run_id: str) -> str:
    board = world.do(Principal.web(owner), launch.get_run, run_id)
    found = world.do(Principal.web(owner), phases.list_phases, benchmark)
    return next(p.name for p in found if p.id == board.phase_id)


def test_a_phase_closes_at_its_end_and_a_submission_goes_to_the_phase_open_now(
    world: World, clock: ManualClock
) -> None:
    ana = world.user("ana@example.com")
    benchmark = _upload(world, ana, _two_phases())
    web = Principal.web(ana)

    def send(phase: int | None = None) -> str:
        return world.do(web, submissions.submit, benchmark, results(ANSWERS), "a.zip", phase).id

    clock.advance(days=8, hours=23, minutes=59, seconds=59)
    assert _phase_of(world, ana, benchmark, send()) == "Development"
    clock.advance(seconds=1)  # the very instant Development ends and Final starts
    with pytest.raises(Conflict, match="'Development' is not open"):
        send(0)
    assert _phase_of(world, ana, benchmark, send()) == "Final"
    clock.advance(days=30)
    assert _phase_of(world, ana, benchmark, send()) == "Final"


def test_a_phase_number_past_the_last_lists_the_numbers_there_are(
    world: World, clock: ManualClock
) -> None:
    """A bundle whose YAML indexes start at 1: phase 2 is no phase, and the refusal says how
    they are numbered instead of leaving the author to guess."""
    comp = _two_phases()
    for index, phase in enumerate(comp["phases"], start=1):
        phase["index"] = index
    ana = world.user("ana@example.com")
    benchmark = _upload(world, ana, comp)
    with pytest.raises(InvalidInput) as caught:
        world.do(Principal.web(ana), submissions.submit, benchmark, results(ANSWERS), "a.zip", 2)
    [problem] = caught.value.errors
    assert problem["loc"] == ["phase"]
    assert problem["msg"] == (
        "there is no phase 2; phases are numbered from 0 in order: 0 (Development), 1 (Final)"
    )
