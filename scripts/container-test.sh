#!/usr/bin/env bash
#
# container-test.sh: build the container image and run the broker from it
# (`make test-container`, part of `make test`).
#
#   scripts/container-test.sh
#
# 1. Can this machine run a container at all? Needs root and podman (installed with
#    apt-get when missing). A static probe binary is run FROM scratch with podman's
#    default OCI runtime, then with runc (installed when missing): crun refuses
#    hosts whose cgroup v2 hierarchy is mounted beside v1 with controllers in it.
#    If nothing can run, it prints SKIP with the reason and exits 0.
# 2. Builds the image with packaging/container/build.sh (FROM scratch: no registry),
#    in private podman storage under a temporary directory, and checks its config.
# 3. Runs the broker from it: read-only root, every capability dropped,
#    no-new-privileges, host network (PostgreSQL listens on 127.0.0.1), a spool
#    directory mounted at FILE_BUFFER_DIR; against a fresh database of the cluster in
#    PG_* or, without PG_HOST, of a throwaway cluster (scripts/pgtest.sh run).
# 4. Checks /health/ready and /health/live, a push and a pop through the
#    container's port, `queenctl ping`, `queenctl status` and `queenctl pop` inside
#    the container, the user the broker runs as, then `podman stop` (SIGTERM): exit 0
#    after the drain, with "stopped" in the log.
# 5. Removes the container, the image, the storage and the database.
#
# Prints "N passed, N failed" (", N skipped") last; exits non-zero on any failure.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/scripts/lib/podman.sh"
cd "$root"

passed=0 failed=0 skipped=0
say() { printf 'container-test: %s\n' "$*"; }
ok() { passed=$((passed + 1)); say "ok   $*"; }
bad() { failed=$((failed + 1)); say "FAIL $*"; }
summary() {
	printf 'container-test: %d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
	[ "$failed" = 0 ]
}
skip_all() {
	skipped=$((skipped + 1))
	say "SKIP the container tests: $*"
	summary
	exit 0
}

