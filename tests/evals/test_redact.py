"""redact(): known secrets and token-shaped strings never survive."""

from __future__ import annotations

import pytest

from benchgen.evals.redact import redact


@pytest.mark.parametrize(
    ("text", "secrets", "expected"),
    [
        ("key=abc123xyz!", ("abc123xyz",), "key=[redacted]!"),
        ("a-b a-b", ("a-b",), "[redacted] [redacted]"),
        ("long and longer", ("long", "longer"), "[redacted] and [redacted]"),
        ("nothing here", ("",), "nothing here"),
        ("got sk-proj-AbCdEf0123456789 back", (), "got [redacted] back"),
        ("sk-ant-api03-abcdefgh_ijkl-mn", (), "[redacted]"),
        # Shaped like a token but with a bad checksum: the exact table still takes it.
        (
            "token bgp_0123456789abcdefABCDEF0123456789xyz123",
            (),
            "token [redacted: possible BenchGen token]",
        ),
        (
            "valid bgp_0123456789ABCDEFGHIJKLMNOPQRSTUV1ggZdL",
            (),
            "valid [redacted: BenchGen token]",
        ),
        ("id AKIAIOSFODNN7EXAMPLE echoed", (), "id [redacted: AWS access key id] echoed"),
        ("bga_ZZZZZZZZZZ", (), "[redacted]"),
        ("Authorization: Bearer abc.def.ghi-123", (), "Authorization: Bearer [redacted]"),
        ("sk- short sk-abc, bgp_", (), "sk- short sk-abc, bgp_"),
    ],
)
def test_redact(text: str, secrets: tuple[str, ...], expected: str) -> None:
    assert redact(text, secrets) == expected
