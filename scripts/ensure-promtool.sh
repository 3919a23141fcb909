#!/usr/bin/env bash
#
# ensure-promtool.sh: make sure promtool is installed for the tests of the shipped
# Prometheus alerting rules (packaging/monitoring), run by `make test` before `go test`.
#
#   scripts/ensure-promtool.sh
#
# A promtool on PATH is enough. Otherwise, as root with apt-get, it installs Debian's
# prometheus package (which carries promtool) and stops the Prometheus server the
# install may have started: the tests only need the command. When it cannot, it
# prints SKIP with the reason and exits 0: the rule tests then skip, naming the same
# reason. The tests never install anything themselves.
set -euo pipefail

say() { printf 'ensure-promtool: %s\n' "$*" >&2; }

if command -v promtool >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	say "SKIP: no promtool on PATH and no way to install it here (needs root and apt-get): the alert rule tests will skip"
	exit 0
fi
say "installing prometheus for promtool (apt-get install)"
apt() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 "$@" >/dev/null 2>&1; }
if ! { apt install -y -qq --no-install-recommends prometheus ||
	{ apt update -qq && apt install -y -qq --no-install-recommends prometheus; }; }; then
	say "SKIP: apt-get could not install prometheus: the alert rule tests will skip"
	exit 0
fi

# The package's service may have started (or be enabled to start at boot) a
# Prometheus server: stop and disable it. Where policy-rc.d refused the start, there
# is nothing to stop.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl disable --now prometheus.service >/dev/null 2>&1 || true
elif [ -x /etc/init.d/prometheus ] && /etc/init.d/prometheus status >/dev/null 2>&1; then
	/etc/init.d/prometheus stop >/dev/null 2>&1 || true
fi
if ! command -v promtool >/dev/null 2>&1; then
	say "SKIP: prometheus installed but promtool is still not on PATH: the alert rule tests will skip"
	exit 0
fi
say "installed $(promtool --version 2>&1 | head -n1 || echo promtool)"
