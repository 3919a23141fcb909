#!/usr/bin/env bash
# bench-proxy.sh: queen-bench's push and pop+ack cases at batch 100 against one broker
# alone and then through queen-proxy in front of it, in the same run, on the cluster in
# QUEEN_TEST_DATABASE_URL (make bench-proxy runs it under scripts/pgtest.sh, durable
# profile). Prints each case's msg/s both ways, their ratio, and the proxy's CPU seconds
# per million messages (utime + stime of the proxy process, from /proc/<pid>/stat, over
# the proxied run). The broker runs with QUEEN_TENANCY_HEADER and the proxy forwards as
# tenant "bench" (no limits, no quotas), as in production. Loopback only; everything it
# starts is stopped on exit.
set -euo pipefail

: "${QUEEN_TEST_DATABASE_URL:?run under scripts/pgtest.sh run (make bench-proxy)}"
BENCH_CASES=${BENCH_CASES:-push_b100,popack_b100}
BENCH_FLAGS=${BENCH_FLAGS:-}
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	psql -q "$QUEEN_TEST_DATABASE_URL" -c "DROP DATABASE IF EXISTS bench_proxy_broker WITH (FORCE)" \
		-c "DROP DATABASE IF EXISTS bench_proxy_proxy WITH (FORCE)" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() {
	for _ in $(seq 300); do
		curl -fsS -o /dev/null "$1/health/ready" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "bench-proxy: $1 is not ready; logs in $work" >&2
	cat "$work"/*.log >&2
	return 1
}
# cpu_seconds PID: user + system CPU time of the process, in seconds.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }

# PG_* of the test cluster (postgres://user@host:port/db?...).
url=${QUEEN_TEST_DATABASE_URL#postgres://}
pg_user=${url%%@*}
hostport=${url#*@}
hostport=${hostport%%/*}
pg=(PG_HOST="${hostport%:*}" PG_PORT="${hostport##*:}" PG_USER="$pg_user" PG_PASSWORD=)
psql -q "$QUEEN_TEST_DATABASE_URL" -c "DROP DATABASE IF EXISTS bench_proxy_broker WITH (FORCE)" \
	-c "DROP DATABASE IF EXISTS bench_proxy_proxy WITH (FORCE)" \
	-c "CREATE DATABASE bench_proxy_broker" -c "CREATE DATABASE bench_proxy_proxy" >/dev/null
profile=$(psql -tA "$QUEEN_TEST_DATABASE_URL" -c "SELECT CASE WHEN current_setting('fsync')::bool AND current_setting('synchronous_commit') <> 'off' THEN 'durable' ELSE 'fast' END")

broker_port=$(free_port)
env "${pg[@]}" PG_DB=bench_proxy_broker HOST=127.0.0.1 PORT="$broker_port" LOG_LEVEL=warn \
	FILE_BUFFER_DIR="$work/spool" QUEEN_TENANCY_HEADER=X-Queen-Tenant bin/queen >"$work/broker.log" 2>&1 &
pids+=($!)
broker="http://127.0.0.1:$broker_port"
wait_ready "$broker"

proxy_port=$(free_port)
admin_port=$(free_port)
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
proxy_env=("${pg[@]}" PG_DB=bench_proxy_proxy HOST=127.0.0.1 PORT="$proxy_port" LOG_LEVEL=warn
	QUEEN_PROXY_ADMIN_LISTEN="127.0.0.1:$admin_port" QUEEN_PROXY_ADMIN_TOKEN="$token" QUEEN_PROXY_LOGIN=false
	QUEEN_PROXY_UPSTREAMS="$broker" DB_POOL_SIZE=10)
env "${proxy_env[@]}" bin/queen-proxy >"$work/proxy.log" 2>&1 &
proxy_pid=$!
pids+=("$proxy_pid")
proxy="http://127.0.0.1:$proxy_port"
wait_ready "$proxy"

unlimited='{"requestsPerSecond":0,"requestsBurst":0,"messagesPerSecond":0,"messagesBurst":0,"maxConcurrent":0,"maxRequestBytes":0}'
env "${proxy_env[@]}" bin/queen-proxy tenant create bench --limits "$unlimited" \
	--quotas '{"maxMessages":0,"maxBytes":0,"maxQueues":0}' -o json >/dev/null
key=$(env "${proxy_env[@]}" bin/queen-proxy key create bench --scope admin --name bench -o json |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')

echo "bench-proxy: broker alone at $broker ($profile PostgreSQL)" >&2
# shellcheck disable=SC2086
bin/queen-bench -url "$broker" -only "$BENCH_CASES" -o json $BENCH_FLAGS >"$work/broker.out"
echo "bench-proxy: through queen-proxy at $proxy" >&2
# messages NAME: the proxy's count of the tenant's messages in or out (its own metric).
messages() {
	curl -fsS -H "Authorization: Bearer $token" "http://127.0.0.1:$admin_port/metrics/prometheus" |
		awk -v d="$1" '$1 ~ /^queen_proxy_tenant_messages_total\{/ && $1 ~ "direction=\"" d "\"" { s += $2 } END { printf "%d\n", s }'
}
in0=$(messages in)
out0=$(messages out)
cpu0=$(cpu_seconds "$proxy_pid")
# shellcheck disable=SC2086
bin/queen-bench -url "$proxy" -auth-token "$key" -only "$BENCH_CASES" -o json $BENCH_FLAGS >"$work/proxy.out"
cpu1=$(cpu_seconds "$proxy_pid")
moved=$(( $(messages in) - in0 + $(messages out) - out0 ))

python3 - "$work/broker.out" "$work/proxy.out" "$cpu0" "$cpu1" "$profile" "$moved" <<'PY'
import json, sys
def last_json(path):
    for line in reversed(open(path).read().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit("bench-proxy: no JSON result in " + path)
broker, proxy = last_json(sys.argv[1]), last_json(sys.argv[2])
cpu = float(sys.argv[4]) - float(sys.argv[3])
def cases(r):
    return {c["name"]: c for c in r["results"] if c["unit"] == "msg/s"}
b, p = cases(broker), cases(proxy)
moved = int(sys.argv[6])
print(f"PostgreSQL profile: {sys.argv[5]}")
print(f"{'case':<14} {'broker msg/s':>13} {'via proxy msg/s':>16} {'ratio':>6}")
for name in b:
    if name in p:
        bm, pm = b[name]["value"], p[name]["value"]
        print(f"{name:<14} {bm:>13.0f} {pm:>16.0f} {pm / bm:>6.2f}")
print(f"proxy CPU: {cpu:.2f} s over the proxied run for {moved} messages through it (pushed + popped, the proxy's own count)")
print(f"          = {cpu / max(moved, 1) * 1e6:.1f} CPU seconds per million messages")
PY