apt_install() {
	[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 1
	say "installing $* (apt-get install)" >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$@" >/dev/null 2>&1 ||
		{ apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$@" >/dev/null 2>&1; }
}

# --- 1. can containers run here? ------------------------------------------------------
# probe_runtime WORK: print the OCI runtime that runs a FROM scratch container here
# ("" for podman's default); on failure print the last error and return 1.
probe_runtime() {
	local work=$1 rt out=
	mkdir -p "$work/src" "$work/ctx"
	printf 'module probe\n\ngo 1.21\n' >"$work/src/go.mod"
	printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("probe ok") }\n' >"$work/src/main.go"
	(cd "$work/src" && CGO_ENABLED=0 GOFLAGS="" go build -o "$work/ctx/probe" .) || { echo "cannot build the probe binary"; return 1; }
	printf 'FROM scratch\nCOPY probe /probe\nUSER 65532:65532\nENTRYPOINT ["/probe"]\n' >"$work/ctx/Containerfile"
	for rt in "" runc; do
		if [ "$rt" = runc ] && ! command -v runc >/dev/null 2>&1; then
			apt_install runc || { echo "${out:-podman failed}; runc is not installed and could not be installed"; return 1; }
		fi
		cleanup_podman "$work/p"
		setup_podman "$work/p" "$rt"
		if ! out=$(podman build -q -t localhost/queen-probe:1 -f "$work/ctx/Containerfile" "$work/ctx" 2>&1); then
			out="podman build: $(printf '%s' "$out" | tail -n 1)"
			continue
		fi
		if out=$(podman run --rm --network host localhost/queen-probe:1 2>&1) && [ "$out" = "probe ok" ]; then
			cleanup_podman "$work/p"
			echo "$rt"
			return 0
		fi
		out="podman run${rt:+ --runtime $rt}: $(printf '%s' "$out" | tail -n 1)"
	done
	cleanup_podman "$work/p"
	echo "$out"
	return 1
}

if [ -z "${QUEEN_CONTAINER_TEST_PROBED:-}" ]; then
	if bash -n packaging/container/build.sh; then ok "bash -n packaging/container/build.sh"; else bad "bash -n packaging/container/build.sh"; fi
	if command -v shellcheck >/dev/null 2>&1; then
		if out=$(shellcheck -x packaging/container/build.sh scripts/container-test.sh 2>&1); then
			ok "shellcheck build.sh and container-test.sh"
		else
			bad "shellcheck" && printf '%s\n' "$out"
		fi
	fi
	[ "$failed" = 0 ] || { summary; exit 1; }
	[ "$(id -u)" = 0 ] || skip_all "not root (podman here runs as root: its storage, host network and mounts)"
	command -v podman >/dev/null 2>&1 || apt_install podman || true
	command -v podman >/dev/null 2>&1 || skip_all "podman is not installed and apt-get could not install it"
	command -v go >/dev/null 2>&1 || skip_all "go is not installed"
	command -v curl >/dev/null 2>&1 || apt_install curl || skip_all "curl is not installed"
	probe=$(mktemp -d /tmp/queen-container-probe.XXXXXX)
	rc=0 && runtime=$(probe_runtime "$probe") || rc=$?
	cleanup_podman "$probe"
	unset CONTAINERS_CONF CONTAINERS_STORAGE_CONF
	[ "$rc" = 0 ] || skip_all "podman cannot run a container on this machine: $runtime"
	say "podman $(podman --version | awk '{print $3}') runs containers here (OCI runtime: ${runtime:-default})"
	export QUEEN_CONTAINER_TEST_PROBED=1 QUEEN_CONTAINER_TEST_RUNTIME=$runtime
	if [ -z "${PG_HOST:-}" ]; then
		exec scripts/pgtest.sh run -- "$0" "$@"
	fi
fi
runtime=${QUEEN_CONTAINER_TEST_RUNTIME:-}
t0=$(date +%s)

# --- 2. the image ------------------------------------------------------------------------
work=$(mktemp -d /tmp/queen-container-test.XXXXXX)
db=
drop_db() {
	[ -n "$db" ] || return 0
	PGPASSWORD=${PG_PASSWORD:-} dropdb --if-exists -h "$PG_HOST" -p "${PG_PORT:-5432}" -U "${PG_USER:-postgres}" "$db" >/dev/null 2>&1 || true
}
trap 'cleanup_podman "$work/p"; drop_db; rm -rf "$work"' EXIT
setup_podman "$work/p" "$runtime"

image=localhost/queen-container-test:$$
if out=$(packaging/container/build.sh -b podman -t "$image" 2>&1); then
	ok "image built FROM scratch ($(podman image inspect "$image" --format '{{.Size}}' | awk '{printf "%.1f MB", $1/1e6}'))"
else
	bad "packaging/container/build.sh" && printf '%s\n' "$out"
	summary
	exit 1
fi
cfg() { podman image inspect "$image" --format "$1"; }
expect() { # NAME WANT GOT
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: want '$2', got '$3'"; fi
}
expect "image user" "65532:65532" "$(cfg '{{.Config.User}}')"
expect "image port" "map[6632/tcp:{}]" "$(cfg '{{.Config.ExposedPorts}}')"
expect "image stop signal" "SIGTERM" "$(cfg '{{.Config.StopSignal}}')"
expect "image entrypoint" "[/usr/bin/queen] [serve]" "$(cfg '{{.Config.Entrypoint}} {{.Config.Cmd}}')"
expect "image QUEEN_SERVER" "QUEEN_SERVER=http://127.0.0.1:6632" "$(cfg '{{range .Config.Env}}{{println .}}{{end}}' | grep '^QUEEN_SERVER=' || true)"
version=$(cfg '{{index .Config.Labels "org.opencontainers.image.version"}}')
if [ -n "$version" ] && [ "$version" != dev ]; then ok "image version label $version"; else bad "image version label '$version'"; fi

# --- 3. the broker in a container -------------------------------------------------------
if command -v createdb >/dev/null 2>&1; then
	db=queen_container_test_$$
	PGPASSWORD=${PG_PASSWORD:-} createdb -h "$PG_HOST" -p "${PG_PORT:-5432}" -U "${PG_USER:-postgres}" "$db" ||
		{ bad "createdb $db" && db= && summary && exit 1; }
fi
port=
for _ in $(seq 50); do
	p=$((20000 + RANDOM % 30000))
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p && break; fi
done
[ -n "$port" ] || { bad "no free port" && summary && exit 1; }
spool=$work/spool
mkdir -p "$spool"
chown 65532:65532 "$spool"
chmod 0750 "$spool"
name=queen-container-test-$$
if ! out=$(podman run -d --name "$name" --network host --read-only --cap-drop ALL \
	--security-opt no-new-privileges -v "$spool:/var/lib/queen/spool" \
	-e PG_HOST -e PG_PORT -e PG_USER -e "PG_PASSWORD=${PG_PASSWORD:-}" -e "PG_DB=${db:-${PG_DB:-postgres}}" \
	-e HOST=127.0.0.1 -e "PORT=$port" -e "QUEEN_SERVER=http://127.0.0.1:$port" -e DB_POOL_SIZE=5 \
	-e QUEEN_SHUTDOWN_DELAY=1s -e QUEEN_SHUTDOWN_TIMEOUT=5s -e QUEEN_INSTANCE=container-test \
	"$image" 2>&1); then
	bad "podman run" && printf '%s\n' "$out"
	summary
	exit 1
fi
url=http://127.0.0.1:$port
for _ in $(seq 200); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health/ready" || true)" = 200 ] && break
	sleep 0.1
