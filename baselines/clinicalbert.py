"""ClinicalBERT baseline: a multi-label classifier over the open-vocabulary training titles.

Commands:
    python -m baselines.clinicalbert audit_dir=outputs/audit                  # Bio_ClinicalBERT, GPU
    python -m baselines.clinicalbert debug=smoke audit_dir=outputs/tiny_audit # tiny BERT on CPU
    python -m baselines.clinicalbert k=2 threshold=0.3 min_label_count=5

AutoModelForSequenceClassification with problem_type="multi_label_classification" (BCEWithLogits over
one sigmoid per title), trained by the Hugging Face Trainer on the training split; prompts are
head-and-tail truncated to `max_length` tokens (Sun et al. 2019). It emits its top-k titles (paper:
k=2). `model.tiny=true` swaps in a randomly initialised tiny BERT (CPU demo and tests): it mean-pools
the token states instead of using the [CLS] pooler, starts its classifier bias at the labels' prior
log-odds, and trains with `tiny_training_args` merged over
`training_args` (and its shorter `max_length`) via `tiny_overrides`, because a BERT trained from scratch on a few hundred prompts learns nothing in a
fine-tuning recipe (lr 5e-5, 3 epochs, [CLS]). Checkpoints go to `output_dir/checkpoints` (deterministic path) and a rerun resumes from the
last one. Writes `model/` (weights, tokenizer, labels.json), `predictions.jsonl` and `manifest.json`.
"""

from __future__ import annotations

import copy
import json
import logging
import math
from pathlib import Path
from typing import Any

import hydra
import numpy as np
from omegaconf import DictConfig, OmegaConf, open_dict

from baselines.common import (
    AuditData,
    already_done,
    apply_smoke,
    encounters,
    finish_stage,
    keep_cli_overrides,
    load_audit_dir,
    prediction_row,
    prompt_column,
    stage_config,
)
from baselines.multilabel import (
    EncodedDataset,
    encode_head_tail,
    label_indices,
    label_space,
    prior_logits,
    top_titles,
)

log = logging.getLogger(__name__)
TEMPLATE_VERSION = "clinicalbert-headtail-v1"
LABELS_FILE = "labels.json"


# ----------------------------------------------------------------------------- config
def resolve_config(cfg: DictConfig) -> DictConfig:
    """The effective config: primary <- tiny_overrides (when model.tiny) <- smoke_overrides <- command line.

    The tiny block goes under the smoke preset (smoke sets model.tiny=true and its own few steps), and a
    key given on the command line (`model.tiny=true training_args.learning_rate=1e-3`) beats both.
    """
    if not apply_smoke(cfg).model.tiny or not cfg.get("tiny_overrides"):
        return apply_smoke(cfg)
    tiny = copy.deepcopy(cfg)
    with open_dict(tiny):  # the tiny block may set TrainingArguments fields the primary config leaves out
        tiny.merge_with(cfg.tiny_overrides)
    return apply_smoke(keep_cli_overrides(tiny, cfg, cfg.tiny_overrides))


# ----------------------------------------------------------------------------- tokenizer and model
def get_tokenizer(cfg: DictConfig, out_dir: Path, train_texts: list[str]) -> Any:
    """The pretrained tokenizer, or (tiny) a WordPiece tokenizer trained on the training prompts and
    saved in out_dir, so that a resumed run sees the same vocabulary."""
    from transformers import AutoTokenizer

    if not cfg.model.tiny:
        return AutoTokenizer.from_pretrained(cfg.model.name_or_path)
    saved = out_dir / "tokenizer"
    if saved.is_dir():
        return AutoTokenizer.from_pretrained(saved)
    from earlydx.tiny_models import train_wordpiece_tokenizer

    tokenizer = train_wordpiece_tokenizer(train_texts, vocab_size=int(cfg.model.tiny_vocab_size))
    tokenizer.save_pretrained(saved)
    return tokenizer


