"""SFT throughput of the Qwen3.5-4B architecture: tokens/s per GPU and MFU, TRL defaults vs our configuration.

    .venv/bin/python -m benchmarks.sft_throughput --steps 5                 # one GPU, random 4B weights, 4k-8k tokens
    .venv/bin/python -m benchmarks.sft_throughput --config /path/to/Qwen3.5-4B/config.json --steps 5
    .venv/bin/python -m benchmarks.sft_throughput --tiny                    # CPU: tiny model, short sequences

No download: the model is built from a config with random weights (`--config` reads a real checkpoint's
config.json; otherwise built-in 4B dims, printed with the parameter count). Both variants train on the same
synthetic token sequences through the real `SFTTrainer`, with the same batch size:

- `trl-defaults`: `SFTConfig()` defaults (padded batches, no Liger, TRL's default gradient checkpointing).
- `ours`: conf/trainer/default.yaml settings that matter for speed: Liger kernels when importable, gradient
  checkpointing, and padding-free batches only if the probe (train/packing.py) shows them exact on this
  machine (fla + causal-conv1d kernels); fla / causal-conv1d themselves are used by transformers whenever
  importable, in both variants; the active kernels are printed.

FLOPs per trained token (PaLM-style model FLOPs, so MFU is comparable across setups; recomputation from
gradient checkpointing is NOT counted):
- matmuls: 6 * N_matmul, N_matmul = all parameters minus an untied input embedding (a lookup, not a matmul);
- full-attention layers: 3 * 4 * s * d_attn per layer (scores and values, forward 4*s*d_attn, PaLM convention:
  the causal half is not subtracted);
- Gated DeltaNet layers: 3 * H_v * (2*C*d_k + 4*C*(d_k + d_v) + 6*d_k*d_v + 2*C^2/3) per layer for the chunked
  delta rule (chunk C=64: intra-chunk K K^T, the UT transform applied to K and V, intra-chunk Q K^T and its
  product with V, the inter-chunk state read, correction and update, and the triangular solve), plus the short
  causal convolution 3 * 2 * kernel * conv_dim.
Only real (non-padding) tokens count towards tokens/s and MFU.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

# The project is installed (pip install -e .), so its packages import from anywhere.
from earlydx import tiny_models
from train.config import is_importable
from train.packing import padding_free_gap, random_sequences

# Qwen3.5-4B text dims used when no --config is given (approximate public 4B shape: 32 layers, 3:1 linear to
# full attention; the printed parameter count shows what was built).
QWEN35_4B = dict(
    vocab_size=248320, hidden_size=2560, intermediate_size=9216, num_hidden_layers=32, num_attention_heads=16,
    num_key_value_heads=4, head_dim=256, linear_num_key_heads=16, linear_num_value_heads=32,
    linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4, tie_word_embeddings=True,
    max_position_embeddings=32768,
)
# Dense bf16 peak of one GPU (TFLOP/s), by device-name substring.
PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "GH200": 989.0, "B200": 2250.0, "A100": 312.0, "L40S": 362.0,
               "A6000": 155.0, "L4": 121.0}
DELTA_CHUNK = 64


def build_config(args: argparse.Namespace):
    from transformers import Qwen3_5TextConfig

    if args.tiny:
        return None
    if args.config:
        raw = json.loads(Path(args.config).read_text())
        raw = raw.get("text_config", raw)  # a multimodal checkpoint's config.json nests the text model
        raw = {k: v for k, v in raw.items() if k not in ("architectures", "model_type", "transformers_version")}
        return Qwen3_5TextConfig(**raw)
    return Qwen3_5TextConfig(**QWEN35_4B)


def flops_per_token(config, n_matmul: int, seq_len: int) -> float:
    """Training FLOPs for one token of a sequence of `seq_len` tokens (see the module docstring)."""
    d_attn = config.num_attention_heads * config.head_dim
    n_full = sum(t == "full_attention" for t in config.layer_types)
    n_linear = sum(t == "linear_attention" for t in config.layer_types)
    dk, dv, hv = config.linear_key_head_dim, config.linear_value_head_dim, config.linear_num_value_heads
    c = DELTA_CHUNK
    delta = hv * (2 * c * dk + 4 * c * (dk + dv) + 6 * dk * dv + 2 * c * c / 3)
    conv_dim = 2 * config.linear_num_key_heads * dk + hv * dv
    conv = 2 * config.linear_conv_kernel_dim * conv_dim
    return 6 * n_matmul + 3 * (n_full * 4 * seq_len * d_attn + n_linear * (delta + conv))


def matmul_params(model) -> int:
    total = sum(p.numel() for p in model.parameters())
    tied = model.config.get_text_config().tie_word_embeddings
    return total if tied else total - model.get_input_embeddings().weight.numel()


def peak_flops(args: argparse.Namespace) -> float | None:
    if args.peak_tflops:
        return args.peak_tflops * 1e12
    if not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name(0)
    for key, tflops in PEAK_TFLOPS.items():
        if key in name:
            return tflops * 1e12
    return None


class StepTimer:
    """TrainerCallback timing each optimizer step (CUDA-synchronised)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._t0 = 0.0

    def _sync(self) -> None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    def on_step_begin(self, *a, **k):
        self._sync()
        self._t0 = time.perf_counter()

    def on_step_end(self, *a, **k):
        self._sync()
        self.times.append(time.perf_counter() - self._t0)


