"""Predictions of a post-trained checkpoint for the test split (issue 7 item 3).

    python -m eval.generate checkpoint=outputs/sft/qwen35-4b-sft/final input_variant=full
    python -m eval.generate checkpoint=outputs/sft/qwen35-4b-sft/final input_variant=cc_only
    python -m eval.generate checkpoint=... llm=vllm                 # offline vLLM engine on a GPU node
    python -m eval.generate checkpoint=... llm=openai llm.base_url=http://127.0.0.1:8000/v1 \
        llm.model=qwen35-sft                                         # a `slurm/serve_vllm.sh` server

The model sees exactly what it saw in training: the same system turn (rationale/templates/system_v1.txt),
the encounter prompt as the user turn, and the chat template saved with the checkpoint. Decoding is
greedy by default; the answer's "Final diagnoses:" list is read by `earlydx.parsing`, the same parser
the prompting baselines use. A LoRA checkpoint (adapter_config.json) is merged into its base model
once and the merged weights are cached beside the adapter, so every backend serves plain weights.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from baselines.common import (
    already_done,
    apply_smoke,
    encounters,
    finish_stage,
    load_audit_dir,
    prediction_row,
    prompt_column,
    stage_config,
)
from earlydx.llm import ChatRequest, SamplingParams, build_client
from earlydx.parsing import parse_diagnoses
from rationale.prompts import SYSTEM_PROMPT_VERSION, load_system_prompt

log = logging.getLogger(__name__)
MERGED_DIR = "merged"


def resolve_checkpoint(checkpoint: str | Path) -> Path:
    """A directory of plain weights for `checkpoint`: itself, or for a LoRA adapter the merged model.

    Raises:
        FileNotFoundError: the checkpoint directory does not exist.
    """
    path = Path(checkpoint)
    if not path.is_dir():
        raise FileNotFoundError(f"checkpoint directory not found: {path}")
    if not (path / "adapter_config.json").is_file():
        return path
    merged = path / MERGED_DIR
    if (merged / "config.json").is_file():
        return merged
    from peft import AutoPeftModelForCausalLM
    from transformers import AutoTokenizer

    log.info("merging LoRA adapter %s into its base model -> %s", path, merged)
    model = AutoPeftModelForCausalLM.from_pretrained(str(path)).merge_and_unload()
    tmp = path / f".{MERGED_DIR}.tmp"
    model.save_pretrained(str(tmp))
    AutoTokenizer.from_pretrained(str(path)).save_pretrained(str(tmp))
    tmp.rename(merged)  # the merged dir appears whole or not at all
    return merged


def system_name(cfg: DictConfig) -> str:
    return cfg.system or f"sft:{Path(str(cfg.checkpoint)).resolve().parent.name}"


def build_requests(prompts: list[str], system_prompt: str) -> list[ChatRequest]:
    """One chat per encounter: the training system turn, then the encounter prompt."""
    return [ChatRequest(messages=[{"role": "system", "content": system_prompt},
                                  {"role": "user", "content": p}]) for p in prompts]


def run(cfg: DictConfig, client: Any = None) -> dict[str, Any]:
    """Generate, parse and write predictions.jsonl + manifest.json into `cfg.output_dir`.

    Args:
        cfg: the composed `generate` config.
        client: an `earlydx.llm` client to use instead of building one from `cfg.llm` (tests).
    """
    cfg = apply_smoke(cfg)
    data = load_audit_dir(cfg.audit_dir)
    variant = str(cfg.input_variant)
    column = prompt_column(variant)
    out_dir = Path(cfg.output_dir)
    llm_cfg = OmegaConf.to_container(cfg.llm, resolve=True)
    if llm_cfg.get("backend") in ("transformers", "vllm"):
        # Local backends serve the checkpoint itself (merged when it is a LoRA adapter).
        llm_cfg["model"] = str(resolve_checkpoint(cfg.checkpoint))
    config = stage_config(cfg)
    inputs = [*data.input_files, *sorted(Path(llm_cfg["model"]).glob("*.safetensors"))]
    if already_done(out_dir, config, inputs, force=bool(cfg.force)):
        return {"skipped": True, "output_dir": str(out_dir)}

    test = encounters(data, "test", limit=cfg.limit_test)
    system_prompt = load_system_prompt(cfg.system_prompt_file)
    requests = build_requests(test[column].to_list(), system_prompt)
    client = client or build_client(llm_cfg)
    sampling = SamplingParams(**OmegaConf.to_container(cfg.sampling, resolve=True))
    template_version = f"{SYSTEM_PROMPT_VERSION}+chat-template-of-checkpoint"
    results = client.generate(requests, sampling=sampling, template_version=template_version,
                              desc=f"generate {variant}")

    system = system_name(cfg)
    rows, parse_failures, call_failures = [], 0, 0
    for enc, result in zip(test.iter_rows(named=True), results, strict=True):
        parsed = parse_diagnoses(result.text or "")
        call_failures += int(not result.ok)
        parse_failures += int(result.ok and not parsed.ok)
        rows.append(prediction_row(
            stay_id=enc["stay_id"], subject_id=enc["subject_id"], system=system, input_variant=variant,
            diagnoses=parsed.diagnoses[: cfg.max_diagnoses] if cfg.max_diagnoses else parsed.diagnoses,
            raw_text=result.text, model_id=llm_cfg["model"], template_version=template_version,
            dataset_fingerprint=data.fingerprint))
    summary = {"parse_failures": parse_failures, "call_failures": call_failures,
               "llm": client.stats.summary() if hasattr(client, "stats") else None}
    log.info("generate %s: %d rows, %d parse failures, %d call failures", variant, len(rows), parse_failures,
             call_failures)
    finish_stage(out_dir, "generate", config, inputs, rows, extra={"generation": summary})
    return {"skipped": False, "output_dir": str(out_dir), **summary}


@hydra.main(version_base="1.3", config_path="../conf", config_name="generate")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
