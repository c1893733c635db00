"""The training loop the child runs: LoRA or full fine-tuning, one event per optimizer step."""

from __future__ import annotations

import math
import os
import resource
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig, get_peft_model

from benchgen.training.batches import Position, collate, schedule
from benchgen.training.checkpoints import (
    FINAL,
    TrainState,
    load_lora_weights,
    load_state,
    save_checkpoint,
    step_dir,
)
from benchgen.training.records import Dataset, load_examples
from benchgen.training.spec import TrainSpec, total_steps
from benchgen.training.weights import SPREAD, gguf_parsed_once, load_model, load_tokenizer

Emit = Callable[[dict[str, Any]], None]
_SEED_STRIDE = 1_000_003  # spreads (seed, step) pairs so neighbouring jobs draw apart


def train(spec: TrainSpec, emit: Emit, stop_requested: Callable[[], bool]) -> None:
    """Train as `spec` says, emitting started, step, checkpoint and completed/cancelled events.

    Raises:
        ValueError: no row teaches anything, a bad resume checkpoint, or the loss diverged.
    """
    torch.set_num_threads(spec.threads)
    torch.manual_seed(spec.seed)
    placed, device = placement(spec)
    with gguf_parsed_once(spec.base):  # a GGUF base's tokenizer and model from one parse
        tokenizer = load_tokenizer(spec.base)
        data = load_examples(spec.dataset_path, tokenizer, spec.hyper.max_seq_length)
        if not data.examples:
            raise ValueError("no dataset row has a completion token within max_seq_length")
        model = _build_model(spec, placed)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=spec.hyper.learning_rate)
    state = _initial_state(spec, len(data.examples), optimizer)
    emit(
        {
            "event": "started",
            "total_steps": state.total_steps,
            "start_step": state.step,
            "trainable_params": sum(p.numel() for p in params),
            "device": _device_words(spec),
            "rows": len(data.examples),
            "skipped_rows": data.skipped,
            "pid": os.getpid(),
        }
    )
    pad_id = (
        tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    )
    _Loop(spec, model, optimizer, params, data, int(pad_id or 0), device, emit).run(
        state, stop_requested
    )


class _Loop:
    """One attempt's steps from a starting state to the end, a stop request or a failure."""

    def __init__(
        self,
        spec: TrainSpec,
        model: Any,
        optimizer: torch.optim.Optimizer,
        params: list[torch.nn.Parameter],
        data: Dataset,
        pad_id: int,
        device: torch.device,
        emit: Emit,
    ) -> None:
        self.spec, self.model, self.optimizer, self.params = spec, model, optimizer, params
        self.data, self.pad_id, self.device, self.emit = data, pad_id, device, emit

    def run(self, state: TrainState, stop_requested: Callable[[], bool]) -> None:
        hyper = self.spec.hyper
        rows = len(self.data.examples)
        self.model.train()
        batches = schedule(rows, hyper.batch_size, hyper.epochs, state.seed, state.position)
        for position, indices in batches:
            if state.step >= state.total_steps:
                break
            if stop_requested():
                self._stop(state)
                return
            state = self._step(state, position, indices)
        final = save_checkpoint(
            self.model, self.spec.job_type, Path(self.spec.output_dir) / FINAL, None
        )
        self.emit(
            {"event": "completed", "step": state.step, "dir": str(final)} | _peaks(self.device)
        )

    def _step(self, state: TrainState, position: Position, indices: list[int]) -> TrainState:
        # Dropout draws from a generator seeded by the step, so a resumed attempt draws the
        # same numbers an uninterrupted one would have.
        torch.manual_seed(state.seed * _SEED_STRIDE + state.step)
        lr = state.base_lr * (1 - state.step / state.total_steps)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        started = time.perf_counter()
        batch = collate([self.data.examples[i] for i in indices], self.pad_id, self.device)
        loss = self.model(**batch).loss
        loss.backward()
        if self.spec.hyper.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.spec.hyper.max_grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        value = float(loss.item())
        seconds = time.perf_counter() - started
        state = replace(state, step=state.step + 1, position=position)
        if not math.isfinite(value):
            raise ValueError(
                f"the loss became {value} at step {state.step}: lower the learning rate"
            )
        tokens = int(batch["attention_mask"].sum().item())
        self.emit(
            {
                "event": "step",
                "step": state.step,
                "epoch": position.epoch + 1,
                "loss": value,
                "learning_rate": lr,
                "tokens_per_s": tokens / seconds if seconds > 0 else 0.0,
                "seconds": seconds,
            }
        )
        every = self.spec.checkpoint_every
        if every > 0 and state.step % every == 0 and state.step < state.total_steps:
            self._checkpoint(state)
        return state

    def _stop(self, state: TrainState) -> None:
        # A job that takes checkpoints leaves one where it stopped, so it can be resumed there.
        taken = step_dir(self.spec.output_dir, state.step).exists()
        if self.spec.checkpoint_every > 0 and state.step > 0 and not taken:
            self._checkpoint(state)
        self.emit({"event": "cancelled", "step": state.step} | _peaks(self.device))

    def _checkpoint(self, state: TrainState) -> None:
        target = step_dir(self.spec.output_dir, state.step)
        save_checkpoint(self.model, self.spec.job_type, target, state, self.optimizer)
        self.emit({"event": "checkpoint", "step": state.step, "dir": str(target)})


def placement(spec: TrainSpec) -> tuple[str, torch.device]:
    """Where the model loads and where batches go. A job given several GPUs holds its model
    spread over them, layer by layer (model parallel: a base too big for one GPU fits, but
    the steps are no faster than on one); its batches enter on the first."""
    if spec.device == "cuda" and len(spec.gpus) > 1:
        return SPREAD, torch.device("cuda", 0)
    return spec.device, torch.device(spec.device)


def _device_words(spec: TrainSpec) -> str:
    return f"{len(spec.gpus)} GPUs" if spec.device == "cuda" and len(spec.gpus) > 1 else spec.device


def _build_model(spec: TrainSpec, device: str) -> Any:
    if spec.job_type == "sft":
        model = load_model(spec.base, weights_dir=spec.resume_dir, device=device)
        for param in model.parameters():
            param.requires_grad_(True)
        return model
    hyper = spec.hyper
    config = LoraConfig(
        r=hyper.lora_rank,
        lora_alpha=hyper.lora_alpha,
        lora_dropout=hyper.lora_dropout,
        target_modules=list(hyper.target_modules),
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(load_model(spec.base, device=device), config)
    if spec.resume_dir:
        load_lora_weights(model, spec.resume_dir)
    return model


def _initial_state(spec: TrainSpec, rows: int, optimizer: torch.optim.Optimizer) -> TrainState:
    hyper = spec.hyper
    total = total_steps(rows, hyper.batch_size, hyper.epochs, spec.max_steps)
    if spec.resume_dir is None:
        return TrainState(0, Position(0, 0), total, hyper.learning_rate, spec.seed)
    state = load_state(spec.resume_dir, spec.job_type, optimizer)
    if (state.total_steps, state.seed) != (total, spec.seed):
        raise ValueError(
            f"the checkpoint belongs to a job of {state.total_steps} steps with seed {state.seed}; "
            f"this one has {total} steps with seed {spec.seed}"
        )
    return state


def _peaks(device: torch.device) -> dict[str, int]:
    peaks = {"peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    if device.type == "cuda":  # every GPU the job sees: a spread model uses them all
        gpus = range(torch.cuda.device_count())
        peaks["peak_gpu_bytes"] = sum(int(torch.cuda.max_memory_allocated(i)) for i in gpus)
    return peaks
