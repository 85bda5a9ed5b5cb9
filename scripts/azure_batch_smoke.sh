#!/usr/bin/env bash
# The first run of the Azure Batch scheduler on a subscription: what only Azure can show, checked by a person with a
# Batch account. Never in CI: it costs a few cents (one small VM for about a quarter of an hour). The tests run this
# script unchanged, through the real az, against the lifecycle double (tests/azurebatch/test_smoke_script.py).
#
#   az login
#   BATCH_ACCOUNT=mybatch RESOURCE_GROUP=mygroup scripts/azure_batch_smoke.sh
#
# Options (environment):
#   VM_SIZE          the pool's VM size (default Standard_D2s_v3; the account needs 2 vCPUs of its family)
#   POOL_PREFIX      the prefix of the service's pool names (default smoke)
#   DATA_DIR         the service's data dir (default a new temporary folder)
#   WAIT_MINUTES     the longest wait for the sweep, or for the pool to drain (default 30)
#   STORAGE_ACCOUNT, SHARE   an Azure file share the pool mounts (the account key fetched at cluster create, sent
#                    to Batch only): the jobs write their logs there and the service reads them with az's token
#                    (needs Storage File Data Privileged Reader), and Batch uploads each task's own stdout/stderr
#                    to its container batchai-sweep-task-logs with a user delegation SAS (needs Storage Blob Data
#                    Contributor; not checked by this script). Without them the mount is not checked.
#   GPU_VM_SIZE      a GPU size to check as well (e.g. Standard_NC4as_T4_v3; the account needs its family's quota
#                    for one node, about 0.5 USD an hour): a cluster of it gets the default GPU image (microsoft-dsvm
#                    ubuntu-hpc, with the NVIDIA drivers) and its job sees AZ_BATCHAI_NUM_GPUS equal to the GPUs
#                    `nvidia-smi -L` lists on the node (1 for the T4). Without it GPU sizes are not checked.
#   TOKEN_HOUR=1     one more job, of 65 minutes, whose log is read after az's first token expired. Without it token
#                    refresh past an hour is not checked.
#
# Checked: a cluster over the quota refused; the pool made with a supported image and this service recorded as its
# owner (metadata); a 3-job sweep succeeds on Batch tasks and its metrics read back; the pool drains to 0 nodes;
# `local stop` lists no pool holding nodes. Each check says "ok: ..." or stops the script with "FAILED: <the
# reason>" (exit code 1); the cleanup runs in every case and ends with no pool of POOL_PREFIX (exit code 1 when one
# is left). docs/azure-batch.md has the expected output.
set -euo pipefail

: "${BATCH_ACCOUNT:?set BATCH_ACCOUNT to the name of your Batch account}"
: "${RESOURCE_GROUP:?set RESOURCE_GROUP to the resource group of the Batch account}"
VM_SIZE="${VM_SIZE:-Standard_D2s_v3}"
POOL_PREFIX="${POOL_PREFIX:-smoke}"
WAIT_MINUTES="${WAIT_MINUTES:-30}"
WORK="$(mktemp -d)"
DATA_DIR="${DATA_DIR:-$WORK/local}"
G=(-g batchai-local -w local)
NOT_CHECKED=()
STARTED=''

step() { printf '\n== %s\n' "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
fail() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }

batch_endpoint() {
    az batch account show -n "$BATCH_ACCOUNT" -g "$RESOURCE_GROUP" --query accountEndpoint -o tsv
}