def make_model(config, tokenizer, dtype: torch.dtype, device: str):
    from transformers import Qwen3_5ForCausalLM

    if config is None:
        model = tiny_models.build_tiny_qwen35(tokenizer, seed=0)
    else:
        config.pad_token_id = tokenizer.pad_token_id
        torch.manual_seed(0)
        with torch.device(device):  # initialise on the GPU: seconds instead of minutes for 4B parameters
            model = Qwen3_5ForCausalLM._from_config(config, dtype=dtype)
    model.config.use_cache = False
    return model.to(device=device, dtype=dtype)


def run_variant(name: str, settings: dict[str, Any], args: argparse.Namespace, config, tokenizer,
                lengths: list[int], out_dir: Path) -> dict[str, Any]:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    model = make_model(config, tokenizer, torch.bfloat16 if cuda else torch.float32, device)
    vocab = model.config.vocab_size
    seqs = random_sequences(vocab, lengths, seed=1)
    data = Dataset.from_list([{"input_ids": s} for s in seqs])
    timer = StepTimer()
    callback = type("Timer", (TrainerCallback,), {"on_step_begin": timer.on_step_begin,
                                                  "on_step_end": timer.on_step_end})()
    sft_args = SFTConfig(
        output_dir=str(out_dir / name), max_steps=args.steps + args.warmup, per_device_train_batch_size=args.batch,
        gradient_accumulation_steps=1, bf16=cuda, use_cpu=not cuda, report_to="none", save_strategy="no",
        logging_steps=10**6, max_length=None, dataset_num_proc=None, dataloader_num_workers=0, seed=0,
        dataloader_drop_last=True, **settings,
    )
    trainer = SFTTrainer(model=model, args=sft_args, train_dataset=data, processing_class=tokenizer,
                         callbacks=[callback])
    # Deterministic order so both variants see the same batches: disable shuffling.
    train_ds = trainer.train_dataset
    trainer._get_train_sampler = lambda *a, **k: torch.utils.data.SequentialSampler(train_ds)
    n_matmul = matmul_params(model)
    result: dict[str, Any] = {"variant": name, "params": sum(p.numel() for p in model.parameters()),
                              "settings": {k: v for k, v in settings.items() if k != "model_init_kwargs"}}
    try:
        trainer.train()
    except torch.cuda.OutOfMemoryError as exc:  # report, do not crash the comparison
        result["error"] = f"OOM: {str(exc).splitlines()[0]}"
        return result
    finally:
        peak_mem = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
        del trainer, model
        if cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
    timed = timer.times[args.warmup:]
    per_step = args.batch
    batches = [lengths[i * per_step:(i + 1) * per_step] for i in range(args.warmup, args.warmup + len(timed))]
    tokens = sum(sum(b) for b in batches)
    cfg = config if config is not None else tiny_models.build_tiny_qwen35(tokenizer).config
    flops = sum(flops_per_token(cfg, n_matmul, n) * n for b in batches for n in b)
    seconds = sum(timed)
    peak = peak_flops(args)
    result.update({"steps_timed": len(timed), "seconds": seconds, "tokens": tokens,
                   "tokens_per_s_per_gpu": tokens / seconds, "model_tflops_per_s": flops / seconds / 1e12,
                   "mfu": (flops / seconds / peak) if peak else None, "peak_mem_gib": peak_mem})
    return result


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="timed optimizer steps per variant")
    parser.add_argument("--warmup", type=int, default=1, help="untimed first steps (allocation, autotuning)")
    parser.add_argument("--batch", type=int, default=2, help="sequences per step (both variants)")
    parser.add_argument("--min-len", type=int, default=4096)
    parser.add_argument("--max-len", type=int, default=8192)
    parser.add_argument("--config", help="config.json of a Qwen3.5 checkpoint (default: built-in 4B dims)")
    parser.add_argument("--tiny", action="store_true", help="tiny model and short sequences (CPU smoke mode)")
    parser.add_argument("--peak-tflops", type=float, help="peak dense bf16 TFLOP/s of one device, for MFU")
    parser.add_argument("--variants", default="trl-defaults,ours")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    if args.tiny:
        args.min_len, args.max_len = min(args.min_len, 48), min(args.max_len, 96)
    logging.basicConfig(level=logging.WARNING)

    tokenizer = tiny_models.train_tokenizer(["Final diagnoses:\n1. NSTEMI\n2. Sepsis"] * 20, vocab_size=300)
    config = build_config(args)
    n_seq = (args.steps + args.warmup) * args.batch
    rng = random.Random(0)
    lengths = [rng.randint(args.min_len, args.max_len) for _ in range(n_seq)]
    cuda = torch.cuda.is_available()
    kernels = {m: is_importable(m) for m in ("fla", "causal_conv1d", "liger_kernel", "flash_attn")}

    # Padding-free only where proven exact here: probe the real architecture on short sequences.
    # float32, so that a boundary leak is not lost in bf16 rounding noise.
    probe_model = make_model(config, tokenizer, torch.float32, "cuda" if cuda else "cpu")
    try:
        gap = padding_free_gap(probe_model, random_sequences(probe_model.config.vocab_size, (61, 130, 47)))
    except ValueError as exc:  # transformers refuses packed sequences without the kernels
        gap = math.inf
        print(f"padding-free probe: refused by transformers ({str(exc)[:100]}...)")
    tol = 1e-2 if cuda else 1e-4  # GPU kernels (TF32, other tilings) differ slightly even when exact
    padding_free_ok = gap < tol
    del probe_model
    print(f"device: {torch.cuda.get_device_name(0) if cuda else 'cpu'}; kernels: {kernels}")
    print(f"padding-free probe: max |per-token loss gap| = {gap:.3g} -> "
          f"{'exact, used' if padding_free_ok else 'NOT exact, padded batches'}")

    ours = {"activation_checkpointing": True, "use_liger_kernel": bool(cuda and kernels["liger_kernel"]),
            "padding_free": padding_free_ok}
    variants = {"trl-defaults": {}, "ours": ours}
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.variants.split(","):
            res = run_variant(name, variants[name], args, config, tokenizer, lengths, Path(tmp))
            res["padding_free_gap"] = gap
            results.append(res)
            if "error" in res:
                print(f"{name:>13}: {res['error']}")
                continue
            mfu = f"{100 * res['mfu']:.1f}%" if res["mfu"] is not None else "n/a (pass --peak-tflops)"
            mem = f", peak mem {res['peak_mem_gib']:.1f} GiB" if res["peak_mem_gib"] is not None else ""
            print(f"{name:>13}: {res['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU, "
                  f"{res['model_tflops_per_s']:.2f} model TFLOP/s, MFU {mfu}{mem} "
                  f"({res['params'] / 1e6:,.1f}M params, {res['steps_timed']} steps, "
                  f"{args.min_len}-{args.max_len} tokens, batch {args.batch})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    return results


if __name__ == "__main__":
    main()
