"""Tiny on-the-fly tokenizers and models (earlydx.tiny_models): deterministic, offline, chat template attached."""

from __future__ import annotations

import pytest
import torch

from earlydx import tiny_models as tm

TEXTS = [
    "Chief complaint: chest pain radiating to the left arm. Troponin T 0.52 ng/mL (H).",
    "ECG: ST depression in V4-V6. Impression: no acute cardiopulmonary process.",
    "Final diagnoses:\n1. NSTEMI\n2. Acute kidney injury\n3. Sepsis, unspecified organism",
] * 30

MESSAGES = [
    {"role": "system", "content": "You are an emergency physician."},
    {"role": "user", "content": "## Chief complaint\nchest pain"},
    {"role": "assistant", "content": "Troponin is raised.\n\nFinal diagnoses:\n1. NSTEMI"},
]


@pytest.fixture(scope="module")
def tok():
    return tm.train_tokenizer(TEXTS, vocab_size=400)


def test_tokenizer_specials_and_roundtrip(tok) -> None:
    vocab = tok.get_vocab()
    assert [vocab[t] for t in tm.SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert tok.eos_token == tm.IM_END and tok.pad_token == tm.PAD and tok.bos_token is None
    text = "Unseen ünïcode → text 😀 with <|im_end|> inside"
    assert tok.decode(tok(text)["input_ids"]) == text  # byte-level: nothing is unknown
    assert tok.convert_tokens_to_ids(tm.IM_END) in tok(text)["input_ids"]


def test_tokenizer_is_deterministic(tok) -> None:
    again = tm.train_tokenizer(TEXTS, vocab_size=400)
    assert again.get_vocab() == tok.get_vocab()


def test_tokenizer_rejects_non_text() -> None:
    with pytest.raises(TypeError, match="#1"):
        tm.train_tokenizer(["ok", None], vocab_size=300)  # type: ignore[list-item]


def test_chat_template_renders_chatml_and_masks_assistant_with_end_of_turn(tok) -> None:
    assert tok.chat_template == tm.load_chat_template()
    rendered = tok.apply_chat_template(MESSAGES, tokenize=False)
    assert rendered == (
        "<|im_start|>system\nYou are an emergency physician.<|im_end|>\n"
        "<|im_start|>user\n## Chief complaint\nchest pain<|im_end|>\n"
        "<|im_start|>assistant\nTroponin is raised.\n\nFinal diagnoses:\n1. NSTEMI<|im_end|>\n"
    )
    prompt = tok.apply_chat_template(MESSAGES[:2], tokenize=False, add_generation_prompt=True)
    assert rendered.startswith(prompt) and prompt.endswith("<|im_start|>assistant\n")
    out = tok.apply_chat_template(MESSAGES, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    masked = [i for i, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m]
    assert tok.decode(masked) == MESSAGES[2]["content"] + tm.IM_END


@pytest.mark.parametrize("builder", [tm.build_tiny_qwen35, tm.build_tiny_qwen3])
def test_causal_lms_are_seeded_and_run(tok, builder) -> None:
    a, b = builder(tok, seed=3), builder(tok, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
    ids = torch.tensor([tok.apply_chat_template(MESSAGES, tokenize=True, return_dict=True)["input_ids"]])
    loss = a(input_ids=ids, labels=ids).loss
    assert torch.isfinite(loss) and loss.item() > 1.0  # random weights: about log(vocab)
    assert a.config.vocab_size == len(tok) and a.config.eos_token_id == tok.eos_token_id


def test_qwen35_is_hybrid_and_qwen3_head_dim(tok) -> None:
    q35 = tm.build_tiny_qwen35(tok)
    assert set(q35.config.layer_types) == {"linear_attention", "full_attention"}
    assert type(q35).__name__ == "Qwen3_5ForCausalLM"
    assert tm.build_tiny_qwen3(tok).config.head_dim == 64
    with pytest.raises(ValueError, match="both kinds"):
        tm.build_tiny_qwen35(tok, num_layers=1)


def test_bert_tokenizer_and_models() -> None:
    wp = tm.train_wordpiece_tokenizer(TEXTS, vocab_size=300)
    enc = wp(["chest pain"], return_tensors="pt")
    assert enc["input_ids"][0, 0].item() == wp.cls_token_id and enc["input_ids"][0, -1].item() == wp.sep_token_id
    clf = tm.build_tiny_bert(wp, num_labels=5)
    assert clf(**enc).logits.shape == (1, 5) and clf.config.problem_type == "multi_label_classification"
    assert type(tm.build_tiny_bert(300)).__name__ == "BertForMaskedLM"


def test_save_pretrained_roundtrip_carries_chat_template(tok, tmp_path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tm.save_pretrained(tm.build_tiny_qwen35(tok), tok, tmp_path / "m")
    tok2 = AutoTokenizer.from_pretrained(out)
    assert tok2.chat_template == tok.chat_template and tok2.eos_token == tm.IM_END
    assert type(AutoModelForCausalLM.from_pretrained(out)).__name__ == "Qwen3_5ForCausalLM"


def test_build_tiny_checkpoint_bert(tmp_path) -> None:
    from transformers import AutoModelForSequenceClassification

    out = tm.build_tiny_checkpoint(TEXTS, tmp_path / "bert", kind="bert", vocab_size=300)
    clf = AutoModelForSequenceClassification.from_pretrained(out, num_labels=4)
    assert clf.config.num_labels == 4
    with pytest.raises(ValueError, match="unknown tiny model kind"):
        tm.build_tiny_checkpoint(TEXTS, tmp_path / "x", kind="gpt")