cleanup() {
    local rc=$? left endpoint
    trap - EXIT
    step "cleanup: delete the clusters (their pools and Batch jobs), stop the service"
    # Only once the service runs: before, az's batchai commands would go to Azure's retired Batch AI.
    for cluster in ${STARTED:+smoke smoke-over smoke-gpu}; do
        az batchai cluster delete -n "$cluster" "${G[@]}" -y >/dev/null 2>"$WORK/delete.err" \
            || grep -q 'not found\|NotFound' "$WORK/delete.err" \
            || { echo "cluster $cluster not deleted: $(tail -1 "$WORK/delete.err")"; rc=1; }
    done
    az batchai sweep local stop --data-dir "$DATA_DIR" -o table || rc=1
    if ! endpoint="$(batch_endpoint)" || ! left="$(az batch pool list --account-name "$BATCH_ACCOUNT" \
            --account-endpoint "$endpoint" --query "[?starts_with(id, '$POOL_PREFIX-')].id" -o tsv)"; then
        echo "FAILED: the pools of account $BATCH_ACCOUNT could not be listed (above): check them with az batch pool list"
        rc=1
    elif [ -n "$left" ]; then
        echo "FAILED: pools left, which may hold nodes (delete them: az batch pool delete --pool-id ID): $left"
        rc=1
    else
        echo "no pool of prefix $POOL_PREFIX is left"
    fi
    if [ "${#NOT_CHECKED[@]}" -gt 0 ]; then
        step "not checked by this run"
        printf -- '- %s\n' "${NOT_CHECKED[@]}"
    fi
    exit "$rc"
}
trap cleanup EXIT

cloud="$(az cloud show --query name -o tsv)"
case "$cloud" in
    AzureCloud|AzureChinaCloud|AzureUSGovernment) ;;
    *) NOT_CHECKED+=("Azure itself: az's cloud is $cloud, not one of Azure's, so this run showed the script's path and the service's calls, not a real quota refusal, a real image booting or the real autoscale timing") ;;
esac

step "local start --scheduler azure-batch"
az batchai sweep local start --data-dir "$DATA_DIR" --scheduler azure-batch --batch-account "$BATCH_ACCOUNT" \
    -g "$RESOURCE_GROUP" --pool-prefix "$POOL_PREFIX" -o table
STARTED=1
ok "account $BATCH_ACCOUNT found with az's login, Entra ID authentication allowed, az's Batch data role works"

step "cluster create over the vCPU quota: refused before any pool is made"
if az batchai cluster create -n smoke-over "${G[@]}" -s "$VM_SIZE" --min 0 --max 100000 -u batchai \
        -p "Smoke-$(openssl rand -hex 6)-0A!" -o none 2>"$WORK/over.err"; then
    fail "a cluster of at most 100000 $VM_SIZE nodes was not refused: cluster create does not check the vCPU quota"
fi
grep -i 'quota' "$WORK/over.err" >&2 || fail "cluster create refused the cluster without naming the quota: $(cat "$WORK/over.err")"
ok "refused, naming the quota"

step "cluster create: an autoscale pool of at most one $VM_SIZE node"
mount=()
if [ -n "${STORAGE_ACCOUNT:-}" ] && [ -n "${SHARE:-}" ]; then
    mount=(--storage-account-name "$STORAGE_ACCOUNT" --afs-name "$SHARE" --afs-mount-path afs)
    logs='$AZ_BATCHAI_MOUNT_ROOT/afs/smoke-logs'
else
    logs='$AZ_BATCHAI_JOB_TEMP'
    NOT_CHECKED+=("the pool's Azure Files mount with the account key, and the service reading it with az's token (give STORAGE_ACCOUNT and SHARE)")
fi
az batchai cluster create -n smoke "${G[@]}" -s "$VM_SIZE" --min 0 --max 1 -u batchai \
    -p "Smoke-$(openssl rand -hex 6)-0A!" "${mount[@]}" -o none
az batchai cluster show -n smoke "${G[@]}" \
    --query "{vmSize:vmSize, nodes:currentNodeCount, allocationState:allocationState}" -o table
# The pool, as Batch shows it (named <prefix>-<workspace>-<cluster>-<hash>).
az batch pool list --account-name "$BATCH_ACCOUNT" --account-endpoint "$(batch_endpoint)" \
    --query "[?starts_with(id, '$POOL_PREFIX-local-smoke-')].{pool:id, image:virtualMachineConfiguration.imageReference.offer, nodeAgent:virtualMachineConfiguration.nodeAgentSkuId, autoScale:enableAutoScale}" \
    -o table | tee "$WORK/pool.txt"
