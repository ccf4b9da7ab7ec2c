"""Zero-shot and few-shot prompting baselines through the shared LLM layer (earlydx.llm).

Commands:
    python -m baselines.prompting llm=openai llm.model=Qwen/Qwen3.5-27B              # zero-shot
    python -m baselines.prompting mode=few_shot llm=openai llm.model=...              # 5 random exemplars
    python -m baselines.prompting mode=few_shot exemplars.strategy=nearest llm=vllm llm.model=/models/x
    python -m baselines.prompting debug=smoke audit_dir=outputs/tiny_audit           # tiny model, CPU

Prompts come from `baselines/templates/<mode>.jinja` (versioned); answers are read by
`earlydx.parsing.parse_diagnoses`. Each answer gives rows for `<system>` and for its top-k truncations
`<system>@top<k>` (no new calls). Unanswered requests and unparseable answers are kept as rows with no
diagnoses and counted in the manifest (`llm`, `parse_failures`, `parse_failure_reasons`).
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from baselines.common import (
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
from baselines.prompts import exemplar_pool, load_template, select_exemplars
from earlydx.parsing import parse_diagnoses

log = logging.getLogger(__name__)


def resolve_names(cfg: DictConfig) -> DictConfig:
    """Fill `system` and `output_dir` when null (they depend on the model name)."""
    cfg = OmegaConf.merge(cfg, {})  # a copy: the caller's config stays as given
    if not cfg.get("system"):
        cfg.system = f"{cfg.mode}:{Path(str(cfg.llm.model)).name}"
    if not cfg.get("output_dir"):
        safe = re.sub(r"[^A-Za-z0-9._@-]+", "_", str(cfg.system))
        cfg.output_dir = str(Path(cfg.paths.output_dir) / "predictions" / safe)
    return cfg


def smoke_setup(cfg: DictConfig, train_texts: list[str]) -> DictConfig:
    """debug=smoke: swap in `smoke_llm` and build its tiny model once if it is missing."""
    if not cfg.get("smoke") or cfg.get("smoke_llm") is None:
        return cfg
    original = cfg
    cfg = OmegaConf.merge(cfg, {})
    cfg.llm = cfg.smoke_llm
    keep_cli_overrides(cfg, original, cfg.smoke_llm, prefix="llm.")
    model_dir = Path(cfg.llm.model)
    # Only the preset's own tiny model is built; a model named on the command line must exist.
    if model_dir == Path(original.smoke_llm.model) and not (model_dir / "config.json").is_file():
        from earlydx.tiny_models import build_tiny_checkpoint

        build_tiny_checkpoint(train_texts, model_dir, kind="qwen3_5", vocab_size=400)
    return cfg


def build_requests(template: Any, prompts: list[str], exemplars: list[list[dict]] | None) -> list:
    """One chat request per prompt, rendered from the template (with that prompt's exemplars)."""
    from earlydx.llm import ChatRequest

    return [ChatRequest(messages=template.render(prompt=p, exemplars=exemplars[i] if exemplars else []))
            for i, p in enumerate(prompts)]


def run(cfg: DictConfig, client: Any = None) -> dict[str, Any]:
    """Prompt the model for every test encounter and input variant; returns the manifest.

    Args:
        cfg: The composed `prompting` config.
        client: An object with the contract-6 interface (`generate`, `stats`); default
            `earlydx.llm.build_client(cfg.llm)`. Tests pass an in-process fake.
    """
    from earlydx.llm import SamplingParams, build_client

    cfg = apply_smoke(cfg)
    data = load_audit_dir(cfg.audit_dir)
    train = encounters(data, "train")
    cfg = resolve_names(smoke_setup(cfg, train["prompt"].to_list()) if client is None else cfg)
    out_dir = Path(cfg.output_dir)
    config = stage_config(cfg)
    if already_done(out_dir, config, data.input_files, force=cfg.get("force", False)):
        return json.loads((out_dir / "manifest.json").read_text())

    template = load_template(cfg.template)
    test = encounters(data, "test", cfg.get("limit_test"))
    sampling = SamplingParams(**OmegaConf.to_container(cfg.sampling, resolve=True))
    own_client = client is None
    client = client or build_client(cfg.llm)
    rows: list[dict[str, Any]] = []
    failures: Counter[str] = Counter()
    llm_errors = 0
    exemplar_ids: dict[str, list[int]] = {}
    try:
        for variant in cfg.input_variants:
            prompts = test[prompt_column(variant)].to_list()
            exemplars = None
            if cfg.mode == "few_shot":
                ex = cfg.exemplars
                exemplars = select_exemplars(exemplar_pool(data, ex.label_pool), prompts, int(ex.n), ex.strategy,
                                             int(ex.seed), variant, ex.get("max_chars"), ex.get("max_diagnoses"))
                if exemplars and ex.strategy == "random":
                    exemplar_ids[variant] = [e["stay_id"] for e in exemplars[0]]
            requests = build_requests(template, prompts, exemplars)
            results = client.generate(requests, sampling=sampling, template_version=template.version,
                                      desc=f"{cfg.system} {variant}")
            for sid, subj, res in zip(test["stay_id"].to_list(), test["subject_id"].to_list(), results, strict=True):
                if not res.ok:
                    llm_errors += 1
                parsed = parse_diagnoses(res.text)
                if not parsed.ok:
                    failures[parsed.reason or "unknown"] += 1
                for system, dx in [(cfg.system, parsed.diagnoses)] + [
                        (f"{cfg.system}@top{k}", parsed.top(int(k))) for k in cfg.truncations]:
                    rows.append(prediction_row(stay_id=sid, subject_id=subj, system=system, input_variant=variant,
                                               diagnoses=dx, raw_text=res.text, model_id=str(cfg.llm.model),
                                               template_version=template.version,
                                               dataset_fingerprint=data.fingerprint))
    finally:
        if own_client:
            client.close()
    n_answers = test.height * len(cfg.input_variants)
    log.info("%s: %d answers, %d LLM errors, %d parse failures %s", cfg.system, n_answers, llm_errors,
             sum(failures.values()), dict(failures))
    stats = client.stats.as_dict() if hasattr(client, "stats") else None
    return finish_stage(out_dir, "baselines.prompting", config, data.input_files, rows, extra={
        "template": {"path": str(template.path), "version": template.version},
        "n_answers": n_answers, "llm_errors": llm_errors, "parse_failures": sum(failures.values()),
        "parse_failure_reasons": dict(failures), "llm": stats, "exemplar_stay_ids": exemplar_ids or None})


@hydra.main(version_base="1.3", config_path="../conf", config_name="prompting")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
