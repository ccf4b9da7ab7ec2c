"""Supervised fine-tuning (TRL SFTTrainer) of Qwen3.5 on gold-conditioned rationales, assistant-only loss.

Commands:
    python -m train.sft data.sft_file=outputs/sft_data/sft_train.jsonl        # one GPU, or CPU
    accelerate launch --config_file conf/accelerate/multi_gpu.yaml -m train.sft deepspeed=zero3
    torchrun --nproc_per_node 2 -m train.sft debug=smoke deepspeed=zero3       # CPU, two processes
    sbatch slurm/sft.sh deepspeed=zero3                                        # Slurm, multi-node
    python -m train.sft debug=smoke                                            # CPU, seconds

Writes into `outputs/sft/${run_name}` (one folder for every rank and every Slurm requeue): `checkpoint-*`
(resumed automatically), `metrics.jsonl` (logged loss per step), `ranks/rank<r>.jsonl`, `final/` (model +
tokenizer + chat template, loadable by `eval.generate`), `resolved_config.yaml` and `manifest.json`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

import earlydx.resolvers  # noqa: F401  (registers ${sweep_point:} before Hydra composes conf/sft.yaml)
from earlydx.manifest import is_current, write_manifest
from earlydx.tiny_models import CHAT_TEMPLATE_VERSION
from train.config import build_sft_config
from train.data import chat_texts, check_lengths, read_sft_examples, synthetic_sft_examples, to_dataset
from train.modeling import get_model, get_tokenizer, layer_types, lora_config
from train.tracking import (
    MetricsJsonlCallback,
    dist_info,
    latest_checkpoint,
    truncate_metrics,
    write_rank_marker,
)

log = logging.getLogger(__name__)
STAGE = "train.sft"
FINAL_DIR = "final"


def load_rows(cfg: DictConfig) -> tuple[list[dict[str, Any]], list[Path]]:
    """SFT rows and the input files they came from (synthetic rows, smoke runs only, have none)."""
    sft_file = Path(cfg.data.sft_file)
    if not sft_file.is_file() and cfg.data.synthetic_if_missing:
        log.warning("%s not found: training on %d synthetic examples (smoke run)", sft_file,
                    cfg.data.synthetic_examples)
        return synthetic_sft_examples(int(cfg.data.synthetic_examples), seed=int(cfg.seed)), []
    return read_sft_examples(sft_file, cfg.data.max_examples), [sft_file]


def build_trainer(cfg: DictConfig, rows: list[dict[str, Any]], output_dir: Path):
    """Tokenizer, model and SFTTrainer from the config (the trainer settings are `SFTConfig(**cfg.trainer)`)."""
    from trl import SFTTrainer

    # Trainer settings first: the padding-free check refuses an unsafe setup before any weights load, and
    # under ZeRO-3 the SFTConfig must exist before from_pretrained so that weights load partitioned.
    args = build_sft_config(cfg, layer_types=layer_types(cfg.model),
                            attn_implementation=cfg.model.get("attn_implementation"))
    tokenizer = get_tokenizer(cfg.model, chat_texts(rows))
    rows, dropped = check_lengths(rows, tokenizer, args.max_length, str(cfg.data.get("on_overlength", "error")))
    if dropped:
        log.warning("dropped %d SFT examples longer than trainer.max_length=%d", dropped, args.max_length)
    model = get_model(cfg.model, tokenizer, bf16=args.bf16, seed=int(cfg.seed))
    return SFTTrainer(
        model=model, args=args, train_dataset=to_dataset(rows), processing_class=tokenizer,
        peft_config=lora_config(cfg.model), callbacks=[MetricsJsonlCallback(output_dir)],
    ), dropped


def run(cfg: DictConfig) -> dict[str, Any]:
    """Fine-tune, resuming from the latest checkpoint in the run directory; returns a summary.

    Args:
        cfg: The composed `sft` config.

    Returns:
        {"output_dir", "final_dir", "global_step", "resumed_from", "train_loss", "skipped"}.
    """
    # ── setup ──────────────────────────────────────────────────────────────────────────────────
    from transformers import set_seed

    output_dir = Path(cfg.output_dir)
    config = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(config, dict)
    # What makes a finished run current: not the job id (a requeue or a later job may reuse the run) nor force.
    config = {k: v for k, v in config.items() if k not in ("run_id", "force")}
    rank = dist_info()["rank"]
    set_seed(int(cfg.seed))

    # ── data ───────────────────────────────────────────────────────────────────────────────────
    rows, inputs = load_rows(cfg)
    if not cfg.force and is_current(output_dir, config, inputs):
        log.info("%s is current (same config and data): nothing to do", output_dir)
        return {"output_dir": str(output_dir), "final_dir": str(output_dir / FINAL_DIR), "skipped": True}
    log.info("%d SFT examples", len(rows))

    # ── tokenizer, model, trainer ──────────────────────────────────────────────────────────────
    trainer, dropped_overlength = build_trainer(cfg, rows, output_dir)
    resume = latest_checkpoint(output_dir)
    write_rank_marker(output_dir, {"resumed_from": resume, "run_name": cfg.run_name})
    if rank == 0:
        output_dir.mkdir(parents=True, exist_ok=True)
        (output_dir / "resolved_config.yaml").write_text(OmegaConf.to_yaml(config), encoding="utf-8")

    # ── train ──────────────────────────────────────────────────────────────────────────────────
    if resume:
        log.info("resuming from %s", resume)
        if rank == 0:  # steps after the checkpoint were lost with the interrupted run; they are redone
            truncate_metrics(output_dir, resume)
    result = trainer.train(resume_from_checkpoint=resume)

    # ── save ───────────────────────────────────────────────────────────────────────────────────
    final_dir = output_dir / FINAL_DIR
    # save_model gathers ZeRO-3 shards and writes on the main process only; the tokenizer (with the chat
    # template) goes beside the weights, so eval.generate loads one folder.
    trainer.save_model(str(final_dir))
    summary = {"output_dir": str(output_dir), "final_dir": str(final_dir),
               "global_step": trainer.state.global_step, "resumed_from": resume,
               "train_loss": result.training_loss, "skipped": False,
               "examples": len(rows) - dropped_overlength, "dropped_overlength": dropped_overlength}
    if trainer.is_world_process_zero():
        trainer.processing_class.save_pretrained(str(final_dir))
        write_manifest(output_dir, STAGE, config, inputs, extra={
            "chat_template_version": CHAT_TEMPLATE_VERSION, "summary": summary,
            "world_size": dist_info()["world_size"],
        })
    trainer.accelerator.wait_for_everyone()
    return summary


@hydra.main(version_base="1.3", config_path="../conf", config_name="sft")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
