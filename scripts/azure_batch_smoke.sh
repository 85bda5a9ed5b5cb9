#!/usr/bin/env bash
# The first run on a real Azure Batch account (never in CI: it needs a subscription, and costs a few cents).
#
#   az login
#   BATCH_ACCOUNT=mybatch RESOURCE_GROUP=mygroup scripts/azure_batch_smoke.sh
#
# What only Azure can show: the account found with az's login and its checks passing, a pool of one small VM
# booting the image chosen from the account's supported images, three Batch tasks running a 3-job sweep, their
# metrics read back through the task file API, and everything deleted at the end (the script checks that no pool
# of its prefix is left). docs/azure-batch.md has the expected output. Options (environment): VM_SIZE (default
# Standard_D2s_v3), POOL_PREFIX (default smoke), DATA_DIR (default a new temporary folder).
set -euo pipefail

: "${BATCH_ACCOUNT:?set BATCH_ACCOUNT to the name of your Batch account}"
: "${RESOURCE_GROUP:?set RESOURCE_GROUP to the resource group of the Batch account}"
VM_SIZE="${VM_SIZE:-Standard_D2s_v3}"
POOL_PREFIX="${POOL_PREFIX:-smoke}"
WORK="$(mktemp -d)"
DATA_DIR="${DATA_DIR:-$WORK/local}"

step() { printf '\n== %s\n' "$*"; }

cleanup() {
    step "cleanup: delete the cluster (its pool and Batch job), stop the service"
    az batchai cluster delete -n smoke -g batchai-local -w local -y >/dev/null 2>&1 || true
    az batchai sweep local stop --data-dir "$DATA_DIR" -o table || true
    left="$(az batch pool list --account-name "$BATCH_ACCOUNT" --account-endpoint \
        "$(az batch account show -n "$BATCH_ACCOUNT" -g "$RESOURCE_GROUP" --query accountEndpoint -o tsv)" \
        --query "[?starts_with(id, '$POOL_PREFIX-')].id" -o tsv 2>/dev/null || true)"
    if [ -n "$left" ]; then
        echo "pools left (delete them: az batch pool delete --pool-id ID): $left"
    else
        echo "no pool of prefix $POOL_PREFIX is left"
    fi
}
trap cleanup EXIT

step "local start --scheduler azure-batch"
az batchai sweep local start --data-dir "$DATA_DIR" --scheduler azure-batch --batch-account "$BATCH_ACCOUNT" \
    -g "$RESOURCE_GROUP" --pool-prefix "$POOL_PREFIX" -o table

step "cluster create: a pool of one $VM_SIZE node"
az batchai cluster create -n smoke -g batchai-local -w local -s "$VM_SIZE" -t 1 -u batchai \
    -p "Smoke-$(openssl rand -hex 6)-0A!" -o none
az batchai cluster show -n smoke -g batchai-local -w local \
    --query "{vmSize:vmSize, nodes:currentNodeCount, allocationState:allocationState}" -o table

step "a 3-job sweep"
cat > "$WORK/sweep.yaml" <<'YAML'
jobNamePrefix: smoke
parameters:
  - {name: X, type: discrete, values: [3, 1, 2]}
job:
  nodeCount: 1
  stdOutErrPathPrefix: $AZ_BATCHAI_JOB_TEMP
  customToolkitSettings: {commandLine: 'echo epoch=1 loss={{X}}; uname -sm'}
YAML
(cd "$WORK" && az batchai sweep submit -g batchai-local -w local -e smoke -n x --spec sweep.yaml -c smoke -o table)
az batchai sweep status -g batchai-local -w local -e smoke -n x --wait --interval 15 -o table

step "metrics (read through Batch's task file API)"
az batchai sweep metrics -g batchai-local -w local -e smoke -n x --metric loss --goal min -o table

step "local status: the pool and its nodes"
az batchai sweep local status --data-dir "$DATA_DIR" --query "pools" -o table
