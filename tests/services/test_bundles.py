"""Custom benchmarks end to end at the service level: upload → submission → scores →
leaderboard; a built-in model through an ingestion program and the proxy; versions; limits."""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import pytest
from sqlalchemy import select

from benchgen.core.context import Context, Principal, PrincipalKind
from benchgen.core.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    PermissionDenied,
    RateLimited,
)
from benchgen.core.permissions import Scope
from benchgen.db.tables import Run
from benchgen.services._artifacts import store_for
from benchgen.services.benchmarks import _bundle_versions, bundles, lifecycle
from benchgen.services.runs import bundle_execution, launch, leaderboards, rescoring, submissions
from benchgen.services.runtime import Runtime, transaction
from tests.bundle_factory import (
    ANSWERS,
    CODE_INGESTION,
    INGESTION,
    MODEL_CODE,
    bundle,
    competition,
    programs_started,
    require_sandbox,
    results,
    zip_of,
)
from tests.services.test_runs import work_all
from tests.support import QA, World


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


def _upload(world: World, owner: str, data: bytes) -> str:
    created = world.do(Principal.web(owner), bundles.upload_bundle, data, "tiny.zip")
    return created.benchmark.id


def test_upload_makes_a_custom_benchmark_with_phases_pages_and_passing_solution(
    world: World,
) -> None:
    ana = world.user("ana@example.com")
    bm = _upload(world, ana, bundle())
    view = world.do(Principal.web(ana), lifecycle.get_benchmark, bm)
    assert view.format == "custom" and view.title == "Tiny custom"
    got = world.do(Principal.web(ana), bundles.get_bundle, bm)
    assert got.version == 1 and got.docker_image == "codalab/codalab-legacy:py39"
    assert got.solutions and got.solutions[0]["ok"], got.solutions
    assert got.solutions[0]["scores"]["accuracy"] == 1.0
    assert "<script" not in got.terms_html and "nice" in got.terms_html
    assert got.pages[0]["title"] == "Overview" and "<em>questions</em>" in got.pages[0]["html"]
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)


def test_results_submission_is_scored_and_ranked_with_bundle_columns(
    world: World, runtime: Runtime
) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = _upload(world, ana, bundle())
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    half = world.do(
        Principal.web(bob), submissions.submit, bm, results({"q1": "paris"}), "half.zip"
    )
    full = world.do(
        Principal.web(ana), submissions.submit, bm, results({"q1": "Paris", "q2": "4"}), "f.zip"
    )
    work_all(runtime)
    done = world.do(Principal.web(ana), launch.get_run, full.id)
    assert done.status == "completed", done.error
    assert done.scores == {"accuracy": 1.0, "errors": 0.0, "combined": 1.0}
    assert done.model_name == "Submission f.zip"
    assert world.do(Principal.web(bob), launch.get_run, half.id).scores["accuracy"] == 0.5
    for run_id in (half.id, full.id):
        world.do(Principal.web(ana), leaderboards.add_to_leaderboard, run_id)
    board = world.do(Principal.web(bob), leaderboards.get_leaderboard, bm)
    assert board.columns == ["accuracy", "errors", "combined"]
    assert board.titles["errors"] == "Errors" and board.sorting["errors"] == "asc"
    assert [row.run_id for row in board.rows] == [full.id, half.id]
    output = world.do(Principal.web(ana), bundle_execution.program_output, full.id)
    assert "scored 2 items" in output["task-0"]
    with pytest.raises((NotFound, PermissionDenied)):
        world.do(Principal.web(bob), bundle_execution.program_output, half.id)


def test_builtin_model_answers_through_the_ingestion_program_and_proxy(
    world: World, runtime: Runtime
) -> None:
    ana = world.user("ana@example.com", credits_=100)
    bm = _upload(world, ana, bundle(ingestion=INGESTION))
    run = world.do(Principal.web(ana), launch.start_run, bm, "mdl_builtin_echo")
    work_all(runtime)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert done.status == "completed", done.error
    # echo answers the prompt itself: "paris" is right, "5" is not "4".
    assert done.scores["accuracy"] == 0.5 and done.scores["errors"] == 1.0
    output = world.do(Principal.web(ana), bundle_execution.program_output, run.id)
    assert "asked 2" in output["task-0"]


def test_model_without_ingestion_answers_jsonl_input_through_the_engine(
    world: World, runtime: Runtime
) -> None:
    ana = world.user("ana@example.com", credits_=100)
    bm = _upload(world, ana, bundle())
    run = world.do(Principal.web(ana), launch.start_run, bm, "mdl_builtin_echo")
    work_all(runtime)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert done.status == "completed", done.error
    assert done.scores["accuracy"] == 0.5


