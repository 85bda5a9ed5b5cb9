#!/bin/sh
# `azdev linter` on this extension, from the repo alone (see "Linting" in docs/architecture.md).
#
# azdev lints the extensions of an azure-cli-extensions checkout that `azdev setup` registered. `azdev setup` also
# pip-installs, checks git remotes and needs the network, so this script writes the few files it would have written,
# under .venv-lint/azdev-home (never ~/.azure or ~/.azdev):
#   src/batchai-sweep -> the repo    the "extensions repo" (az names a dev extension after its folder)
#   cli/scripts/ci/cmdcov.yml        the one azure-cli repo file the linter reads at import (scripts/lint/cmdcov.yml)
#   azdev/config                     [cli] repo_path, [ext] repo_paths
#   azdev/env_config/<venv>/config_files   azdev's pylintrc files, as `azdev setup` copies them
# Rule types: params, commands, command_groups, help_entries at every severity; the test-coverage type needs an
# azure-cli git checkout and is not run. Exceptions: linter_exclusions.yml, which the linter reads itself.
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VENV=$REPO/.venv-lint
HOME_DIR=$VENV/azdev-home
rm -rf "$HOME_DIR"
mkdir -p "$HOME_DIR/src" "$HOME_DIR/cli/scripts/ci" "$HOME_DIR/azdev" "$HOME_DIR/azure-config"
ln -s "$REPO" "$HOME_DIR/src/batchai-sweep"
cp "$REPO/scripts/lint/cmdcov.yml" "$HOME_DIR/cli/scripts/ci/cmdcov.yml"
printf '[cli]\nrepo_path = %s\n\n[ext]\nrepo_paths = %s\n' "$HOME_DIR/cli" "$HOME_DIR/src/batchai-sweep" \
    > "$HOME_DIR/azdev/config"
CONFIG_FILES=$HOME_DIR/azdev/env_config$VENV/config_files
mkdir -p "$CONFIG_FILES"
AZDEV_PACKAGE=$("$VENV/bin/python" -c 'import azdev, os; print(os.path.dirname(azdev.__file__))')
cp "$AZDEV_PACKAGE"/config/*pylintrc "$AZDEV_PACKAGE"/config/*.flake8 "$CONFIG_FILES/"

cd "$HOME_DIR"
exec env VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" AZDEV_CONFIG_DIR="$HOME_DIR/azdev" \
    AZURE_CONFIG_DIR="$HOME_DIR/azure-config" AZURE_EXTENSION_DEV_SOURCES="$HOME_DIR/src" \
    AZURE_CORE_COLLECT_TELEMETRY=no \
    "$VENV/bin/azdev" linter batchai-sweep --rule-types params commands command_groups help_entries \
    --min-severity low