pool="$(awk 'NR == 3 {print $1}' "$WORK/pool.txt")"
[ -n "$pool" ] || fail "Batch has no pool $POOL_PREFIX-local-smoke-<hash> after cluster create"
ok "pool $pool made with an image of the account's supported images"
# The service's owner id (one per data dir) in the pool's metadata: no other service adopts or deletes it.
owner="$(az batch pool show --pool-id "$pool" --account-name "$BATCH_ACCOUNT" --account-endpoint "$(batch_endpoint)" \
    --query "metadata[?name=='batchai-sweep-owner'].value | [0]" -o tsv)"
[ -n "$owner" ] && [ "$owner" = "$(cat "$DATA_DIR/azure-batch-owner")" ] \
    || fail "pool $pool does not record this service as its owner (metadata batchai-sweep-owner: '${owner}')"
ok "pool $pool records this service as its owner"

step "a 3-job sweep: the pool grows at its next evaluation, the node boots, the tasks run"
cat > "$WORK/sweep.yaml" <<YAML
jobNamePrefix: smoke
parameters:
  - {name: X, type: discrete, values: [3, 1, 2]}
job:
  nodeCount: 1
  stdOutErrPathPrefix: $logs
  customToolkitSettings: {commandLine: 'echo epoch=1 loss={{X}}; uname -sm'}
YAML
(cd "$WORK" && az batchai sweep submit "${G[@]}" -e smoke -n x --spec sweep.yaml -c smoke -o table)
if ! az batchai sweep status "${G[@]}" -e smoke -n x --wait --interval 2 --timeout "$((WAIT_MINUTES * 60))" \
        -o table; then
    az batchai cluster show -n smoke "${G[@]}" --query "errors[].{code:code, message:message}" -o table >&2 || true
    codes="$(az batchai job list "${G[@]}" -e smoke --query "[].executionInfo.errors[0].code" -o tsv | sort -u | tr '\n' ' ')"
    fail "the sweep's jobs did not all succeed (their errors: ${codes:-none yet}; the pool's errors above)"
fi
ok "3 jobs succeeded on Batch tasks"

step "metrics (read through Batch's task file API, or the share)"
az batchai sweep metrics "${G[@]}" -e smoke -n x --metric loss --goal min -o table
read_back="$(az batchai sweep metrics "${G[@]}" -e smoke -n x --metric loss --goal min --query "length([?metric!=null])")"
[ "$read_back" = 3 ] || fail "the metrics of $read_back of the 3 jobs were read back"
ok "the 3 jobs' metrics read back"

if [ -n "${GPU_VM_SIZE:-}" ]; then
    step "a GPU size: $GPU_VM_SIZE gets the GPU image, and its job AZ_BATCHAI_NUM_GPUS of the node's GPUs"
    az batchai cluster create -n smoke-gpu "${G[@]}" -s "$GPU_VM_SIZE" --min 0 --max 1 -u batchai \
        -p "Smoke-$(openssl rand -hex 6)-0A!" -o none
    offer="$(az batch pool list --account-name "$BATCH_ACCOUNT" --account-endpoint "$(batch_endpoint)" \
        --query "[?starts_with(id, '$POOL_PREFIX-local-smoke-gpu-')].virtualMachineConfiguration.imageReference.offer | [0]" \
        -o tsv)"
    [ "$offer" = ubuntu-hpc ] || fail "the pool of $GPU_VM_SIZE got image offer '$offer', not the GPU image ubuntu-hpc (the NVIDIA drivers)"
    # The job fails unless the service's count (from the size Batch offers) is what the node's driver lists.
    cat > "$WORK/gpu.yaml" <<'YAML'
jobNamePrefix: gpu
parameters:
  - {name: X, type: discrete, values: [1]}