def test_code_submission_runs_through_the_ingestion_program(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    bm = _upload(world, ana, bundle(ingestion=CODE_INGESTION))
    code = zip_of({"model.py": MODEL_CODE})
    run = world.do(Principal.web(ana), submissions.submit, bm, code, "code.zip")
    work_all(runtime)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert done.status == "completed", done.error
    assert done.scores["accuracy"] == 1.0


def test_links_a_program_leaves_in_its_output_never_bring_host_files_in(
    world: World, runtime: Runtime, tmp_path: Path
) -> None:
    """The server saves the ingestion output for rescoring; a link there to a host file was
    followed (as the server's user), which put /etc/shadow or the server's environment in the
    saved predictions, for the bundle's scratch scoring to print back."""
    secret = tmp_path / "host-only.txt"
    secret.write_text("HOST-SECRET")
    planted = (
        "import os\n"
        f"os.symlink({str(secret)!r}, '/app/output/leak.txt')\n"
        "os.symlink('/proc/self/environ', '/app/output/environ')\n"
        f"os.symlink({str(tmp_path)!r}, '/app/output/folder')\n"
        "os.mkfifo('/app/output/pipe')\n"
    ).encode()
    ana = world.user("ana@example.com")
    bm = _upload(world, ana, bundle(ingestion=CODE_INGESTION))
    code = zip_of({"model.py": planted + MODEL_CODE})
    run = world.do(Principal.web(ana), submissions.submit, bm, code, "code.zip")
    work_all(runtime)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert done.status == "completed", done.error
    saved = store_for(runtime.settings).read_bytes(f"runs/{run.id}/predictions/task-0.zip")
    with zipfile.ZipFile(io.BytesIO(saved)) as kept:
        assert kept.namelist() == ["predictions.json"]
        assert b"HOST-SECRET" not in kept.read("predictions.json")


def test_a_phases_execution_time_limit_stops_a_slower_program(
    world: World, runtime: Runtime
) -> None:
    comp = competition()
    comp["phases"][0]["execution_time_limit"] = 2
    ana = world.user("ana@example.com")
    bm = _upload(world, ana, bundle(comp, ingestion=CODE_INGESTION))
    slow = zip_of({"model.py": b"import time\ntime.sleep(30)\n" + MODEL_CODE})
    run = world.do(Principal.web(ana), submissions.submit, bm, slow, "code.zip")
    work_all(runtime)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert done.status == "failed" and "wall-time limit of 2 s" in done.error, done.error


def test_failing_solution_blocks_publishing_with_why(world: World) -> None:
    ana = world.user("ana@example.com")
    bm = _upload(world, ana, bundle(solution={"q1": "rome"}, scorer="raise SystemExit(3)"))
    got = world.do(Principal.web(ana), bundles.get_bundle, bm)
    assert got.solutions is not None and not got.solutions[0]["ok"]
    with pytest.raises(Conflict, match="solution 0"):
        world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)


def test_a_failing_solution_keeps_its_programs_output_bounded_and_redacted(world: World) -> None:
    ana = world.user("ana@example.com")
    key = "sk-proj-" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"
    scorer = (
        f"import sys; print('x' * 9000); print('reading {key}', file=sys.stderr); "
        "print('ValueError: reference data is empty', file=sys.stderr); raise SystemExit(3)"
    )
    bm = _upload(world, ana, bundle(solution={"q1": "rome"}, scorer=scorer))
    got = world.do(Principal.web(ana), bundles.get_bundle, bm)
    assert got.solutions is not None
    failed = got.solutions[0]
    assert not failed["ok"] and "exit code 3" in failed["error"]
    assert "ValueError: reference data is empty" in failed["output"]
    assert key not in failed["output"] and "reading [redacted: OpenAI key]" in failed["output"]
    assert len(failed["output"]) < _bundle_versions.SOLUTION_OUTPUT_CHARS + 100


def test_a_passing_solution_has_no_output_to_show(world: World) -> None:
    ana = world.user("ana@example.com")
    got = world.do(Principal.web(ana), bundles.get_bundle, _upload(world, ana, bundle()))
    assert got.solutions is not None and got.solutions[0]["output"] == ""


def test_the_current_bundle_again_is_refused_naming_its_version(world: World) -> None:
    ana = world.user("ana@example.com")
    data = bundle()
    bm = _upload(world, ana, data)
    with pytest.raises(Conflict, match="identical to version 1") as refused:
        world.do(Principal.web(ana), bundles.upload_bundle_version, bm, data, "same.zip")
    assert refused.value.details["version"] == 1
    assert world.do(Principal.web(ana), bundles.get_bundle, bm).version == 1


