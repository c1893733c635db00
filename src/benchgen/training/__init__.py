"""Pure training executors: LoRA and full fine-tuning in a child process (transformers + peft)."""
