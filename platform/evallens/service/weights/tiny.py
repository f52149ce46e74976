"""A tiny Llama with random weights and a locally trained tokenizer, for fast tests.

Its answers are noise, but it runs the same vLLM code paths as a real model in a second or two.
"""

from pathlib import Path

# Llama 3 style turns: easy to read in logs, and the template ends each turn with the EOS token.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|start|>{{ message['role'] }}\n{{ message['content'] }}<|end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|pad|>", "<|begin|>", "<|end|>", "<|start|>"]
TRAINING_TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "Evaluation replays curated cases on every model or parameter change.",
    "A span records the time to first token, the tokens in and out, and the cost.",
    "The knowledge base answers questions about PostgreSQL, vLLM and OpenTelemetry.",
    "user assistant system What is the capital of France? Paris is the capital.",
    "0 1 2 3 4 5 6 7 8 9 hello world, how are you today? I am fine, thank you.",
]
VOCAB_SIZE = 512
HIDDEN_SIZE = 128
NUM_HEADS = 2  # head_dim 64: a size every CPU attention backend supports


def train_tokenizer() -> "object":
    """A byte-level BPE tokenizer trained on a few sentences (``tokenizers.Tokenizer``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(TRAINING_TEXT * 4, trainer=trainer)
    return tokenizer


def build_tiny_llama(path: Path, *, seed: int = 0, max_position_embeddings: int = 2048) -> Path:
    """Write a 2-layer Llama (random bf16 weights), its tokenizer and chat template to ``path``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=train_tokenizer(),
        bos_token="<|begin|>",
        eos_token="<|end|>",
        pad_token="<|pad|>",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(path)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN_SIZE,
        intermediate_size=2 * HIDDEN_SIZE,
        num_hidden_layers=2,
        num_attention_heads=NUM_HEADS,
        num_key_value_heads=NUM_HEADS,
        max_position_embeddings=max_position_embeddings,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
        dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(path)
    return path