def test_broken_bundle_is_refused_whole_with_places(world: World) -> None:
    ana = world.user("ana@example.com")
    comp = competition(phases=[{"name": "P", "tasks": [7]}])
    with pytest.raises(InvalidInput) as caught:
        world.do(Principal.web(ana), bundles.upload_bundle, bundle(comp), "bad.zip")
    assert any(e["loc"][:2] == ["phases", 0] for e in caught.value.errors)
    mine = world.do(Principal.web(ana), lifecycle.list_benchmarks, True, "", 50, 0)
    assert mine == []


def test_new_version_keeps_old_runs_and_token_cannot_change_phases(
    world: World, runtime: Runtime
) -> None:
    ana = world.user("ana@example.com")
    bm = _upload(world, ana, bundle())
    first = world.do(Principal.web(ana), submissions.submit, bm, results({"q1": "paris"}), "a.zip")
    work_all(runtime)
    changed = competition(title="Tiny custom v2")
    token = world.principal(PrincipalKind.API, ana)
    view = world.do(token, bundles.upload_bundle_version, bm, bundle(changed), "v2.zip")
    assert view.version == 2
    assert world.do(Principal.web(ana), launch.get_run, first.id).benchmark_version == 1
    two_phases = competition(
        phases=[
            {"index": 0, "name": "Dev", "tasks": [0]},
            {"index": 1, "name": "Final", "tasks": [0]},
        ]
    )
    with pytest.raises(PermissionDenied) as refused:
        world.do(token, bundles.upload_bundle_version, bm, bundle(two_phases), "v3.zip")
    assert refused.value.details["page"] == f"/benchmarks/{bm}/settings/phases"
    web_view = world.do(
        Principal.web(ana), bundles.upload_bundle_version, bm, bundle(two_phases), "v3.zip"
    )
    assert web_view.version == 3
    download = world.do(Principal.web(ana), bundles.download_bundle, bm, 1)
    assert download.data[:2] == b"PK"


def test_a_qa_benchmark_is_said_to_have_no_bundle(world: World) -> None:
    ana = world.user("ana@example.com")
    bm = world.benchmark(ana, QA)
    for read in (bundles.download_bundle, bundles.get_bundle):
        with pytest.raises(NotFound, match="qa benchmark: only custom benchmarks have a bundle"):
            world.do(Principal.web(ana), read, bm)


def test_strangers_cannot_download_and_max_submissions_holds(
    world: World, runtime: Runtime
) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    comp = competition()
    comp["phases"][0]["max_submissions"] = 1
    bm = _upload(world, ana, bundle(comp))
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    with pytest.raises(PermissionDenied):
        world.do(Principal.web(bob), bundles.download_bundle, bm)
    world.do(Principal.web(bob), submissions.submit, bm, results({}), "one.zip")
    with pytest.raises(Conflict, match="1 submissions"):
        world.do(Principal.web(bob), submissions.submit, bm, results({}), "two.zip")
    public = world.do(Principal.web(bob), bundles.get_bundle, bm)
    assert public.solutions is None and "solutions" not in public.competition


def test_phase_dates_are_enforced_by_the_server(world: World) -> None:
    ana = world.user("ana@example.com")
    comp = competition()
    comp["phases"][0]["start"] = "2999-01-01"
    bm = _upload(world, ana, bundle(comp))
    with pytest.raises(Conflict, match="not open"):
        world.do(Principal.web(ana), submissions.submit, bm, results({}), "early.zip")


def test_scope_guard_on_upload(world: World) -> None:
    ana = world.user("ana@example.com")
    reader = world.principal(PrincipalKind.API, ana, frozenset({Scope.READ}))
    with pytest.raises(PermissionDenied):
        world.do(reader, bundles.upload_bundle, bundle(), "tiny.zip")


def test_rescoring_a_custom_run_says_how_to_fix_scoring(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    bm = _upload(world, ana, bundle())
    run = world.do(Principal.web(ana), submissions.submit, bm, results({"q1": "paris"}), "a.zip")
    work_all(runtime)
    with pytest.raises(Conflict, match="new version"):
        world.do(Principal.web(ana), rescoring.rescore_run, run.id)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system's temporary folder for this test alone, to see what is left in it."""
    folder = tmp_path / "systmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_a_deep_results_zip_is_refused_at_submission_and_leaves_nothing(
    world: World, private_tmp: Path
) -> None:
    ana, bob = world.user("ana@example.com"), world.user("bob@example.com")
    bm = _upload(world, ana, bundle())
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    deep = zip_of({"predictions.json": b"{}", "d/" * 1500 + "x": b"x"})
    with pytest.raises(InvalidInput, match="nested more than 100 deep"):
        world.do(Principal.web(bob), submissions.submit, bm, deep, "deep.zip")
    assert _runs_of(world, ana, bm) == 0
    assert list(private_tmp.iterdir()) == []


