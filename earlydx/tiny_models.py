"""Tiny models and tokenizers built from config on the fly, so every stage runs on a CPU with no download.

Used by `debug=smoke` presets and by tests (SFT on a tiny Qwen3.5-architecture model, a tiny Qwen3 for the
CPU build of vLLM, a tiny BERT for the ClinicalBERT baseline). Nothing here touches the network.

Example:
    from earlydx.tiny_models import train_tokenizer, build_tiny_qwen35, save_pretrained
    tok = train_tokenizer(texts, vocab_size=2000)
    model = build_tiny_qwen35(tok, seed=0)
    save_pretrained(model, tok, "outputs/tiny_qwen35")

The chat template (`earlydx/templates/chat_template.jinja`, version `CHAT_TEMPLATE_VERSION`) is the one file
used for training and for inference.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # heavy imports stay lazy: importing this module must be cheap for config tests
    from transformers import (
        BertTokenizerFast,
        PreTrainedModel,
        PreTrainedTokenizerBase,
        PreTrainedTokenizerFast,
        Qwen3_5ForCausalLM,
        Qwen3ForCausalLM,
    )

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
CHAT_TEMPLATE_PATH = TEMPLATES_DIR / "chat_template.jinja"
CHAT_TEMPLATE_VERSION = "chatml-v1"

ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
PAD = "<|pad|>"
# Order fixes their ids (0..3) so that tokenizers trained on different texts agree on special ids.
SPECIAL_TOKENS = (ENDOFTEXT, IM_START, IM_END, PAD)

BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def load_chat_template(path: str | Path | None = None) -> str:
    """The text of a chat template file (default: the project's ChatML template)."""
    path = Path(path) if path is not None else CHAT_TEMPLATE_PATH
    if not path.is_file():
        raise FileNotFoundError(f"chat template not found: {path}")
    return path.read_text(encoding="utf-8")


def _batched(texts: Iterable[str], size: int = 1000) -> Iterator[list[str]]:
    batch: list[str] = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"tokenizer training text #{i} is {type(text).__name__}, expected str")
        batch.append(text)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def train_tokenizer(texts: Iterable[str], vocab_size: int = 2000, chat_template: str | None = None,
                    min_frequency: int = 2) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer (Qwen-style special tokens) on `texts`.

    Byte-level with the full 256-byte initial alphabet, so any string encodes without an unknown token.
    Training is deterministic: the same texts give the same vocabulary.

    Args:
        texts: Training texts (e.g. every message content of the SFT examples).
        vocab_size: Target vocabulary size including the 256 byte symbols and the special tokens.
        chat_template: Jinja chat template text; default is the project's template file.
        min_frequency: Minimum pair frequency for a merge.

    Returns:
        A `PreTrainedTokenizerFast` with eos `<|im_end|>` (end of an assistant turn, where generation
        stops), pad `<|pad|>`, no BOS, and the chat template attached.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if vocab_size < 256 + len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size={vocab_size} is below the 256 byte symbols + {len(SPECIAL_TOKENS)} specials")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    # trim_offsets=False keeps character offsets exact; assistant masks are computed from them.
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator(_batched(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=IM_END, pad_token=PAD, unk_token=None, bos_token=None,
        additional_special_tokens=[ENDOFTEXT, IM_START], model_max_length=1 << 20,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = chat_template if chat_template is not None else load_chat_template()
    return fast


def train_wordpiece_tokenizer(texts: Iterable[str], vocab_size: int = 2000, lowercase: bool = True,
                              ) -> BertTokenizerFast:
    """Train a BERT WordPiece tokenizer on `texts` (for the tiny ClinicalBERT stand-in).

    Args:
        texts: Training texts.
        vocab_size: Target vocabulary size.
        lowercase: Lowercase and strip accents (as uncased BERT; Bio_ClinicalBERT is cased, but a tiny model
            learns more from fewer symbols).

    Returns:
        A `BertTokenizerFast` with [PAD]/[UNK]/[CLS]/[SEP]/[MASK].
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase, strip_accents=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=list(BERT_SPECIAL_TOKENS),
                                        show_progress=False)
    tok.train_from_iterator(_batched(texts), trainer=trainer)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return BertTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", do_lower_case=lowercase, model_max_length=512,
    )


def _special_ids(tokenizer: PreTrainedTokenizerBase) -> dict[str, int | None]:
    return {
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "bos_token_id": tokenizer.bos_token_id,
    }


def _seeded(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def qwen35_layer_types(num_layers: int, full_attention_interval: int) -> list[str]:
    """Qwen3.5's layer pattern: every `full_attention_interval`-th layer full attention, the rest linear."""
    return ["full_attention" if (i + 1) % full_attention_interval == 0 else "linear_attention"
            for i in range(num_layers)]


def build_tiny_qwen35(tokenizer: PreTrainedTokenizerBase, hidden_size: int = 64, num_layers: int = 4,
                      num_heads: int = 4, num_kv_heads: int = 2, head_dim: int = 16,
                      intermediate_size: int = 128, linear_num_key_heads: int = 2,
                      linear_num_value_heads: int = 4, linear_head_dim: int = 16,
                      full_attention_interval: int = 2, max_position_embeddings: int = 4096,
                      seed: int = 0) -> Qwen3_5ForCausalLM:
    """A randomly initialised Qwen3.5 text model (hybrid Gated DeltaNet + full attention), tiny.

    Args:
        tokenizer: Fixes the vocabulary size and the pad/eos ids.
        hidden_size: Model width.
        num_layers: Decoder layers; every `full_attention_interval`-th is full attention, the others
            linear attention (Gated DeltaNet), as in Qwen3.5 (which uses an interval of 4).
        num_heads, num_kv_heads, head_dim: Full-attention heads (grouped-query).
        intermediate_size: MLP width.
        linear_num_key_heads, linear_num_value_heads, linear_head_dim: Gated DeltaNet heads.
        full_attention_interval: Period of full-attention layers; must leave both kinds present.
        max_position_embeddings: Longest sequence.
        seed: Seed of the weight initialisation (same seed, same weights).

    Returns:
        A `Qwen3_5ForCausalLM` in float32 and train mode.
    """
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    layer_types = qwen35_layer_types(num_layers, full_attention_interval)
    if set(layer_types) != {"full_attention", "linear_attention"}:
        raise ValueError(f"num_layers={num_layers}, full_attention_interval={full_attention_interval} gives "
                         f"layer_types={layer_types}; a Qwen3.5 stand-in needs both kinds")
    config = Qwen3_5TextConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=intermediate_size,
        num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=num_kv_heads,
        head_dim=head_dim, layer_types=layer_types, linear_num_key_heads=linear_num_key_heads,
        linear_num_value_heads=linear_num_value_heads, linear_key_head_dim=linear_head_dim,
        linear_value_head_dim=linear_head_dim, max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=True, **_special_ids(tokenizer),
    )
    _seeded(seed)
    return Qwen3_5ForCausalLM(config)


def build_tiny_qwen3(tokenizer: PreTrainedTokenizerBase, hidden_size: int = 128, num_layers: int = 2,
                     num_heads: int = 2, num_kv_heads: int = 1, head_dim: int = 64,
                     intermediate_size: int = 256, max_position_embeddings: int = 4096,
                     seed: int = 0) -> Qwen3ForCausalLM:
    """A randomly initialised tiny Qwen3 (plain attention), servable by the CPU build of vLLM.

    head_dim defaults to 64 because vLLM's CPU attention backend supports only a few head sizes.

    Args:
        tokenizer: Fixes the vocabulary size and the pad/eos ids.
        hidden_size, num_layers, num_heads, num_kv_heads, head_dim, intermediate_size: Dimensions.
        max_position_embeddings: Longest sequence (vLLM's max_model_len defaults to it).
        seed: Seed of the weight initialisation.

    Returns:
        A `Qwen3ForCausalLM` in float32.
    """
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=intermediate_size,
        num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=num_kv_heads,
        head_dim=head_dim, max_position_embeddings=max_position_embeddings, tie_word_embeddings=True,
        **_special_ids(tokenizer),
    )
    _seeded(seed)
    return Qwen3ForCausalLM(config)


