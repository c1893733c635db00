"""What a program holds beyond its folders and any one process is still charged to its limits."""

from __future__ import annotations

from pathlib import Path

from benchgen.bundles.sandbox import Limits
from tests.bundles.test_sandbox import run_python, runtime  # noqa: F401 - the fixture

HOLD = """
    import ctypes, os, time
    for i in range({count}):
        {make}
        os.write(fd, b"x" * ({mib} << 20))
    # A deleted file only mapped, its descriptor closed, holds its space all the same: with it
    # the program passes its limits, without it not. (Python's mmap would keep a descriptor.)
    fd = os.open("/app/output/mapped", os.O_CREAT | os.O_RDWR)
    os.ftruncate(fd, 4 << 20)
    libc = ctypes.CDLL(None)
    libc.mmap.restype = ctypes.c_void_p
    address = libc.mmap(None, 4 << 20, 3, 1, fd, 0)  # read and write, shared
    ctypes.memset(address, 1, 4 << 20)
    os.close(fd)
    os.unlink("/app/output/mapped")
    time.sleep(30)
"""


def test_deleted_files_held_open_count_as_written_or_memory(
    tmp_path: Path,
    runtime: Path,  # noqa: F811 - the fixture
) -> None:
    """A program could fill the disk (or memory) without limit by writing files it had
    already deleted, or memfds: no walk of its folders and no per-process limit saw them."""
    limits = Limits(wall_seconds=4, written_bytes=8 << 20, memory_bytes=256 << 20)
    unlinked = (
        'fd = os.open(f"/app/output/{i}", os.O_CREAT | os.O_WRONLY); os.unlink(f"/app/output/{i}")'
    )
    on_disk = run_python(tmp_path, runtime, HOLD.format(make=unlinked, count=3, mib=2), limits)
    assert on_disk.stopped == "stopped: wrote more than 8 MiB", on_disk
    assert list((tmp_path / "output").iterdir()) == []
    memfd = HOLD.format(make='fd = os.memfd_create("m")', count=10, mib=16)
    in_memory = run_python(tmp_path, runtime, memfd, Limits(wall_seconds=4, memory_bytes=128 << 20))
    assert in_memory.stopped == "stopped: memory limit of 128 MiB", in_memory
    assert in_memory.stderr == ""  # stopped by the watch, not by an allocation failing


def test_memory_is_limited_for_all_processes_together(
    tmp_path: Path,
    runtime: Path,  # noqa: F811 - the fixture
) -> None:
    """Each process kept within the memory limit, so a program forking workers could use it
    as many times over as it may run processes, and System V segments without any limit."""
    code = """
        import os, time
        for _ in range(6):
            if os.fork() == 0:
                block = bytearray(100 << 20)
                time.sleep(30)
        time.sleep(30)
    """
    limits = Limits(wall_seconds=4, memory_bytes=256 << 20)
    outcome = run_python(tmp_path, runtime, code, limits)
    assert outcome.stopped == "stopped: memory limit of 256 MiB", outcome
    # System V shared memory stays allocated after every process detached from it.
    segments = """
        import ctypes, time
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        for _ in range(5):
            address = libc.shmat(libc.shmget(0, 100 << 20, 0o1600), None, 0)
            ctypes.memset(address, 1, 100 << 20)
            libc.shmdt(ctypes.c_void_p(address))
        time.sleep(30)
    """
    detached = run_python(tmp_path, runtime, segments, limits)
    assert detached.stopped == "stopped: memory limit of 256 MiB", detached
    shared = "import numpy, os; a = numpy.ones(10**7); os.fork() or os.fork(); a.sum()"
    assert run_python(tmp_path, runtime, shared, Limits(memory_bytes=256 << 20)).ok