def mean_pool_class() -> type:
    """BertForSequenceClassification that classifies the masked mean of the last hidden states.

    For the tiny BERT trained from scratch: the [CLS] pooler has to learn to gather the whole prompt
    into one position first, which a 2-layer model does not manage on a few hundred prompts (its
    top-k stays the label marginals); the mean is a bag of contextual tokens from the first step.
    Same parameters as the parent (the unused pooler included), same BCEWithLogits multi-label loss.
    """
    import torch
    from transformers import BertForSequenceClassification
    from transformers.modeling_outputs import SequenceClassifierOutput

    class MeanPoolBertForSequenceClassification(BertForSequenceClassification):
        # No **kwargs: the Trainer would then pass num_items_in_batch and skip its own loss scaling.
        def forward(self, input_ids: Any = None, attention_mask: Any = None, token_type_ids: Any = None,
                    labels: Any = None) -> SequenceClassifierOutput:
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state
            mask = (attention_mask if attention_mask is not None else torch.ones_like(input_ids))
            mask = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
            logits = self.classifier(self.dropout(pooled))
            loss = None
            if labels is not None:
                loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
            return SequenceClassifierOutput(loss=loss, logits=logits)

    return MeanPoolBertForSequenceClassification


def get_model(cfg: DictConfig, tokenizer: Any, labels: list[str]) -> Any:
    """A sequence classifier with one logit per title (BCEWithLogits via problem_type)."""
    id2label = dict(enumerate(labels))
    label2id = {t: i for i, t in id2label.items()}
    if cfg.model.tiny:
        from earlydx.tiny_models import build_tiny_bert

        model = build_tiny_bert(tokenizer, num_labels=len(labels), seed=int(cfg.seed),
                                max_position_embeddings=max(int(cfg.max_length), 8), **cfg.model.tiny_dims)
        model.config.id2label, model.config.label2id = id2label, label2id
        pooling = cfg.model.get("tiny_pooling", "cls")
        if pooling == "mean":
            mean_model = mean_pool_class()(model.config)
            mean_model.load_state_dict(model.state_dict())  # same seeded initial weights
            return mean_model
        if pooling != "cls":
            raise ValueError(f"model.tiny_pooling must be 'mean' or 'cls', got {pooling!r}")
        return model
    from transformers import AutoModelForSequenceClassification

    return AutoModelForSequenceClassification.from_pretrained(
        cfg.model.name_or_path, num_labels=len(labels), problem_type="multi_label_classification",
        id2label=id2label, label2id=label2id)


def init_prior_bias(model: Any, bias: np.ndarray) -> None:
    """Set the classifier bias to the labels' prior log-odds (overwritten by a resumed checkpoint)."""
    import torch

    with torch.no_grad():
        model.classifier.bias.copy_(torch.as_tensor(bias, dtype=model.classifier.bias.dtype))


def check_labels(out_dir: Path, labels: list[str]) -> None:
    """Record the label space; a resumed run with a different one would load a mismatched head."""
    path = out_dir / LABELS_FILE
    if path.is_file():
        old = json.loads(path.read_text(encoding="utf-8"))
        if old != labels:
            raise ValueError(f"{path}: the label space changed ({len(old)} → {len(labels)} titles) but "
                             f"checkpoints from the old one exist; use a new output_dir or delete {out_dir}")
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(labels, ensure_ascii=False, indent=0), encoding="utf-8")


# ----------------------------------------------------------------------------- trainer
def build_trainer(cfg: DictConfig, out_dir: Path, model: Any, tokenizer: Any, train_ds: EncodedDataset) -> Any:
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments

    args = TrainingArguments(output_dir=str(out_dir / "checkpoints"), seed=int(cfg.seed),
                             **OmegaConf.to_container(cfg.training_args, resolve=True))
    return Trainer(model=model, args=args, train_dataset=train_ds, processing_class=tokenizer,
                   data_collator=DataCollatorWithPadding(tokenizer))