def build_tiny_bert(tokenizer_or_vocab: PreTrainedTokenizerBase | int, hidden_size: int = 64,
                    num_layers: int = 2, num_heads: int = 2, intermediate_size: int = 128,
                    max_position_embeddings: int = 512, num_labels: int | None = None,
                    seed: int = 0) -> PreTrainedModel:
    """A randomly initialised tiny BERT.

    Args:
        tokenizer_or_vocab: A tokenizer (vocabulary size and pad id from it) or a vocabulary size.
        hidden_size, num_layers, num_heads, intermediate_size, max_position_embeddings: Dimensions.
        num_labels: None returns a `BertForMaskedLM` (a "pretrained checkpoint" like Bio_ClinicalBERT, which
            `AutoModelForSequenceClassification.from_pretrained(path, num_labels=...)` turns into a classifier);
            an int returns a `BertForSequenceClassification` with `problem_type="multi_label_classification"`.
        seed: Seed of the weight initialisation.

    Returns:
        The model, in float32.
    """
    from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification

    if isinstance(tokenizer_or_vocab, int):
        vocab_size, pad_id = tokenizer_or_vocab, 0
    else:
        vocab_size, pad_id = len(tokenizer_or_vocab), tokenizer_or_vocab.pad_token_id or 0
    config = BertConfig(
        vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_layers,
        num_attention_heads=num_heads, intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings, pad_token_id=pad_id,
    )
    _seeded(seed)
    if num_labels is None:
        return BertForMaskedLM(config)
    config.num_labels = num_labels
    config.problem_type = "multi_label_classification"
    return BertForSequenceClassification(config)


