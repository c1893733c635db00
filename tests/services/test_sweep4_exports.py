"""A large benchmark exported as a task folder: every row was built, then all of them as one
text, its bytes and the text again, before the zip took any: eleven times the benchmark in
memory at once (338 MB for a 30 MB benchmark), for each export asked at the same moment."""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile

from benchgen.core.context import Principal
from benchgen.services.benchmarks import exports
from tests.support import World

FILLER = "lorem ipsum dolor " * 160  # about 3 kB a prompt


def test_a_task_folder_holds_little_more_than_the_questions_in_memory(world: World) -> None:
    ana = world.user("ana@example.com")
    questions = [{"prompt": f"{n} {FILLER}", "answer": f"a{n}"} for n in range(1000)]
    bm = world.benchmark(ana, {"title": "Big", "format": "qa", "questions": questions})
    web = Principal.web(ana)
    size = len(world.do(web, exports.export_benchmark, bm, "jsonl").data)
    tracemalloc.start()
    try:
        found = world.do(web, exports.export_benchmark, bm, "inspect")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * size, (peak, size)
    with zipfile.ZipFile(io.BytesIO(found.data)) as archive:
        name = exports.task_name(bm)
        lines = archive.read(f"{name}/dataset.jsonl").decode().splitlines()
    assert len(lines) == 1000
    assert json.loads(lines[-1])["target"] == ["a999"]