def test_a_program_nesting_its_output_too_deep_fails_the_run_and_leaves_nothing(
    world: World, runtime: Runtime, private_tmp: Path
) -> None:
    ana = world.user("ana@example.com")
    bm = _upload(world, ana, bundle(ingestion=CODE_INGESTION))
    nest = b"import os\nos.chdir('/app/output')\nfor _ in range(3000):\n    os.mkdir('d')\n"
    code = zip_of({"model.py": MODEL_CODE + nest + b"    os.chdir('d')\n"})
    run = world.do(Principal.web(ana), submissions.submit, bm, code, "code.zip")
    work_all(runtime)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert done.status == "failed" and "nested more than 100 deep" in (done.error or ""), done
    assert list(private_tmp.iterdir()) == []


def test_a_deep_bundle_is_refused_and_leaves_nothing(world: World, private_tmp: Path) -> None:
    ana = world.user("ana@example.com")
    deep = bundle(extra={"reference_data/" + "d/" * 2000 + "x": b"x"})
    with pytest.raises(InvalidInput, match="nested more than 100 deep"):
        _upload(world, ana, deep)
    assert list(private_tmp.iterdir()) == []


def test_the_creation_limit_is_checked_before_any_program_runs(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    token = world.principal(PrincipalKind.API, ana)
    for _ in range(3):  # the default limit: 3 a minute
        world.do(token, lifecycle.create_benchmark, {"title": "x", "format": "qa"})
    ran: list[int] = []
    monkeypatch.setattr(_bundle_versions, "evaluate_task", lambda *a: ran.append(1))
    with pytest.raises(RateLimited):
        world.do(token, bundles.upload_bundle, bundle(), "tiny.zip")
    assert ran == []


def test_the_check_looks_at_the_creation_limit_without_counting_and_runs_nothing(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    token = world.principal(PrincipalKind.API, ana)
    ran: list[int] = []
    monkeypatch.setattr(_bundle_versions, "evaluate_task", lambda *a: ran.append(1))
    for _ in range(2):  # the default limit is 3 a minute; looking never uses one up
        with transaction(runtime, token, write=False) as ctx:
            bundles.check_bundle(ctx, bundle(), "tiny.zip")
    world.do(token, lifecycle.create_benchmark, {"title": "x", "format": "qa"})
    world.do(token, lifecycle.create_benchmark, {"title": "y", "format": "qa"})
    world.do(token, lifecycle.create_benchmark, {"title": "z", "format": "qa"})
    with transaction(runtime, token, write=False) as ctx, pytest.raises(RateLimited):
        bundles.check_bundle(ctx, bundle(), "tiny.zip")
    assert ran == []


def test_a_checked_bundle_is_stored_without_running_its_programs_again(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    web = Principal.web(ana)
    data = bundle()
    with transaction(runtime, web, write=False) as ctx:
        pending = bundles.check_bundle(ctx, data, "tiny.zip")
    checked = pending.inspect()
    assert checked.inspected.solutions[0]["ok"], checked.inspected.solutions
    monkeypatch.setattr(_bundle_versions, "evaluate_task", _never)
    with pytest.raises(ValueError, match="not the one being stored"):
        world.do(web, bundles.upload_bundle, bundle(competition(title="Other")), "o.zip", checked)
    bm = world.do(web, bundles.upload_bundle, data, "tiny.zip", checked).benchmark.id
    assert world.do(web, bundles.get_bundle, bm).solutions == checked.inspected.solutions
    changed = bundle(competition(title="Tiny v2"))
    with transaction(runtime, web, write=False) as ctx:
        with pytest.raises(Conflict, match="identical to version 1"):
            bundles.check_bundle(ctx, data, "tiny.zip", bm)
        pending = bundles.check_bundle(ctx, changed, "v2.zip", bm)
    monkeypatch.undo()
    checked = pending.inspect()
    monkeypatch.setattr(_bundle_versions, "evaluate_task", _never)
    view = world.do(web, bundles.upload_bundle_version, bm, changed, "v2.zip", checked)
    assert view.version == 2 and view.competition["title"] == "Tiny v2"


def _never(*_: object) -> None:
    raise AssertionError("a checked bundle's programs ran again")


def test_an_upload_runs_few_solution_programs_in_bounded_time(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    many = competition(
        solutions=[{"index": i, "path": "solution/", "tasks": [0]} for i in range(65)]
    )
    with pytest.raises(InvalidInput, match="an upload may run at most 64") as refused:
        _upload(world, ana, bundle(many))
    assert refused.value.errors[0]["loc"] == ["solutions"]
    monkeypatch.setattr(_bundle_versions, "SOLUTION_TIME_FACTOR", 0)
    bm = _upload(world, ana, bundle())
    got = world.do(Principal.web(ana), bundles.get_bundle, bm)
    assert got.solutions is not None and not got.solutions[0]["ok"]
    assert "for scoring its solutions ran out" in got.solutions[0]["error"]


def test_a_run_scored_with_old_columns_is_refused_naming_its_version(
    world: World, runtime: Runtime
) -> None:
    ana = world.user("ana@example.com")
    bm = _upload(world, ana, bundle())
    run = world.do(Principal.web(ana), submissions.submit, bm, results(ANSWERS), "a.zip")
    work_all(runtime)
    f1 = competition()
    f1["leaderboards"][0]["columns"] = [{"index": 0, "key": "f1", "title": "F1"}]
    world.do(Principal.web(ana), bundles.upload_bundle_version, bm, bundle(f1), "v2.zip")
    with pytest.raises(Conflict, match="scored by version 1, whose leaderboard columns differ"):
        world.do(Principal.web(ana), leaderboards.add_to_leaderboard, run.id)


def _runs_of(world: World, ana: str, bm: str) -> int:
    def count(ctx: Context) -> int:
        return len(ctx.session.scalars(select(Run.id).where(Run.benchmark_id == bm)).all())

    return world.ctx_call(Principal.web(ana), count)


def test_a_zip_with_a_broken_listing_is_refused_and_counts_nothing(world: World) -> None:
    """is_zipfile finds only the end record: a corrupt listing behind it was a 500."""
    ana = world.user("ana@example.com")
    bm = _upload(world, ana, bundle(ingestion=CODE_INGESTION))
    broken = bytearray(zip_of({"model.py": MODEL_CODE}))
    at = broken.rfind(b"PK\x01\x02")
    broken[at : at + 4] = b"XXXX"
    for kind in ("auto", "code"):
        with pytest.raises(InvalidInput, match=r"must be a \.zip file"):
            world.do(Principal.web(ana), submissions.submit, bm, bytes(broken), "b.zip", None, kind)
    assert _runs_of(world, ana, bm) == 0


@pytest.mark.parametrize(
    "name", ["\u202egpj.zip", "a\nb.zip", "nul\x00.zip", "zero\u200bwidth.zip"]
)
def test_a_submission_name_that_could_spoof_a_leaderboard_entry_is_refused(
    world: World, name: str
) -> None:
    # The file's name names the run on leaderboards, where everybody reads it.
    ana = world.user("ana@example.com")
    bm = _upload(world, ana, bundle())
    with pytest.raises(InvalidInput, match="the file name must not contain U\\+"):
        world.do(Principal.web(ana), submissions.submit, bm, results(ANSWERS), name)
    assert _runs_of(world, ana, bm) == 0
    windows = world.do(
        Principal.web(ana), submissions.submit, bm, results(ANSWERS), "C:\\Users\\a\\mine.zip"
    )
    assert windows.model_name == "Submission mine.zip"


def test_a_bundle_name_with_a_nul_or_override_is_refused_before_its_programs_run(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = world.user("ana@example.com")
    started = programs_started(monkeypatch)
    for name in ("nul\x00.zip", "\u202epiz.zip"):
        with pytest.raises(InvalidInput, match="the file name must not contain U\\+"):
            world.do(Principal.web(ana), bundles.upload_bundle, bundle(), name)
    assert not started.is_set()


def test_a_bundle_missing_from_storage_fails_the_run_without_naming_host_paths(
    world: World, runtime: Runtime
) -> None:
    ana = world.user("ana@example.com")
    bm = _upload(world, ana, bundle())
    store = store_for(runtime.settings)
    for key in store.keys(f"bundles/{bm}"):
        store.delete(key)
    run = world.do(Principal.web(ana), submissions.submit, bm, results(ANSWERS), "r.zip")
    work_all(runtime)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert done.status == "failed"
    assert "could not be unpacked: No such file or directory" in done.error
    data_dir = str(runtime.settings.data_dir.resolve())
    assert data_dir not in done.error and "bundles/" not in done.error
