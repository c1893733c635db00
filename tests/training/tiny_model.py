"""A tiny random Llama with its own tokenizer, saved as safetensors: the fast model for tests."""

from __future__ import annotations

import json
from pathlib import Path

SENTENCES = [
    "The secret word is pineapple.",
    "The capital of France is Paris.",
    "Two and two make four.",
    "What is the secret word?",
    "Which city is the capital of France?",
    "How much is two and two?",
    "Answer with the letter of the right choice: A, B, C or D.",
    "You are a helpful assistant.",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MEMORISE = [
    ("What is the secret word?", "The secret word is pineapple."),
    ("Which city is the capital of France?", "The capital of France is Paris."),
    ("How much is two and two?", "Two and two make four."),
    ("Say the secret word.", "pineapple"),
]


def build_tiny_llama(folder: Path, chat_template: bool = True) -> Path:
    """Write a 2-layer, 32-wide random Llama and a byte-level BPE tokenizer to `folder`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    special = ["<pad>", "<s>", "<|im_end|>", "<|im_start|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(SENTENCES * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="<|im_end|>",
        chat_template=CHAT_TEMPLATE if chat_template else None,
    )
    config = LlamaConfig(
        vocab_size=bpe.get_vocab_size(),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def write_header_folder(folder: Path) -> Path:
    """A Llama folder (config.json, one small F32 safetensors file and a stub tokenizer.json,
    written by hand) that reads as a trainable base without torch: for catalogue tests that
    never load weights."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {"model_type": "llama", "hidden_size": 2, "num_hidden_layers": 1, "vocab_size": 4}
    (folder / "config.json").write_text(json.dumps(config))
    header = {
        "model.embed_tokens.weight": {"dtype": "F32", "shape": [4, 2], "data_offsets": [0, 32]}
    }
    encoded = json.dumps(header).encode()
    body = len(encoded).to_bytes(8, "little") + encoded + bytes(32)
    (folder / "model.safetensors").write_bytes(body)
    (folder / "tokenizer.json").write_text("{}")  # there, as a base needs; never loaded
    return folder


def write_chat_rows(path: Path, repeat: int = 1) -> Path:
    """The memorisable question/answer pairs as chat rows, `repeat` times over."""
    rows = [
        {"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}
        for q, a in MEMORISE * repeat
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_tiny_gguf(path: Path, arch: str) -> str:
    """A GGUF file for `arch` holding a block count and one 4×8 embedding tensor: enough to read
    its header and tensors, not to load as a model. Needs the train extra's gguf package."""
    import numpy as np
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), arch)
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return str(path)
