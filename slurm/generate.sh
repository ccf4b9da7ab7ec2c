#!/usr/bin/env bash
# Predictions of a post-trained checkpoint (python -m eval.generate) on a GPU node; arguments are Hydra
# overrides passed through unchanged.
#
# Usage (from the repository root; mkdir -p outputs/slurm once):
#   sbatch slurm/generate.sh checkpoint=outputs/sft/sft-qwen3_5_4b/final input_variant=full llm=vllm
#   sbatch slurm/generate.sh checkpoint=outputs/sft/sft-qwen3_5_4b/final input_variant=cc_only llm=vllm
#   DRY_RUN=1 bash slurm/generate.sh checkpoint=... input_variant=full
#SBATCH --job-name=earlydx-generate
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --gpus-per-node=1
#SBATCH --cpus-per-task=16
#SBATCH --time=08:00:00
#SBATCH --output=outputs/slurm/%x-%j.out
#SBATCH --error=outputs/slurm/%x-%j.err
#SBATCH --requeue
set -euo pipefail

REPO_DIR=${EARLYDX_ROOT:-${SLURM_SUBMIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}}
cd "$REPO_DIR"
ENV_FILE=${SLURM_ENV_FILE:-slurm/env.local.sh}
if [[ -f "$ENV_FILE" ]]; then
  # shellcheck source=/dev/null
  source "$ENV_FILE"
fi
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
PYTHON=${PYTHON:-python}
# eval.generate caches every request, so a requeued job continues where it stopped.
CMD=(srun --ntasks=1 "$PYTHON" -m eval.generate "$@")

if [[ "${DRY_RUN:-0}" == "1" ]]; then
  printf '%q ' "${CMD[@]}"
  echo
  exit 0
fi
mkdir -p outputs/slurm
exec "${CMD[@]}"
