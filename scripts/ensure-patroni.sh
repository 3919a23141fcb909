#!/usr/bin/env bash
#
# ensure-patroni.sh: make sure Patroni and etcd are installed for the PostgreSQL
# failover tests (internal/patronitest and the tests built on it), run by `make test`
# before `go test`.
#
#   scripts/ensure-patroni.sh
#
# patroni, patronictl and etcd on PATH are enough. Otherwise, as root with apt-get, it
# installs Debian's patroni, python3-etcd (Patroni's client of etcd's v2 API, which the
# long failover run uses), etcd-server and etcd-client, and stops any etcd or Patroni
# system service the install started: the tests start their own processes on loopback
# addresses and free ports. When it cannot, it prints SKIP with the reason and exits 0:
# the failover tests then skip, naming the same reason. The tests never install
# anything themselves.
set -euo pipefail

say() { printf 'ensure-patroni: %s\n' "$*" >&2; }

have_all() {
	command -v patroni >/dev/null 2>&1 && command -v patronictl >/dev/null 2>&1 &&
		command -v etcd >/dev/null 2>&1
}

if have_all; then
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	say "SKIP: no patroni, patronictl and etcd on PATH and no way to install them here (needs root and apt-get): the failover tests will skip"
	exit 0
fi
say "installing patroni, python3-etcd, etcd-server and etcd-client (apt-get install)"
apt() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 "$@" >/dev/null 2>&1; }
pkgs=(patroni python3-etcd etcd-server etcd-client)
if ! { apt install -y -qq --no-install-recommends "${pkgs[@]}" ||
	{ apt update -qq && apt install -y -qq --no-install-recommends "${pkgs[@]}"; }; }; then
	say "SKIP: apt-get could not install ${pkgs[*]}: the failover tests will skip"
	exit 0
fi

# The packages' services may have started (or be enabled to start at boot) a
# system-wide etcd or Patroni: stop and disable them. Where policy-rc.d refused the
# start, there is nothing to stop.
for svc in patroni etcd; do
	if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
		systemctl disable --now "$svc.service" >/dev/null 2>&1 || true
	elif [ -x "/etc/init.d/$svc" ] && "/etc/init.d/$svc" status >/dev/null 2>&1; then
		"/etc/init.d/$svc" stop >/dev/null 2>&1 || true
	fi
done
if ! have_all; then
	say "SKIP: ${pkgs[*]} installed but patroni, patronictl or etcd is still not on PATH: the failover tests will skip"
	exit 0
fi
say "installed $(patroni --version 2>/dev/null || echo patroni), $(etcd --version 2>/dev/null | head -n1 || echo etcd)"
