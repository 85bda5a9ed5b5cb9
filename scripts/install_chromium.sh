#!/bin/sh
# Chromium for the report's browser tests (tests/report/test_report_browser.py): Debian's `chromium` package.
# Installed only when missing and only as root (CI runs make test as root); elsewhere this says what to run and
# exits 0, and the browser tests skip loudly (they fail instead when CI=true).
set -eu
for name in chromium chromium-browser google-chrome; do
    if command -v "$name" >/dev/null 2>&1; then
        exit 0
    fi
done
if [ "$(id -u)" != 0 ]; then
    echo "NOTE: chromium is not installed and this is not root: the report's browser tests will skip." >&2
    echo "      Install it with: sudo $0" >&2
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "NOTE: no apt-get here: install Chromium with the system's package manager for the browser tests." >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends chromium