def save_pretrained(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, out_dir: str | Path) -> Path:
    """Save a model with its tokenizer (and chat template) so `from_pretrained(out_dir)` loads both.

    Args:
        model: Any transformers model.
        tokenizer: Its tokenizer; its chat template is written beside it (`chat_template.jinja`).
        out_dir: Target folder (created).

    Returns:
        The folder.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    if getattr(model, "generation_config", None) is not None and tokenizer.eos_token_id is not None:
        # Generation (transformers and vLLM) stops at the end of the assistant turn.
        model.generation_config.eos_token_id = tokenizer.eos_token_id
        model.generation_config.pad_token_id = tokenizer.pad_token_id
        model.generation_config.save_pretrained(out)
    return out


def build_tiny_checkpoint(texts: Iterable[str], out_dir: str | Path, kind: str = "qwen3_5",
                          vocab_size: int = 2000, seed: int = 0, **dims: int) -> Path:
    """Train a tokenizer on `texts`, build a tiny model of `kind`, save both to `out_dir`.

    Args:
        texts: Tokenizer training texts.
        out_dir: Target folder.
        kind: "qwen3_5", "qwen3" or "bert".
        vocab_size: Tokenizer vocabulary size.
        seed: Weight-initialisation seed.
        **dims: Passed to the builder (e.g. hidden_size=32).

    Returns:
        The folder.
    """
    texts = list(texts)
    if kind == "bert":
        tok = train_wordpiece_tokenizer(texts, vocab_size=vocab_size)
        model = build_tiny_bert(tok, seed=seed, **dims)
    else:
        tok = train_tokenizer(texts, vocab_size=vocab_size)
        builders = {"qwen3_5": build_tiny_qwen35, "qwen3": build_tiny_qwen3}
        if kind not in builders:
            raise ValueError(f"unknown tiny model kind {kind!r}; expected one of qwen3_5, qwen3, bert")
        model = builders[kind](tok, seed=seed, **dims)
    return save_pretrained(model, tok, out_dir)
