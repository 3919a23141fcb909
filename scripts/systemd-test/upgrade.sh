#!/usr/bin/env bash
# upgrade.sh: upgrade and downgrade under traffic, in a disposable systemd (make
# test-upgrade). Run inside the box by scripts/systemd-test.sh with the repositories
# /mnt/share/repo-v1 and repo-v2 (see repo-build.sh), the checker's test binary
# /mnt/share/checker.test and /mnt/share/versions.
#
# queen V1 installed from the signed apt repository (repo-lib.sh), then, each time
# while the concurrency checker's producers and consumers run through port 6632
# (internal/checker, TestUpgradeUnderTraffic):
#   1. queen.service: the repository switched to V2, apt-get update && apt-get
#      upgrade -y (the package restarts the running service);
#   2. apt pointed at V1's release repository, apt-get install queen=V1-1
#      --allow-downgrades (the schema is additive: V1 serves V2's database);
#   3. and 4. the same with two replicas, queen@1 and queen@2 (template sockets
#      sharing the port), restarted by the package.
# Each checker run must end with no message lost, none duplicated beyond what leases
# allow, order kept, no 5xx but 503, pushes stored again after the command; it
# prints what the clients saw meanwhile ("upgrade: ..." lines), which
# docs/upgrades.md quotes.
#
#   upgrade.sh --step upgrade|downgrade   the package command the checker runs
set -uo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC1091
. "$SHARE/versions"
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/repo-lib.sh"

if [ "${1:-}" = --step ]; then
	case $2 in
	upgrade)
		# The repository an operator follows moves on to V2.
		repo_serve v2
		apt_setup v2
		apt_get update && apt_get upgrade -y
		;;
	downgrade)
		# The operator points apt at V1's release repository and asks for V1.
		apt_setup v1 "$REPO_URL/releases/v1/apt"
		apt_get update && apt_get install -y --allow-downgrades "queen=$V1-1"
		;;
	*) exit 2 ;;
	esac
	exit
fi

# under_traffic NAME QUEUE STEP URLS: the checker's run with the package command STEP
# at 6 s; passes when the test passes. Its report lines go to the log.
under_traffic() {
	local name=$1 queue=$2 step=$3 urls=$4 out=/tmp/checker-$2.log rc
	log "checker: $name (queue $queue)"
	"$SHARE/checker.test" -test.run '^TestUpgradeUnderTraffic$' -test.v -test.timeout 10m \
		-checker.upgrade-urls="$urls" -checker.upgrade-queue="$queue" -checker.upgrade-name="$name" \
		-checker.upgrade-cmd="bash $SHARE/upgrade.sh --step $step >/tmp/step-$queue.log 2>&1" >"$out" 2>&1
	rc=$?
	grep -E 'checker: (pushed=|pushRetries|fault )|upgrade: requests|checker violation|--- (PASS|FAIL)' "$out" |
		sed -e 's/^ *//' -e 's/^[a-z_]*_test\.go:[0-9]*: //' | while IFS= read -r l; do log "$l"; done
	if [ "$rc" = 0 ]; then
		pass "$name under traffic: 0 lost, 0 duplicated beyond leases, order kept"
	else
		fail "$name under traffic" "$(tail -40 "$out")" "package command:" "$(tail -20 "/tmp/step-$queue.log" 2>/dev/null)"
	fi
}

# mainpids UNITS...: the units' main PIDs, space-separated.
mainpids() {
	local u
	for u in "$@"; do show "$u" MainPID; done | paste -sd " "
}

# warm URL N: N requests, so that every listener has served (and its service runs).
warm() {
	local i
	for i in $(seq "$2"); do curl -s -o /dev/null --max-time 30 "$1/health/ready"; done
}

no_policy_rc_d
pg_setup
log "PostgreSQL ready ($PG_UNIT)"
repo_serve v1
apt_setup v1
check "apt-get update" apt_get update
check "apt-get install -y queen ($V1)" apt_get install -y queen
queen_env
# The checker's brokers retry parked pops often; the same here.
printf 'POP_WAIT_INITIAL_INTERVAL_MS=25\nPOP_WAIT_MAX_INTERVAL_MS=100\n' >>/etc/queen/queen.env
warm "$URL" 3
wait_until 20 systemctl is-active --quiet queen.service
expect_eq "queen.service running $V1" "active" "$(systemctl is-active queen.service)"

