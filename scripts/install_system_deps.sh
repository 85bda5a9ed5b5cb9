#!/bin/sh
# Install the system packages a group of tests needs, with apt-get, only when one of its programs is missing and
# we run as root (CI on a fresh machine does); anywhere else say what is missing and leave the machine alone (the
# tests then skip and say why, except in CI where they fail).
# Usage: scripts/install_system_deps.sh GROUP...    groups: slurm, mpi
set -eu

packages_of() {
    case "$1" in
        # Debian's real Slurm daemons and client, and munge (never the emulator package).
        slurm) echo "slurmctld slurmd slurm-client munge" ;;
        # Debian's OpenMPI: mpirun over a job's host file (customMpi/Horovod/Chainer/CNTK jobs, docs/job-environment.md).
        mpi) echo "openmpi-bin" ;;
        *) echo "unknown group: $1" >&2; exit 2 ;;
    esac
}

programs_of() {
    case "$1" in
        slurm) echo "slurmctld slurmd sbatch squeue scontrol scancel srun sinfo munged mungekey" ;;
        mpi) echo "mpirun" ;;
    esac
}

for group in "$@"; do
    missing=""
    for program in $(programs_of "$group"); do
        PATH="$PATH:/usr/sbin:/sbin" command -v "$program" >/dev/null 2>&1 || missing="$missing $program"
    done
    [ -z "$missing" ] && continue
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "system-deps: $group tests need$missing (apt-get install $(packages_of "$group")); not root with" \
             "apt-get here, so they will be skipped" >&2
        continue
    fi
    echo "system-deps: installing $(packages_of "$group") for the $group tests" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2046
    apt-get install -y -qq --no-install-recommends $(packages_of "$group") >/dev/null
done
