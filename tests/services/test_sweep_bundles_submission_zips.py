"""Submission zips the worker could not unpack are refused when sent, naming the field, and
neither queue a run nor count: an unreadable zip format version, a broken member header, a
listing of far too many entries (refused before it is read whole)."""

from __future__ import annotations

import struct
import time

import pytest
from sqlalchemy import select

from benchgen.core.context import Context, Principal
from benchgen.core.errors import InvalidInput
from benchgen.db.tables import Run
from benchgen.services.benchmarks import bundles
from benchgen.services.runs import submissions
from tests.bundle_factory import ANSWERS, bundle, require_sandbox, results
from tests.bundles.test_sweep_archive_headers import bad_local_magic, offset_before_start
from tests.bundles.test_sweep_archive_listing import listing_only
from tests.support import World


def _newer_format() -> bytes:
    """A results zip whose listing says it needs zip format 25.5 to extract."""
    data = bytearray(results(ANSWERS))
    central = data.rfind(b"PK\x01\x02")
    struct.pack_into("<H", data, central + 6, 0xFF)
    return bytes(data)


def test_unreadable_submission_zips_are_refused_at_once(world: World) -> None:
    require_sandbox()
    ana = world.user("ana@example.com")
    created = world.do(Principal.web(ana), bundles.upload_bundle, bundle(), "tiny.zip")
    bm = created.benchmark.id
    cases = [
        (_newer_format(), "unsupported zip feature"),
        (bad_local_magic(), "the zip is corrupt"),
        (offset_before_start(), "the zip is corrupt"),
    ]
    for data, msg in cases:
        with pytest.raises(InvalidInput, match=msg) as caught:
            world.do(Principal.web(ana), submissions.submit, bm, data, "mine.zip")
        assert caught.value.errors[0]["loc"][0] == "submission"
    many = listing_only(200_000)
    started = time.monotonic()
    with pytest.raises(InvalidInput, match="more than 20000 entries"):
        world.do(Principal.web(ana), submissions.submit, bm, many, "many.zip")
    assert time.monotonic() - started < 1.0

    def runs(ctx: Context) -> int:
        return len(ctx.session.scalars(select(Run.id).where(Run.benchmark_id == bm)).all())

    assert world.ctx_call(Principal.web(ana), runs) == 0
