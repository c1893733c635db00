"""Training specs round-trip through JSON, and step counts follow rows, batches and epochs."""

from __future__ import annotations

import pytest

from benchgen.training.spec import BaseWeights, Hyperparameters, TrainSpec, total_steps


def test_a_spec_survives_json() -> None:
    spec = TrainSpec(
        "sft",
        BaseWeights("gguf", "/models/m.gguf"),
        "/data/rows.jsonl",
        Hyperparameters(epochs=2, target_modules=("q_proj", "k_proj")),
        "/out",
        device="cuda",
        gpus=("2", "GPU-8d3c1a2b"),
        threads=3,
        checkpoint_every=5,
        resume_dir="/out/step-000005",
        max_steps=7,
    )
    assert TrainSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize("text", ["[]", '{"job_type": "lora"}', '{"bogus": 1}'])
def test_text_that_is_not_a_spec_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="spec"):
        TrainSpec.from_json(text)


@pytest.mark.parametrize(
    ("rows", "batch", "epochs", "cap", "steps"),
    [
        (8, 4, 1, None, 2),
        (9, 4, 1, None, 3),
        (9, 4, 3, None, 9),
        (9, 4, 3, 5, 5),
        (0, 4, 3, None, 0),
    ],
)
def test_total_steps(rows: int, batch: int, epochs: int, cap: int | None, steps: int) -> None:
    assert total_steps(rows, batch, epochs, cap) == steps