done
if ready=$(curl -fsS "$url/health/ready" 2>&1) && grep -q '"status":"ready"' <<<"$ready"; then
	ok "/health/ready from the container (read-only root, no capabilities)"
else
	bad "/health/ready: $ready"
	podman logs "$name" 2>&1 | tail -n 20
fi
if live=$(curl -fsS "$url/health/live" 2>&1) && grep -q '"status":"alive"' <<<"$live"; then
	ok "/health/live"
else
	bad "/health/live: $live"
fi

# --- 4. push, pop, queenctl -----------------------------------------------------------
push=$(curl -s -X POST "$url/api/v1/push" -H 'Content-Type: application/json' \
	-d '{"items":[{"queue":"container-test","payload":{"n":1}},{"queue":"container-test","payload":{"n":2}}]}' || true)
if grep -q '"status":"queued"' <<<"$push"; then ok "push through the container's port"; else bad "push: $push"; fi
pop=$(curl -s "$url/api/v1/pop/queue/container-test?autoAck=true" || true)
if grep -q '"n":1' <<<"$pop"; then ok "pop through the container's port"; else bad "pop: $pop"; fi
if out=$(podman exec "$name" queenctl ping 2>&1) && grep -q healthy <<<"$out"; then
	ok "podman exec queenctl ping: $out"
else
	bad "podman exec queenctl ping: $out"
fi
if out=$(podman exec "$name" queenctl status 2>&1); then ok "podman exec queenctl status"; else bad "podman exec queenctl status: $out"; fi
if out=$(podman exec "$name" queenctl pop container-test --auto-ack 2>&1) && grep -q '"n":2\|"n": 2\|n.*2' <<<"$out"; then
	ok "podman exec queenctl pop gets the second message"
else
	bad "podman exec queenctl pop: $out"
fi
if out=$(podman exec "$name" queen-proxy -version 2>&1) && grep -q '^queen-proxy ' <<<"$out"; then
	ok "podman exec queen-proxy -version: the image holds the tenant gateway"
else
	bad "podman exec queen-proxy -version: $out"
fi
expect "the broker runs as 65532" "65532" "$(podman top "$name" huser 2>/dev/null | awk 'NR==2 {print $1}')"
if [ -e "$spool/.lock" ]; then ok "the spool is in the mounted FILE_BUFFER_DIR"; else bad "no $spool/.lock: $(ls -A "$spool")"; fi

# --- 5. SIGTERM -------------------------------------------------------------------------
s0=$(date +%s%N)
podman stop -t 30 "$name" >/dev/null 2>&1 || true
ms=$((($(date +%s%N) - s0) / 1000000))
code=$(podman inspect "$name" --format '{{.State.ExitCode}}')
if [ "$code" = 0 ] && [ "$ms" -lt 10000 ]; then
	ok "podman stop (SIGTERM): exit 0 after ${ms} ms (QUEEN_SHUTDOWN_DELAY 1s, drain ≤ 5s)"
else
	bad "podman stop: exit $code after ${ms} ms"
fi
logs=$(podman logs "$name" 2>&1 || true)
if grep -q '"msg":"not ready; serving until' <<<"$logs" && grep -q '"msg":"stopped"' <<<"$logs"; then
	ok "the log shows the delay and the end of the drain"
else
	bad "drain log lines missing" && printf '%s\n' "$logs" | tail -n 10
fi

say "done in $(($(date +%s) - t0)) s"
summary