job:
  nodeCount: 1
  stdOutErrPathPrefix: '@LOGS@'
  customToolkitSettings: {commandLine: 'n=$(nvidia-smi -L | grep -c "^GPU"); echo "GPUs: $AZ_BATCHAI_NUM_GPUS given, $n listed"; test "$AZ_BATCHAI_NUM_GPUS" = "$n" && echo epoch=1 loss=$AZ_BATCHAI_NUM_GPUS'}
YAML
    sed -i "s|@LOGS@|$logs|" "$WORK/gpu.yaml"
    (cd "$WORK" && az batchai sweep submit "${G[@]}" -e smoke -n gpu --spec gpu.yaml -c smoke-gpu -o none)
    az batchai sweep status "${G[@]}" -e smoke -n gpu --wait --interval 2 --timeout "$((WAIT_MINUTES * 60))" -o table \
        || fail "the GPU job did not succeed: AZ_BATCHAI_NUM_GPUS is not the node's GPU count, or it has no NVIDIA driver (its log: az batchai job file stream)"
    gpus="$(az batchai sweep metrics "${G[@]}" -e smoke -n gpu --metric loss --query "[0].metric" -o tsv)"
    [ "${gpus%.*}" -ge 1 ] 2>/dev/null || fail "the GPU job saw AZ_BATCHAI_NUM_GPUS=${gpus:-nothing}"
    ok "$GPU_VM_SIZE: GPU image ubuntu-hpc, AZ_BATCHAI_NUM_GPUS=${gpus%.*} as nvidia-smi lists"
else
    NOT_CHECKED+=("a GPU size's image and AZ_BATCHAI_NUM_GPUS on a real GPU node (give GPU_VM_SIZE, e.g. Standard_NC4as_T4_v3)")
fi

if [ "${TOKEN_HOUR:-}" = 1 ]; then
    step "token refresh past an hour: a job of 65 minutes, its log read at its end"
    sed -e 's/values: \[3, 1, 2\]/values: [4]/' -e "s/'echo epoch=1 loss={{X}}; uname -sm'/'sleep 3900; echo epoch=1 loss={{X}}'/" \
        "$WORK/sweep.yaml" > "$WORK/hour.yaml"
    (cd "$WORK" && az batchai sweep submit "${G[@]}" -e smoke -n hour --spec hour.yaml -c smoke -o none)
    az batchai sweep status "${G[@]}" -e smoke -n hour --wait --interval 60 --timeout 5400 -o table \
        || fail "the 65-minute job did not succeed"
    [ "$(az batchai sweep metrics "${G[@]}" -e smoke -n hour --metric loss --query "[0].metric")" = 4.0 ] \
        || fail "the 65-minute job's log was not read back after az's first token expired"
    ok "the service renewed az's token and read the log after an hour"
else
    NOT_CHECKED+=("token refresh past an hour on a live login (give TOKEN_HOUR=1: one more job of 65 minutes)")
fi

step "local status: the pool and its nodes"
az batchai sweep local status --data-dir "$DATA_DIR" -o table

step "the autoscale formula drains the pool to zero nodes"
deadline=$((SECONDS + WAIT_MINUTES * 60))
while :; do
    nodes="$(az batchai cluster show -n smoke "${G[@]}" --query currentNodeCount -o tsv)"
    [ "$nodes" = 0 ] && break
    [ "$SECONDS" -lt "$deadline" ] || fail "pool $pool still holds $nodes node(s) after $WAIT_MINUTES minutes"
    sleep 5
done
ok "pool $pool has no node left"

step "local stop: no pool of the service holds nodes (then local start again: the cleanup deletes the cluster)"
holding="$(az batchai sweep local stop --data-dir "$DATA_DIR" --query "pools[?nodes > \`0\`].pool" -o tsv)" \
    || fail "local stop failed (above)"
STARTED=''
[ -z "$holding" ] || fail "local stop lists pools still holding nodes: $holding"
az batchai sweep local start --data-dir "$DATA_DIR" --scheduler azure-batch --batch-account "$BATCH_ACCOUNT" \
    -g "$RESOURCE_GROUP" --pool-prefix "$POOL_PREFIX" -o none
STARTED=1
ok "local stop lists no pool holding nodes"