# --- 1. upgrade, one broker -------------------------------------------------------------
old=$(mainpids queen.service)
under_traffic "apt-get upgrade $V1 to $V2" up1 upgrade "$URL"
expect_eq "upgraded to $V2-1" "$V2-1" "$(dpkg-query -W -f='${Version}' queen 2>&1)"
new=$(mainpids queen.service)
if [ "$new" != "$old" ] && [ "$new" != "0" ]; then pass "queen.service restarted by the package ($old → $new)"; else fail "queen.service restarted by the package" "$old → $new"; fi
read -r code body <<<"$(http GET /health)"
expect_match "serving $V2" "\"version\":\"${V2//+/\\+}\"" "$body"

# --- 2. downgrade, one broker -----------------------------------------------------------
under_traffic "downgrade $V2 to $V1" down1 downgrade "$URL"
expect_eq "downgraded to $V1-1" "$V1-1" "$(dpkg-query -W -f='${Version}' queen 2>&1)"
read -r code body <<<"$(http GET /health)"
expect_match "serving $V1 on the database $V2 used" "\"version\":\"${V1//+/\\+}\"" "$body"
read -r code body <<<"$(http POST /api/v1/push '{"items":[{"queue":"after-downgrade","payload":{"v":1}}]}')"
expect_eq "downgraded broker: push 201" 201 "$code"
read -r code body <<<"$(http GET '/api/v1/pop/queue/after-downgrade?autoAck=true')"
expect_match "downgraded broker: pop returns it" '"v":1' "$body"

# --- 3. and 4. two replicas ---------------------------------------------------------------
systemctl disable --now queen.socket queen.service >/dev/null 2>&1
check "replicas: enable --now queen@1.socket queen@2.socket" systemctl enable --now queen@1.socket queen@2.socket
warm "$URL" 20
wait_until 20 systemctl is-active --quiet queen@1.service queen@2.service
expect_eq "replicas: both running" "active active" "$(systemctl is-active queen@1.service queen@2.service | tr '\n' ' ' | sed 's/ $//')"
old=$(mainpids queen@1.service queen@2.service)
since=$(date '+%Y-%m-%d %H:%M:%S')
under_traffic "apt-get upgrade $V1 to $V2, two replicas" up2 upgrade "$URL,$URL"
expect_eq "replicas: upgraded to $V2-1" "$V2-1" "$(dpkg-query -W -f='${Version}' queen 2>&1)"
wait_until 30 systemctl is-active --quiet queen@1.service queen@2.service
new=$(mainpids queen@1.service queen@2.service)
read -r o1 o2 <<<"$old"
read -r n1 n2 <<<"$new"
if [ "$n1" != "$o1" ] && [ "$n2" != "$o2" ] && [ "$n1" != 0 ] && [ "$n2" != 0 ]; then
	pass "replicas: both restarted by the package ($old → $new)"
else
	fail "replicas: both restarted by the package" "$old → $new"
fi
# How the package restarted them: each replica's stop and ready times (systemd's
# monotonic clock), and whether the two were down at the same time.
order=$(journalctl --since "$since" -o short-monotonic --no-pager -u queen@1.service -u queen@2.service |
	awk 'function ts() { match($0, /[0-9]+\.[0-9]+/); return substr($0, RSTART, RLENGTH) }
		/Stopping queen@[12]\.service/ {i = substr($0, index($0, "queen@") + 6, 1); stop[i] = ts()}
		/Started queen@[12]\.service/ {i = substr($0, index($0, "queen@") + 6, 1); if (i in stop) up[i] = ts()}
		END {
			if (!(1 in up) || !(2 in up)) { print "not both restarted"; exit }
			how = (stop[2] >= up[1] || stop[1] >= up[2]) ? "one at a time" : "together"
			printf "queen@1 down %d ms, queen@2 down %d ms, %s", (up[1] - stop[1]) * 1000, (up[2] - stop[2]) * 1000, how
		}')
log "replicas: the package restarted $order"
expect_match "replicas: restarted one at a time by the package" "one at a time" "$order"
for i in 1 2; do
	read -r code body <<<"$(http GET /health)"
	expect_match "replicas: serving $V2 (request $i)" "\"version\":\"${V2//+/\\+}\"" "$body"
done
under_traffic "downgrade $V2 to $V1, two replicas" down2 downgrade "$URL,$URL"
expect_eq "replicas: downgraded to $V1-1" "$V1-1" "$(dpkg-query -W -f='${Version}' queen 2>&1)"
read -r code body <<<"$(http GET /health)"
expect_match "replicas: serving $V1 after the downgrade" "\"version\":\"${V1//+/\\+}\"" "$body"

finish
