#!/usr/bin/env bash
# A CI step as a pipeline author writes it (docs/pipelines.md): bash without a terminal, stdin closed,
# `set -euo pipefail`, every az call under `timeout`, its own az config dir and local service, a cleanup trap, and
# each outcome's exit code kept for the script to branch on. tests/cli/test_pipeline_script.py runs it in a folder
# holding the sweep files and checks what it records in ./out: <step>.rc (the exit code) and <step>.out (stdout).
set -euo pipefail

cd "$1"
out="$PWD/out"
mkdir -p "$out"
export AZURE_CONFIG_DIR="$PWD/azure-config"   # this pipeline's own config: its service and data go with it
sweep=(-g batchai-local -w local -e ci)

# step NAME ARGS...: one az call under timeout; its exit code and stdout are recorded, the script goes on.
step() {
    local name=$1 rc=0
    shift
    timeout -k 10s 120s az "$@" >"$out/$name.out" || rc=$?
    echo "$rc" >"$out/$name.rc"
}

cleanup() {
    timeout 60s az batchai sweep stop "${sweep[@]}" -n cancelled --yes --only-show-errors -o none || true
    timeout 60s az batchai sweep local stop --only-show-errors -o none || true
}
trap cleanup EXIT

step local-start batchai sweep local start --slots 2 -o json
step bad-input batchai sweep create "${sweep[@]}" -n bad --spec bad.yaml --plan-only -o json
step not-found batchai sweep status "${sweep[@]}" -n no-such-sweep -o json
step usage batchai sweep status "${sweep[@]}" -n failing --no-such-option
step jobs-failed batchai sweep submit "${sweep[@]}" -n failing --spec failing.yaml -c local --wait --interval 0.2s -o json
step submit-slow batchai sweep submit "${sweep[@]}" -n slow --spec slow.yaml -c local -o json
step timeout batchai sweep status "${sweep[@]}" -n slow --wait --timeout 1s --interval 0.2s -o json
step stop batchai sweep stop "${sweep[@]}" -n slow --yes -o json
step stop-again batchai sweep stop "${sweep[@]}" -n slow --yes -o json
step stopped batchai sweep status "${sweep[@]}" -n slow --wait --interval 0.2s -o json
step run batchai sweep run "${sweep[@]}" -n tuned --spec tuned.yaml -c local --poll-interval 0.2s -o json

# The step is cancelled (the CI runner sends SIGTERM) once the run's jobs are running; --preserve-status passes the
# run's own exit code (143) on instead of timeout's 124.
timeout --preserve-status -s TERM 10m az batchai sweep run "${sweep[@]}" -n cancelled --spec hanging.yaml -c local \
    --poll-interval 0.2s --stop-on-exit -o json >"$out/cancelled.out" &
run=$!
for _ in $(seq 60); do
    running=$(timeout 60s az batchai sweep status "${sweep[@]}" -n cancelled --query counts.running -o tsv \
        --only-show-errors 2>/dev/null || true)
    [ "$running" = 2 ] && break
    sleep 0.5
done
kill -TERM "$run"
rc=0
wait "$run" || rc=$?
echo "$rc" >"$out/cancelled.rc"
step after-cancel batchai sweep status "${sweep[@]}" -n cancelled --query counts -o json

step delete batchai sweep delete "${sweep[@]}" -n failing --yes -o json
step delete-again batchai sweep delete "${sweep[@]}" -n failing --yes -o json
step local-stop batchai sweep local stop -o json
step no-service batchai sweep status "${sweep[@]}" -n failing -o json

# What a pipeline does with the codes: a failed job is a red step, a timeout a retry, no service an infra error.
case "$(cat "$out/jobs-failed.rc")" in
    4) echo "jobs of sweep failing failed: see az batchai sweep status --state failed" >&2 ;;
    *) echo "unexpected exit code for failed jobs" >&2; exit 1 ;;
esac
