#!/usr/bin/env bash
# Serve a model with vLLM's OpenAI-compatible server (the judge, or a trained checkpoint) and print its endpoint.
# Extra arguments go to `vllm serve` unchanged.
#
# Usage (from the repository root; mkdir -p outputs/slurm once):
#   sbatch slurm/serve_vllm.sh Qwen/Qwen3.5-27B --served-model-name judge --tensor-parallel-size 4
#   sbatch --gpus-per-node=1 slurm/serve_vllm.sh outputs/sft/sft-qwen3_5_4b/final --served-model-name qwen35-sft
#   DRY_RUN=1 bash slurm/serve_vllm.sh Qwen/Qwen3.5-27B --served-model-name judge
# The endpoint (http://<node>:<port>/v1) is printed and written to outputs/slurm/vllm-<job id>.endpoint; point
# the llm config at it: llm=openai llm.base_url=http://<node>:<port>/v1 llm.model=judge.
#SBATCH --job-name=earlydx-vllm
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --gpus-per-node=4
#SBATCH --cpus-per-task=32
#SBATCH --time=12:00:00
#SBATCH --output=outputs/slurm/%x-%j.out
#SBATCH --error=outputs/slurm/%x-%j.err
set -euo pipefail

if [[ $# -lt 1 || "$1" == -* ]]; then
  echo "usage: $0 MODEL_PATH_OR_ID [vllm serve args...]" >&2
  exit 2
fi
MODEL=$1
shift

REPO_DIR=${EARLYDX_ROOT:-${SLURM_SUBMIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}}
cd "$REPO_DIR"
ENV_FILE=${SLURM_ENV_FILE:-slurm/env.local.sh}
if [[ -f "$ENV_FILE" ]]; then
  # shellcheck source=/dev/null
  source "$ENV_FILE"
fi

PORT=${PORT:-$((8000 + ${SLURM_JOB_ID:-0} % 1000))}
# Listen on the node's own address only (reachable inside the cluster, never a public host).
HOST=${VLLM_HOST:-$(hostname -f 2>/dev/null || hostname)}
ENDPOINT="http://${HOST}:${PORT}/v1"
VLLM=${VLLM:-vllm}
CMD=("$VLLM" serve "$MODEL" --host "$HOST" --port "$PORT" "$@")

echo "endpoint: $ENDPOINT"
if [[ "${DRY_RUN:-0}" == "1" ]]; then
  printf '%q ' "${CMD[@]}"
  echo
  exit 0
fi
mkdir -p outputs/slurm
echo "$ENDPOINT" > "outputs/slurm/vllm-${SLURM_JOB_ID:-local}.endpoint"
exec "${CMD[@]}"