def last_checkpoint(out_dir: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    ckpt_dir = out_dir / "checkpoints"
    return get_last_checkpoint(str(ckpt_dir)) if ckpt_dir.is_dir() else None


# ----------------------------------------------------------------------------- stage
def predict(cfg: DictConfig, data: AuditData, trainer: Any, tokenizer: Any, labels: list[str],
            ) -> list[dict[str, Any]]:
    """Top-k titles for every test encounter and input variant."""
    import torch

    test = encounters(data, "test", cfg.get("limit_test"))
    rows = []
    for variant in cfg.input_variants:
        ids = encode_head_tail(tokenizer, test[prompt_column(variant)].to_list(), int(cfg.max_length),
                               int(cfg.head_tokens))
        logits = trainer.predict(EncodedDataset(ids)).predictions
        probs = torch.sigmoid(torch.as_tensor(np.asarray(logits), dtype=torch.float32)).numpy()
        picks = top_titles(probs, labels, k=int(cfg.k), threshold=cfg.get("threshold"))
        top5 = top_titles(probs, labels, k=min(5, len(labels)))
        for sid, subj, pick, scored in zip(test["stay_id"].to_list(), test["subject_id"].to_list(), picks, top5,
                                           strict=True):
            raw = json.dumps({"top": [{"title": t, "p": round(p, 5)} for t, p in scored]}, ensure_ascii=False)
            rows.append(prediction_row(stay_id=sid, subject_id=subj, system=cfg.system, input_variant=variant,
                                       diagnoses=[t for t, _ in pick], raw_text=raw,
                                       model_id=str(cfg.model.name_or_path) if not cfg.model.tiny else "tiny-bert",
                                       template_version=TEMPLATE_VERSION, dataset_fingerprint=data.fingerprint))
    return rows


def run(cfg: DictConfig) -> dict[str, Any]:
    """Train (or resume), save the model, predict the test split; returns the manifest."""
    cfg = resolve_config(cfg)
    out_dir = Path(cfg.output_dir)
    config = stage_config(cfg)
    data = load_audit_dir(cfg.audit_dir)
    if already_done(out_dir, config, data.input_files, force=cfg.get("force", False)):
        return json.loads((out_dir / "manifest.json").read_text())

    # ---- data: label space, training encounters, tokenized prompts
    labels = label_space(data, cfg.label_pool, int(cfg.min_label_count))
    check_labels(out_dir, labels)
    train = encounters(data, "train")
    train_texts = train["prompt"].to_list()
    targets = label_indices(data, cfg.label_pool, train["stay_id"].to_list(), labels)
    tokenizer = get_tokenizer(cfg, out_dir, train_texts)
    train_ds = EncodedDataset(encode_head_tail(tokenizer, train_texts, int(cfg.max_length), int(cfg.head_tokens)),
                              targets, n_labels=len(labels))
    log.info("clinicalbert: %d training encounters, %d titles (pool=%s, min count %d)", len(train_ds), len(labels),
             cfg.label_pool, cfg.min_label_count)

    # ---- model and trainer; resume from the last checkpoint of this deterministic output dir
    model = get_model(cfg, tokenizer, labels)
    if cfg.model.tiny and cfg.model.get("tiny_prior_bias", False):
        init_prior_bias(model, prior_logits(targets, len(labels)))
    trainer = build_trainer(cfg, out_dir, model, tokenizer, train_ds)
    resume = last_checkpoint(out_dir)
    if resume:
        log.info("resuming from %s", resume)
    result = trainer.train(resume_from_checkpoint=resume)

    # ---- save, predict, write
    trainer.save_model(str(out_dir / "model"))
    (out_dir / "model" / LABELS_FILE).write_text(json.dumps(labels, ensure_ascii=False), encoding="utf-8")
    rows = predict(cfg, data, trainer, tokenizer, labels)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    if not all(math.isfinite(v) for v in losses):
        raise FloatingPointError(f"clinicalbert: non-finite training loss {losses}")
    return finish_stage(out_dir, "baselines.clinicalbert", config, data.input_files, rows, extra={
        "n_labels": len(labels), "n_train": len(train_ds), "global_step": trainer.state.global_step,
        "resumed_from": Path(resume).name if resume else None, "train_loss": result.training_loss,
        "logged_losses": losses})


@hydra.main(version_base="1.3", config_path="../conf", config_name="clinicalbert")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
