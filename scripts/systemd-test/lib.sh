# shellcheck shell=bash
# Helpers for the scenario scripts that scripts/systemd-test.sh runs inside a
# disposable systemd (scripts/sdbox.sh). Sourced; the scripts run as root in the box,
# where /mnt/share holds the packages and these scripts.
#
# Every expectation is one `check NAME CMD...` (or `expect_eq`) line that prints
# "ok   NAME" or "FAIL NAME" plus context; `finish` prints "N passed, N failed" and
# sets the exit status.

# shellcheck disable=SC2034 # used by the scenario scripts
SHARE=/mnt/share
PASSED=0
FAILED=0
SCENARIO=${SCENARIO:-$(basename "$0" .sh)}
T0=$(date +%s%N)

# now_ms: milliseconds since the scenario started.
now_ms() { echo $((($(date +%s%N) - T0) / 1000000)); }
log() {
	local ms
	ms=$(now_ms)
	printf '[%s %4d.%01ds] %s\n' "$SCENARIO" $((ms / 1000)) $((ms % 1000 / 100)) "$*"
}
pass() { PASSED=$((PASSED + 1)); log "ok   $1"; }
fail() {
	FAILED=$((FAILED + 1))
	log "FAIL $1"
	shift
	[ $# -gt 0 ] && printf '%s\n' "$@" | sed 's/^/       | /'
	return 0
}

# check NAME CMD...: passes when CMD exits 0; on failure shows CMD's output.
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "command: $*" "$out"; fi
}

# expect_eq NAME WANT GOT
expect_eq() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "want: $2" "got:  $3"; fi
}

# expect_match NAME REGEX TEXT (extended regex, anywhere in TEXT)
expect_match() {
	if grep -Eq -- "$2" <<<"$3"; then pass "$1"; else fail "$1" "want match: $2" "got: $(printf '%s' "$3" | tail -c 2000)"; fi
}

# wait_until SECONDS CMD...: polls CMD every 0.1 s; returns 1 after SECONDS (whole).
wait_until() {
	local deadline=$(($(now_ms) + $1 * 1000))
	shift
	until "$@" >/dev/null 2>&1; do
		if [ "$(now_ms)" -gt "$deadline" ]; then return 1; fi
		sleep 0.1
	done
}

finish() {
	if [ "$FAILED" != 0 ]; then
		log "journal of the queen units (last 80 lines, cut at 300 characters):"
		journalctl --no-pager -o short-monotonic -u 'queen*' -n 80 2>/dev/null | cut -c1-300 | sed 's/^/       | /'
	fi
	printf '%s: %d passed, %d failed\n' "$SCENARIO" "$PASSED" "$FAILED"
	[ "$FAILED" = 0 ]
}

# show UNIT PROP: one systemd property's value.
show() { systemctl show -P "$2" "$1"; }

# no_policy_rc_d: the host image may carry Docker's /usr/sbin/policy-rc.d ("exit
# 101": never start services from maintainer scripts), which deb-systemd-invoke
# obeys. The box is a normal machine: remove it (from the box's overlay only).
no_policy_rc_d() { rm -f /usr/sbin/policy-rc.d; }

# pg_setup: a PostgreSQL cluster in the box (a systemd unit, postgresql@V-qtest),
# with a role and database queen that the user queen reaches by peer
# authentication over /run/postgresql.
pg_setup() {
	local v
	v=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -1)
	# shellcheck disable=SC2034 # for the scenario scripts
	PG_UNIT=postgresql@$v-qtest.service
	pg_createcluster "$v" qtest -p 5432 --start -o fsync=off -o synchronous_commit=off \
		-o full_page_writes=off >/dev/null
	runuser -u postgres -- psql -qAt -c "CREATE ROLE queen LOGIN" -c "CREATE DATABASE queen OWNER queen" >/dev/null
}

# psql_q SQL: one query as postgres in the queen database, unaligned output.
psql_q() { runuser -u postgres -- psql -qAtX -d queen -c "$1"; }

# queen_env: the env file the scenarios use: the local cluster by peer auth.
queen_env() {
	sed -i -e 's|^#PG_HOST=.*|PG_HOST=/run/postgresql|' -e 's|^#PG_USER=.*|PG_USER=queen|' \
		-e 's|^#PG_DB=.*|PG_DB=queen|' -e 's|^#PG_PASSWORD=.*|PG_PASSWORD=|' /etc/queen/queen.env
}

URL=http://127.0.0.1:6632

# http METHOD PATH [BODY]: prints "CODE BODY"; CODE 000 when no HTTP answer.
http() {
	local args=(-s -o /tmp/http.body -w '%{http_code}' -X "$1" --max-time "${HTTP_TIMEOUT:-30}")
	[ -n "${3:-}" ] && args+=(-H 'Content-Type: application/json' --data "$3")
	local code
	code=$(curl "${args[@]}" "$URL$2" 2>/dev/null) || true
	printf '%s %s' "${code:-000}" "$(cat /tmp/http.body 2>/dev/null)"
	rm -f /tmp/http.body
}

# push QUEUE TXID: pushes one message; prints the HTTP status.
push() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 30 -X POST -H 'Content-Type: application/json' \
		--data "{\"items\":[{\"queue\":\"$1\",\"transactionId\":\"$2\",\"payload\":{\"tx\":\"$2\"}}]}" \
		"$URL/api/v1/push" 2>/dev/null || true
}

# reset_unit: forget failures and the start-rate counter between phases.
reset_unit() { systemctl reset-failed "$@" >/dev/null 2>&1 || true; }
