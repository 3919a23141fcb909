#!/usr/bin/env bash
#
# ensure-chromium.sh: make sure a Chromium is installed for the dashboard's browser
# tests (internal/dashboard/browsertest), run by `make test` before `go test`.
#
#   scripts/ensure-chromium.sh
#
# A chromium, chromium-browser or google-chrome on PATH is enough. Otherwise, as root
# with apt-get, it installs Debian's chromium. When it cannot, it prints SKIP with the
# reason and exits 0: the browser tests then skip, naming the same reason (under
# CI=true they fail instead). The tests never install anything themselves.
set -euo pipefail

say() { printf 'ensure-chromium: %s\n' "$*" >&2; }

for b in chromium chromium-browser google-chrome-stable google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		exit 0
	fi
done
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	say "SKIP: no Chromium on PATH and no way to install one here (needs root and apt-get): the dashboard browser tests will skip (fail under CI=true)"
	exit 0
fi
say "installing chromium (apt-get install)"
apt() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 "$@" >/dev/null 2>&1; }
if apt install -y -qq chromium || { apt update -qq && apt install -y -qq chromium; }; then
	say "installed $(chromium --version 2>/dev/null || echo chromium)"
else
	say "SKIP: apt-get could not install chromium: the dashboard browser tests will skip (fail under CI=true)"
fi
