#!/usr/bin/env bash
# Supervised fine-tuning on one or more GPU nodes: one `accelerate launch` per node under srun, DeepSpeed
# from the Hydra group conf/deepspeed/. Hydra overrides pass straight through to `python -m train.sft`.
#
# Usage (from the repository root; Slurm log files go to outputs/slurm/, create it once):
#   mkdir -p outputs/slurm
#   sbatch slurm/sft.sh deepspeed=zero3 data.sft_file=outputs/sft_data/sft_train.jsonl
#   sbatch --nodes=4 --partition=gpu slurm/sft.sh deepspeed=zero3 run_name=sft-4node
#   sbatch slurm/sft.sh model=qwen3_5_4b_lora trainer=lora
#   DRY_RUN=1 bash slurm/sft.sh deepspeed=zero3        # print the final command, run nothing
#
# Cluster specifics (modules, virtualenv, HF cache, NCCL settings) go in slurm/env.local.sh (git-ignored; copy
# slurm/env.example.sh); partition and account go on the sbatch command line.
# Requeue-safe: the run directory outputs/sft/${run_name} is config, so a requeued job (same SLURM_JOB_ID)
# resumes from its latest checkpoint; SIGUSR1 five minutes before the time limit requeues the job.
#SBATCH --job-name=earlydx-sft
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=64
#SBATCH --mem=0
#SBATCH --time=24:00:00
#SBATCH --output=outputs/slurm/%x-%j.out
#SBATCH --error=outputs/slurm/%x-%j.err
#SBATCH --requeue
#SBATCH --signal=B:USR1@300
set -euo pipefail

REPO_DIR=${EARLYDX_ROOT:-${SLURM_SUBMIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}}
cd "$REPO_DIR"
ENV_FILE=${SLURM_ENV_FILE:-slurm/env.local.sh}
if [[ -f "$ENV_FILE" ]]; then
  # shellcheck source=/dev/null
  source "$ENV_FILE"
fi

NNODES=${SLURM_NNODES:-1}
GPUS_PER_NODE=${GPUS_PER_NODE:-${SLURM_GPUS_ON_NODE:-8}}
NUM_PROCESSES=$((NNODES * GPUS_PER_NODE))
# Rank 0's host is the rendezvous point; the port is derived from the job id so that two jobs sharing a node
# do not collide, and a requeue of the same job reuses it.
if [[ -n "${SLURM_JOB_NODELIST:-}" ]] && command -v scontrol >/dev/null; then
  MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
else
  MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
fi
MASTER_PORT=${MASTER_PORT:-$((20000 + ${SLURM_JOB_ID:-0} % 20000))}
export MASTER_ADDR MASTER_PORT
export WANDB_MODE=${WANDB_MODE:-offline} HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
ACCELERATE=${ACCELERATE:-accelerate}
ACCELERATE_CONFIG=${ACCELERATE_CONFIG:-conf/accelerate/multi_gpu.yaml}

# The machine rank differs per node: it is expanded by the shell srun starts on each node (SLURM_NODEID).
# shellcheck disable=SC2016
LAUNCH='exec '"$ACCELERATE"' launch --config_file '"$ACCELERATE_CONFIG"' --num_machines '"$NNODES"' \
  --num_processes '"$NUM_PROCESSES"' --machine_rank "${SLURM_NODEID:-0}" --main_process_ip '"$MASTER_ADDR"' \
  --main_process_port '"$MASTER_PORT"' --rdzv_backend static -m train.sft "$@"'
CMD=(srun --nodes="$NNODES" --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c "$LAUNCH" train.sft "$@")

if [[ "${DRY_RUN:-0}" == "1" ]]; then
  echo "MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT NNODES=$NNODES GPUS_PER_NODE=$GPUS_PER_NODE"
  printf '%q ' "${CMD[@]}"
  echo
  exit 0
fi

mkdir -p outputs/slurm
requeue() {
  echo "time limit near: requeueing job ${SLURM_JOB_ID:-?} (it resumes from its latest checkpoint)"
  scontrol requeue "${SLURM_JOB_ID}"
}
trap requeue USR1
# srun in the background so that the USR1 trap runs while training is in progress.
"${CMD[@]}" &
wait $!
