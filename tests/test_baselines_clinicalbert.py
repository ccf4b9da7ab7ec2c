"""ClinicalBERT baseline: head-and-tail truncation, label space, top-k decoding, and a tiny BERT trained for
a few steps on CPU, including resume from a checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from baselines import clinicalbert, common
from baselines.fixtures import make_audit_dir
from baselines.multilabel import (
    EncodedDataset,
    head_tail,
    label_indices,
    label_space,
    multi_hot,
    prior_logits,
    top_titles,
)
from earlydx.jsonl import read_jsonl
from earlydx.paths import CONF_DIR
from earlydx.schema import PREDICTION_KEYS


def tiny_audit_dir(root: Path) -> Path:
    """A tiny audit dir (contract 3) with realistic ten-section prompts and ICD titles."""
    return make_audit_dir(root / "audit", n_train=24, n_test=8, seed=0)


def smoke_cfg(tmp_path: Path, audit: Path, *overrides: str) -> DictConfig:
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose(config_name="clinicalbert", overrides=[
            f"paths.output_dir={tmp_path / 'out'}", f"audit_dir={audit}", "debug=smoke", *overrides])


@pytest.mark.parametrize(("n", "budget", "head", "expected"), [
    (5, 10, 3, [0, 1, 2, 3, 4]),            # short: untouched
    (10, 10, 3, list(range(10))),           # exactly the budget: untouched
    (12, 6, 2, [0, 1, 8, 9, 10, 11]),       # head 2 + tail 4
    (12, 6, 0, [6, 7, 8, 9, 10, 11]),       # tail only
    (12, 6, 6, [0, 1, 2, 3, 4, 5]),         # head only
    (600, 510, 128, list(range(128)) + list(range(600 - 382, 600))),  # Sun et al.'s 128 + 382
])
def test_head_tail(n: int, budget: int, head: int, expected: list[int]) -> None:
    out = head_tail(list(range(n)), budget, head)
    assert out == expected
    assert len(out) == min(n, budget)


@pytest.mark.parametrize(("budget", "head"), [(0, 0), (5, 6), (5, -1)])
def test_head_tail_rejects_bad_split(budget: int, head: int) -> None:
    with pytest.raises(ValueError):
        head_tail([1, 2, 3], budget, head)


def test_top_titles_order_ties_and_threshold() -> None:
    probs = np.array([[0.1, 0.9, 0.5, 0.9], [0.2, 0.1, 0.3, 0.05]], dtype=np.float32)
    labels = ["a", "b", "c", "d"]
    assert [[t for t, _ in r] for r in top_titles(probs, labels, k=2)] == [["b", "d"], ["c", "a"]]
    assert [[t for t, _ in r] for r in top_titles(probs, labels, k=3, threshold=0.5)] == [["b", "d", "c"], []]


def test_prior_logits() -> None:
    idx = [np.array([0, 1]), np.array([0]), np.array([], dtype=np.int64), np.array([0, 2])]
    out = prior_logits(idx, 4)
    p = np.array([3 / 4, 1 / 4, 1 / 4, 1e-4])  # label 3 never occurs: clipped, not -inf
    np.testing.assert_allclose(out, np.log(p / (1 - p)), rtol=1e-5)
    assert out.dtype == np.float32
    with pytest.raises(ValueError):
        prior_logits([], 3)


@pytest.mark.parametrize(("overrides", "expected"), [
    # not tiny: the pretrained-BERT recipe untouched
    ((), {"max_length": 512, "lr": 5.0e-5, "epochs": 3}),
    # tiny: tiny_overrides merged over the primary config
    (("model.tiny=true",), {"max_length": 256, "lr": 3.0e-3, "epochs": 12}),
    # smoke (tiny): its own settings win over the tiny block where it sets them
    (("debug=smoke",), {"max_length": 64, "lr": 1.0e-3, "epochs": 12, "max_steps": 4}),
])
def test_resolve_config_merges_tiny_then_smoke(tmp_path: Path, overrides: tuple[str, ...],
                                               expected: dict[str, float]) -> None:
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="clinicalbert", overrides=[f"paths.output_dir={tmp_path}", *overrides])
    out = clinicalbert.resolve_config(cfg)
    assert out.max_length == expected["max_length"]
    assert out.training_args.learning_rate == pytest.approx(expected["lr"])
    assert out.training_args.num_train_epochs == expected["epochs"]
    assert out.training_args.max_steps == expected.get("max_steps", -1)


def test_tiny_model_mean_pools_with_multilabel_bce(tmp_path: Path) -> None:
    import torch

    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="clinicalbert", overrides=[f"paths.output_dir={tmp_path}", "debug=smoke"])
    cfg = clinicalbert.resolve_config(cfg)
    from earlydx.tiny_models import train_wordpiece_tokenizer

    tok = train_wordpiece_tokenizer(["chest pain troponin high", "cough fever infiltrate"] * 20, vocab_size=120)
    model = clinicalbert.get_model(cfg, tok, ["a", "b", "c"]).eval()
    x = torch.tensor([[2, 7, 8, 3, 0], [2, 9, 3, 0, 0]])
    mask = (x != 0).long()
    y = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    out = model(input_ids=x, attention_mask=mask, labels=y)
    assert out.logits.shape == (2, 3)
    torch.testing.assert_close(out.loss, torch.nn.functional.binary_cross_entropy_with_logits(out.logits, y))
    # padding does not change a row's logits (masked mean)
    alone = model(input_ids=x[1:, :3], attention_mask=mask[1:, :3]).logits
    torch.testing.assert_close(alone, out.logits[1:], rtol=1e-4, atol=1e-5)


def test_label_space_and_multi_hot(tmp_path: Path) -> None:
    data = common.load_audit_dir(tiny_audit_dir(tmp_path))
    labels = label_space(data, "secondary", min_count=1)
    frequent = label_space(data, "secondary", min_count=4)
    assert set(frequent) < set(labels) and frequent == labels[:len(frequent)]
    train = common.encounters(data, "train")["stay_id"].to_list()
    idx = label_indices(data, "secondary", train, labels)
    y = multi_hot(idx, len(labels))
    titles = dict(zip(*common.label_titles(data, "secondary", stay_ids=train).to_dict(as_series=False).values(),
                      strict=True))
    assert y.shape == (len(train), len(labels))
    assert y.sum(axis=1).tolist() == [len(titles.get(s, [])) for s in train]
    assert all(labels[j] in titles[s] for s, cols in zip(train, idx, strict=True) for j in cols)
    item = EncodedDataset([[2, 7, 3]] * len(train), idx, n_labels=len(labels))[0]
    assert item["labels"] == y[0].tolist() and item["attention_mask"] == [1, 1, 1]
    # a title outside the space (min count) is dropped, not an error
    frequent_idx = label_indices(data, "secondary", train, frequent)
    assert sum(len(c) for c in frequent_idx) < sum(len(c) for c in idx)
    with pytest.raises(ValueError, match="min_label_count"):
        label_space(data, "secondary", min_count=0)


def test_clinicalbert_smoke_trains_and_predicts_top2(tmp_path: Path) -> None:
    audit = tiny_audit_dir(tmp_path)
    cfg = smoke_cfg(tmp_path, audit)
    manifest = clinicalbert.run(cfg)
    out = Path(cfg.output_dir)
    rows = read_jsonl(out / common.PREDICTIONS_FILE)
    labels = json.loads((out / "model" / clinicalbert.LABELS_FILE).read_text())
    assert len(rows) == 8 and all(tuple(r) == PREDICTION_KEYS for r in rows)
    assert all(len(r["diagnoses"]) == 2 and set(r["diagnoses"]) <= set(labels) for r in rows)
    assert manifest["global_step"] == 4 and manifest["resumed_from"] is None
    losses = manifest["logged_losses"]
    assert len(losses) == 4 and all(np.isfinite(losses))
    # The tiny head starts at the labels' prior log-odds, so the first BCE is far below the zero-bias ln 2.
    assert losses[0] < 0.6 * np.log(2)
    assert (out / "model" / "config.json").is_file() and (out / "tokenizer").is_dir()
    # Probabilities in raw_text are sorted and agree with the emitted titles.
    top = json.loads(rows[0]["raw_text"])["top"]
    assert [t["title"] for t in top[:2]] == rows[0]["diagnoses"]
    assert all(a["p"] >= b["p"] for a, b in zip(top, top[1:], strict=False))


def test_clinicalbert_resumes_from_checkpoint(tmp_path: Path) -> None:
    """A run killed after checkpoint-2 of 4 resumes from it on the same command, and its losses at steps
    3-4 equal those of the uninterrupted run (same data order, RNG, optimizer and scheduler state)."""
    import shutil

    audit = tiny_audit_dir(tmp_path)
    cfg = smoke_cfg(tmp_path, audit)
    straight = clinicalbert.run(cfg)
    assert straight["resumed_from"] is None and straight["global_step"] == 4
    out = Path(cfg.output_dir)
    # Simulate a crash after step 2: the later checkpoint and the outputs never got written.
    shutil.rmtree(out / "checkpoints" / "checkpoint-4")
    for name in ("manifest.json", common.PREDICTIONS_FILE):
        (out / name).unlink()
    resumed = clinicalbert.run(smoke_cfg(tmp_path, audit))
    assert resumed["resumed_from"] == "checkpoint-2" and resumed["global_step"] == 4
    np.testing.assert_allclose(resumed["logged_losses"][-2:], straight["logged_losses"][-2:], rtol=1e-5)
    assert len(read_jsonl(out / common.PREDICTIONS_FILE)) == 8


def test_clinicalbert_refuses_changed_label_space(tmp_path: Path) -> None:
    audit = tiny_audit_dir(tmp_path)
    fast = ("smoke_overrides.training_args.max_steps=1", "smoke_overrides.training_args.save_steps=1")
    clinicalbert.run(smoke_cfg(tmp_path, audit, *fast))
    with pytest.raises(ValueError, match="label space changed"):
        clinicalbert.run(smoke_cfg(tmp_path, audit, *fast, "label_pool=primary"))
