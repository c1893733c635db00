"""A worker's GPUs for training: a job gets free GPUs of its pool's type, never one another
attempt here holds, and gives them back however its attempt ends; a child names them as the
worker's own CUDA_VISIBLE_DEVICES does. Detection is faked: no GPU is needed."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchgen.services.training.devices import LocalGpus, serves

pytestmark = pytest.mark.usefixtures("gpu_locks")

MACHINE = ["NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA H200", "NVIDIA A100-SXM4-80GB"]


def machine(names: list[str] = MACHINE, visible: str | None = None) -> LocalGpus:
    return LocalGpus(detect=lambda: names, visible=lambda: visible)


@pytest.mark.parametrize(
    ("gpu_type", "name", "fits"),
    [
        ("H200", "NVIDIA H200", True),
        ("h200", "NVIDIA H200 NVL", True),
        ("NVIDIA H200", "NVIDIA H200", True),  # a detected pool is named by torch's name
        ("A100", "NVIDIA A100-SXM4-80GB", True),
        ("A10", "NVIDIA A100-SXM4-80GB", False),
        ("H20", "NVIDIA H200", False),
        ("H200", "NVIDIA GH200", False),
        ("L4", "NVIDIA L40S", False),
    ],
)
def test_a_pool_type_is_a_whole_word_of_the_gpus_name(gpu_type: str, name: str, fits: bool) -> None:
    assert serves(gpu_type, name) is fits


def test_a_job_gets_free_gpus_of_its_type_lowest_first() -> None:
    gpus = machine()
    assert [g.index for g in gpus.take("H200", 1) or ()] == [0]
    assert [g.index for g in gpus.take("A100", 2) or ()] == [1, 3]
    assert [g.index for g in gpus.take("H200", 1) or ()] == [2]
    assert gpus.held() == {0, 1, 2, 3}


def test_too_few_free_gpus_of_the_type_takes_nothing() -> None:
    gpus = machine()
    assert gpus.take("H200", 3) is None  # two here
    assert gpus.take("L4", 1) is None  # none here
    assert gpus.held() == set()
    first = gpus.take("H200", 2)
    assert first is not None and gpus.take("H200", 1) is None
    gpus.give_back(first)
    assert gpus.take("H200", 1) is not None


def test_a_machine_without_gpus_places_no_gpu_job() -> None:
    gpus = machine([])
    assert gpus.take("H200", 1) is None and gpus.described() == "none"


def test_detection_runs_once() -> None:
    calls: list[int] = []

    def detect() -> list[str]:
        calls.append(1)
        return ["NVIDIA H200"]

    gpus = LocalGpus(detect=detect, visible=lambda: None)
    for _ in range(3):
        held = gpus.take("H200", 1)
        assert held is not None
        gpus.give_back(held)
    assert len(calls) == 1


@pytest.mark.parametrize("ending", ["returns", "raises"])
def test_an_attempt_gives_its_gpus_back_however_it_ends(ending: str) -> None:
    gpus = machine()

    def attempt() -> None:
        with gpus.attempt() as hold:
            assert hold.take("H200", 2) == ("0", "2")
            assert gpus.held() == {0, 2}
            if ending == "raises":
                raise RuntimeError("the child could not start")

    if ending == "raises":
        with pytest.raises(RuntimeError):
            attempt()
    else:
        attempt()
    assert gpus.held() == set()


def test_an_attempt_that_could_not_be_placed_holds_nothing() -> None:
    gpus = machine()
    with gpus.attempt() as hold:
        assert hold.take("H200", 3) is None
        assert gpus.held() == set()


def test_a_child_names_the_gpus_as_the_workers_own_visible_devices_do() -> None:
    """A worker started with CUDA_VISIBLE_DEVICES=5,7 sees them as 0 and 1: its child must be
    given "7", not "1" (another machine's user's GPU, or none)."""
    gpus = machine(["NVIDIA H200", "NVIDIA H200"], visible="5,7")
    with gpus.attempt() as first, gpus.attempt() as second:
        assert first.take("H200", 1) == ("5",)
        assert second.take("H200", 1) == ("7",)


def test_uuids_in_the_workers_visible_devices_pass_on_as_they_are() -> None:
    gpus = machine(["NVIDIA H200"], visible="GPU-8d3c1a2b, ")
    with gpus.attempt() as hold:
        assert hold.take("H200", 1) == ("GPU-8d3c1a2b",)


def test_concurrent_attempts_never_share_a_gpu() -> None:
    names = ["NVIDIA H200"] * 8
    gpus = machine(names)
    start = threading.Barrier(16)
    taken: list[int] = []

    def attempt() -> None:
        start.wait()
        got = gpus.take("H200", 1)
        taken.extend(g.index for g in got or ())  # list.extend is atomic

    threads = [threading.Thread(target=attempt) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == list(range(8))  # 8 placed, each GPU once
    assert gpus.held() == set(range(8))


def test_a_gpu_another_worker_process_trains_on_is_not_free_here() -> None:
    """Two worker processes on one machine (each its own LocalGpus) once both took GPU 0."""
    first, second = machine(), machine()
    assert [g.index for g in first.take("H200", 1) or ()] == [0]
    assert [g.index for g in second.take("H200", 1) or ()] == [2]
    assert second.take("H200", 1) is None and second.free_of("H200") == 0
    assert second.held() == {2}  # the refused take holds nothing more


def test_a_gpu_comes_free_for_other_workers_when_its_attempt_ends() -> None:
    first, second = machine(), machine()
    with first.attempt() as hold:
        assert hold.take("H200", 2) == ("0", "2")
        assert second.free_of("H200") == 0
    assert second.free_of("H200") == 2
    assert [g.index for g in second.take("H200", 2) or ()] == [0, 2]


def test_workers_with_their_own_visible_devices_agree_on_the_physical_gpu() -> None:
    """A worker seeing all GPUs and one started with CUDA_VISIBLE_DEVICES=2,3 share GPU 2."""
    everything = machine(["NVIDIA H200"] * 4)
    some = machine(["NVIDIA H200"] * 2, visible="2,3")
    assert some.take("H200", 1) is not None  # its index 0, the machine's GPU 2
    assert [g.visible_as for g in everything.take("H200", 4) or ()] == []
    assert [g.visible_as for g in everything.take("H200", 3) or ()] == ["0", "1", "3"]


def test_a_worker_that_dies_leaves_its_gpus_free(gpu_locks: Path) -> None:
    """The kernel drops a dead process's lock: no stale claim outlives a killed worker."""
    holder = (
        "import sys; from pathlib import Path\n"
        "from benchgen.services.training.devices import LocalGpus\n"
        "gpus = LocalGpus(lambda: ['NVIDIA H200'], lambda: None, Path(sys.argv[1]))\n"
        "assert gpus.take('H200', 1) is not None\n"
        "print('held', flush=True); sys.stdin.read()\n"
    )
    child = subprocess.Popen(  # noqa: S603 - this interpreter, a fixed program
        [sys.executable, "-c", holder, str(gpu_locks)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        here = machine(["NVIDIA H200"])
        assert here.take("H200", 1) is None
    finally:
        child.kill()
        child.wait(10)
    assert here.take("H200", 1) is not None


def test_an_unusable_lock_folder_still_places_by_this_workers_own_count(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    gpus = LocalGpus(detect=lambda: ["NVIDIA H200"], visible=lambda: None, machine=blocked)
    assert gpus.take("H200", 1) is not None and gpus.take("H200", 1) is None
