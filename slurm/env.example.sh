# Cluster specifics for slurm/*.sh. Copy to slurm/env.local.sh (git-ignored) and edit; every script sources
# it on the node it starts on. Partition, account and QoS go on the sbatch command line, e.g.
#   sbatch --partition=gpu --account=myproject slurm/sft.sh deepspeed=zero3
# shellcheck shell=bash

# Software environment.
# module load cuda/12.4 gcc/12
# source /path/to/earlydx/.venv/bin/activate

# Models and data: a shared HF cache filled beforehand on a login node (compute nodes are often offline).
# export HF_HOME=/scratch/$USER/hf
export HF_HUB_OFFLINE=1
export WANDB_MODE=offline

# GPUs per node when Slurm does not report them (SLURM_GPUS_ON_NODE).
# export GPUS_PER_NODE=8
# Interconnect.
# export NCCL_SOCKET_IFNAME=ib0
# export NCCL_IB_DISABLE=0
