"""The seeded order of rows in each epoch, and padding a batch of them into tensors."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from benchgen.training.records import IGNORE, Example


@dataclass(frozen=True)
class Position:
    """Where a job stands: the epoch under way (from 0) and the batches of it already done."""

    epoch: int
    batch: int


def epoch_order(rows: int, seed: int, epoch: int) -> list[int]:
    """Row indices in the order epoch `epoch` visits them (the same for every attempt)."""
    order = list(range(rows))
    random.Random(f"{seed}:{epoch}").shuffle(order)  # noqa: S311 - reproducible, not secret
    return order


def schedule(
    rows: int, batch_size: int, epochs: int, seed: int, start: Position
) -> Iterator[tuple[Position, list[int]]]:
    """Every batch from `start` on, each with the position it leaves the job at."""
    for epoch in range(start.epoch, epochs):
        order = epoch_order(rows, seed, epoch)
        first = start.batch if epoch == start.epoch else 0
        for index in range(first * batch_size, rows, batch_size):
            yield Position(epoch, index // batch_size + 1), order[index : index + batch_size]


def collate(
    examples: Sequence[Example], pad_id: int, device: torch.device
) -> dict[str, torch.Tensor]:
    """Right-pad to the longest row; padding is masked from attention and from the loss."""
    width = max(len(e.input_ids) for e in examples)
    ids, mask, labels = [], [], []
    for example in examples:
        gap = width - len(example.input_ids)
        ids.append([*example.input_ids, *[pad_id] * gap])
        mask.append([1] * len(example.input_ids) + [0] * gap)
        labels.append([*example.labels, *[IGNORE] * gap])
    return {
        "input_ids": torch.tensor(ids, device=device),
        "attention_mask": torch.tensor(mask, device=device),
        "labels": torch.tensor(labels, device=device),
    }
