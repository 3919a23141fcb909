#!/usr/bin/env bash
# deb.sh: the deb lifecycle in a disposable systemd. Run inside the box by
# scripts/systemd-test.sh with /mnt/share/v1.deb, /mnt/share/v2.deb and
# /mnt/share/versions (V1=..., V2=...).
#
# install (sysusers, tmpfiles, socket enabled and listening, service idle) → unit
# verify and security score → first request activates the service → readiness in
# StatusText and the journal with the effective-configuration block → push/pop →
# watchdog (SIGSTOP: killed, restarted) → drain (SIGTERM with a parked long-poll and
# pushes in flight) → config error (exit 78 once, no restart) → queen-proxy (disabled
# until enabled; then socket-activated on its own database, /health, a tenant, a key
# and a push forwarded to the broker, scoped to the tenant) → upgrade (edited conffile
# kept, no prompt, services restarted on the new version) → remove → purge. Manual
# pages (man queen, man queenctl, man queen-proxy) and queenctl's bash completion
# after the install.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC1091
. "$SHARE/versions"

no_policy_rc_d
pg_setup
log "PostgreSQL ready ($PG_UNIT)"

# --- install ---------------------------------------------------------------
check "dpkg -i v1 ($V1)" dpkg -i "$SHARE/v1.deb"
check "user queen created from sysusers.d" getent passwd queen
expect_eq "/var/lib/queen from tmpfiles.d" "queen 750" "$(stat -c '%U %a' /var/lib/queen 2>&1)"
expect_eq "queen.socket enabled" enabled "$(systemctl is-enabled queen.socket 2>&1)"
expect_eq "queen.socket listening" active "$(systemctl is-active queen.socket 2>&1)"
expect_eq "queen-backup.timer enabled" enabled "$(systemctl is-enabled queen-backup.timer 2>&1)"
expect_eq "queen.service idle until the first connection" inactive "$(systemctl is-active queen.service 2>&1)"
expect_match "queen.env is a conffile" '/etc/queen/queen.env' "$(dpkg-query -W -f='${Conffiles}' queen)"
expect_eq "queen.env root:root 0640" "root root 640" "$(stat -c '%U %G %a' /etc/queen/queen.env)"
expect_eq "queen-proxy.env root:root 0640" "root root 640" "$(stat -c '%U %G %a' /etc/queen/queen-proxy.env)"
check "user queen-proxy created from sysusers.d" getent passwd queen-proxy
expect_eq "queen-proxy disabled by default" "disabled disabled disabled" \
	"$(systemctl is-enabled queen-proxy.socket queen-proxy-admin.socket queen-proxy.service 2>&1 | tr '\n' ' ' | sed 's/ $//')"
expect_eq "queen-proxy not running" "inactive inactive inactive" \
	"$(systemctl is-active queen-proxy.socket queen-proxy-admin.socket queen-proxy.service 2>&1 | tr '\n' ' ' | sed 's/ $//')"

# --- manual pages and completion ------------------------------------------------------
expect_eq "man -w queen" /usr/share/man/man8/queen.8.gz "$(man -w queen 2>&1)"
expect_match "man queen shows the page" 'queen +- +the +Queen +message +broker +daemon' "$(MANWIDTH=80 man -P cat queen 2>&1)"
expect_match "man queen lists the settings" 'QUEEN_SHUTDOWN_TIMEOUT' "$(MANWIDTH=80 man -P cat queen 2>&1)"
expect_match "man queenctl shows the page" 'queenctl +- +the +operator +CLI' "$(MANWIDTH=80 man -P cat queenctl 2>&1)"
expect_match "man queen-proxy shows the page" 'queen-proxy +- +the +multi-tenant +gateway' "$(MANWIDTH=80 man -P cat queen-proxy 2>&1)"
expect_eq "man pages without groff warnings" "" \
	"$(for p in queen queenctl queen-proxy; do MANWIDTH=80 man --warnings -P cat "$p" 2>&1 >/dev/null; done)"
# bash-completion loads /usr/share/bash-completion/completions/NAME on first use.
expect_match "bash completion where bash-completion looks, and it completes" 'complete .*-F _queenctl queenctl$' \
	"$(bash -c '. /usr/share/bash-completion/completions/queenctl && complete -p queenctl' 2>&1)"
expect_match "bash completion offers the commands" '(^| )queue( |$)' \
	"$(bash -c '. /usr/share/bash-completion/completions/queenctl; COMP_WORDS=(queenctl qu); COMP_CWORD=1; _queenctl; echo "${COMPREPLY[*]}"' 2>&1)"
check "zsh and fish completions installed" test -s /usr/share/zsh/vendor-completions/_queenctl -a -s /usr/share/fish/vendor_completions.d/queenctl.fish

units="queen.socket queen.service queen@1.socket queen@1.service queen.target queen-backup.service queen-backup.timer"
# shellcheck disable=SC2086
out=$(systemd-analyze verify $units 2>&1)
expect_eq "systemd-analyze verify prints nothing for: $units" "" "$out"
for u in queen.service queen@1.service; do
	out=$(systemd-analyze security --threshold=20 "$u" 2>&1)
	rc=$?
	score=$(printf '%s\n' "$out" | grep -o 'Overall exposure level for [^:]*: [0-9.]*' | grep -o '[0-9.]*$')
	expect_eq "systemd-analyze security $u ≤ 2.0 (exposure ${score:-?})" 0 "$rc"
done

# --- first start through the socket ---------------------------------------------
queen_env
echo "# edited by the deb test" >>/etc/queen/queen.env
# An upstream variable queen ignores: a configuration warning at every start.
echo "QUEEN_VEGAS_ALPHA=3" >>/etc/queen/queen.env
read -r code body <<<"$(http GET /health/live)"
expect_eq "first request answered through queen.socket" 200 "$code"
wait_until 20 systemctl is-active --quiet queen.service
expect_eq "the first request started queen.service" "active running" "$(show queen.service ActiveState) $(show queen.service SubState)"
wait_until 20 sh -c 'systemctl show -P StatusText queen.service | grep -q "^ready"'
expect_match "StatusText shows readiness" '^ready: serving on .*6632, PostgreSQL at /run/postgresql port 5432 database queen$' "$(show queen.service StatusText)"
journal=$(journalctl -u queen.service -o cat --no-pager)
expect_match "journal: listener from socket activation" '"msg":"listening".*"source":"systemd socket activation \(http=' "$journal"
expect_match "journal: effective-configuration block" '"msg":"effective configuration".*"PG_HOST":\{"value":"/run/postgresql","source":"env"\}.*"PG_PASSWORD":\{"value":"","source":"env"\}' "$journal"
expect_match "journal: ready after the schema" '"msg":"schema applied"' "$journal"
expect_match "journal: ready" '"msg":"ready"' "$journal"
# Lines carry their syslog priority: journald stripped the prefix and filters on it.
expect_match "journal: warnings at priority warning" '"msg":"configuration warning"' \
	"$(journalctl -u queen.service -p warning -o cat --no-pager)"
if journalctl -u queen.service -p warning -o cat --no-pager | grep '"msg":"ready"' >/dev/null; then
	fail "journal: info lines below priority warning"
else
	pass "journal: info lines below priority warning"
fi
if grep -q '^<[0-7]>' <<<"$journal"; then
	fail "journal: priority prefixes stripped"
else
	pass "journal: priority prefixes stripped"
fi
expect_eq "runs as user queen" queen "$(ps -o user= -p "$(show queen.service MainPID)" | tr -d ' ')"

read -r code body <<<"$(http POST /api/v1/push '{"items":[{"queue":"box","payload":{"hello":"box"}}]}')"
expect_eq "push answered 201" 201 "$code"
read -r code body <<<"$(http GET '/api/v1/pop/queue/box?autoAck=true')"
expect_eq "pop answered 200" 200 "$code"
expect_match "pop returned the pushed payload" '"hello":"box"' "$body"
read -r code body <<<"$(http GET '/api/v1/pop/queue/box?autoAck=true')"
expect_eq "queue empty afterwards (204)" 204 "$code"

# --- watchdog: a frozen broker is killed and restarted -------------------------
mkdir -p /etc/systemd/system/queen.service.d
printf '[Service]\nWatchdogSec=3s\n' >/etc/systemd/system/queen.service.d/test-watchdog.conf
systemctl daemon-reload
systemctl restart queen.service
reset_unit queen.service
pid=$(show queen.service MainPID)
expect_match "watchdog armed (WatchdogUSec=3s)" '^3s$' "$(show queen.service WatchdogUSec)"
sleep 4 # more than one watchdog interval: keep-alives flow while healthy
expect_eq "healthy broker not killed by the watchdog" "$pid" "$(show queen.service MainPID)"
restarts=$(show queen.service NRestarts)
kill -STOP "$pid"
log "SIGSTOP to $pid"
if wait_until 45 sh -c "p=\$(systemctl show -P MainPID queen.service); [ \"\$p\" != 0 ] && [ \"\$p\" != $pid ] && systemctl is-active --quiet queen.service"; then
	pass "frozen broker replaced by a new process"
else
	fail "frozen broker replaced by a new process" "MainPID=$(show queen.service MainPID) state=$(systemctl is-active queen.service)"
fi
journal=$(journalctl -u queen.service -o cat --no-pager)
expect_match "journal: watchdog timeout" 'Watchdog timeout' "$journal"
expect_match "journal: killed with SIGABRT, goroutine dump" 'SIGABRT' "$journal"
expect_match "journal: unit result watchdog" "Failed with result 'watchdog'" "$journal"
expect_eq "restarted once by Restart=on-failure" $((restarts + 1)) "$(show queen.service NRestarts)"
read -r code body <<<"$(http GET /health/ready)"
expect_eq "serving again after the restart" 200 "$code"

# --- drain: SIGTERM with a parked long-poll and pushes in flight -------------------
reset_unit queen.service queen.socket
rm -f /tmp/lp.code /tmp/push.*
curl -s -o /dev/null -w '%{http_code}' --max-time 60 \
	"$URL/api/v1/pop/queue/drain-empty?wait=true&timeout=50000" >/tmp/lp.code 2>/dev/null &
lp=$!
pushers=()
for i in 1 2 3 4; do
	(
		end=$(($(now_ms) + 4000))
		n=0
		while [ "$(now_ms)" -lt "$end" ]; do
			echo "d$i-$n $(push drain "d$i-$n")" >>"/tmp/push.$i"
			n=$((n + 1))
		done
	) &
	pushers+=($!)
done
sleep 1.5
drain_pid=$(show queen.service MainPID)
t=$(now_ms)
systemctl stop queen.socket queen.service
stop_ms=$(($(now_ms) - t))
log "systemctl stop took ${stop_ms} ms"
wait "${pushers[@]}" "$lp"
expect_match "parked long-poll answered (204) during the drain" '^204$' "$(cat /tmp/lp.code)"
ok=$(cat /tmp/push.* | awk '$2 ~ /^2/ {print $1}')
n_ok=$(printf '%s\n' "$ok" | grep -c . || true)
n_all=$(cat /tmp/push.* | wc -l)
log "pushes: $n_all sent, $n_ok answered 2xx"
if [ "$n_ok" -gt 0 ]; then pass "pushes answered 2xx before the stop ($n_ok)"; else fail "pushes answered 2xx before the stop" "$(cat /tmp/push.* | tail)"; fi
# shellcheck disable=SC2086 # one quoted literal per transaction id
list=$(printf "'%s'," $ok)
expect_eq "every 2xx push is in the database" "$n_ok" "$(psql_q "SELECT count(DISTINCT transaction_id) FROM queen.messages WHERE transaction_id IN (${list%,})")"
expect_eq "service exited 0 (Result=success)" "success 0" "$(show queen.service Result) $(show queen.service ExecMainStatus)"
if [ "$stop_ms" -lt 30000 ]; then pass "stopped before TimeoutStopSec=30s (${stop_ms} ms)"; else fail "stopped before TimeoutStopSec=30s" "took ${stop_ms} ms"; fi
journal=$(journalctl -u queen.service _PID="$drain_pid" -o cat --no-pager)
expect_match "journal: drain of the stopped process" '"msg":"shutting down","reason":"received terminated"' "$journal"
expect_match "journal: stopped" '"msg":"stopped"' "$journal"

# --- config error: exit 78 once, the journal names the variable, no restart -------
reset_unit queen.service queen.socket
echo "PG_USE_SSL=maybe" >>/etc/queen/queen.env
systemctl start queen.service 2>/dev/null
sleep 5 # longer than RestartSec=2s: a restart would have happened by now
expect_eq "config error: unit failed with status 78" "failed exit-code 78" \
	"$(show queen.service ActiveState) $(show queen.service Result) $(show queen.service ExecMainStatus)"
expect_eq "config error: not restarted" 0 "$(show queen.service NRestarts)"
expect_match "config error: journal names the variable" 'PG_USE_SSL="maybe": not a boolean' \
	"$(journalctl -u queen.service -o cat --no-pager)"
sed -i '/^PG_USE_SSL=maybe$/d' /etc/queen/queen.env
reset_unit queen.service queen.socket
systemctl start queen.socket
read -r code body <<<"$(http POST /api/v1/push '{"items":[{"queue":"upgrade","payload":{"kept":"across the upgrade"}}]}')"
expect_eq "fixed config serves again" 201 "$code"

# --- queen-proxy: its own database, enabled by hand, forwarding for a tenant ---------
runuser -u postgres -- psql -qAt -c 'CREATE ROLE "queen-proxy" LOGIN' -c 'CREATE DATABASE queen_proxy OWNER "queen-proxy"' >/dev/null
admin_token=box-admin-token-0123456789abcdef0123
cat >>/etc/queen/queen-proxy.env <<ENV
PG_HOST=/run/postgresql
PG_USER=queen-proxy
PG_DB=queen_proxy
QUEEN_PROXY_LOGIN=false
QUEEN_PROXY_ADMIN_TOKEN=$admin_token
ENV
# The broker scopes by the proxy's tenant header.
echo "QUEEN_TENANCY_HEADER=X-Queen-Tenant" >>/etc/queen/queen.env
systemctl restart queen.service
check "systemctl enable --now queen-proxy.socket queen-proxy-admin.socket" \
	systemctl enable --now queen-proxy.socket queen-proxy-admin.socket
expect_eq "queen-proxy sockets listening, service idle" "active active inactive" \
	"$(systemctl is-active queen-proxy.socket queen-proxy-admin.socket queen-proxy.service | tr '\n' ' ' | sed 's/ $//')"
PROXY=http://127.0.0.1:6640 PADMIN=http://127.0.0.1:6641
body=$(curl -s --max-time 30 "$PROXY/health" 2>&1)
expect_eq "queen-proxy /health through queen-proxy.socket" '{"status":"ok"}' "$body"
wait_until 20 systemctl is-active --quiet queen-proxy.service
expect_eq "queen-proxy runs as user queen-proxy" queen-proxy "$(ps -o user= -p "$(show queen-proxy.service MainPID)" | tr -d ' ')"
journal=$(journalctl -u queen-proxy.service -o cat --no-pager)
expect_match "queen-proxy: listeners from the two sockets" 'listening on sockets from systemd socket activation.*"http":"\[::\]:6640","admin":"127.0.0.1:6641"' "$journal"
expect_match "queen-proxy: watchdog on" '"msg":"systemd watchdog on"' "$journal"
if wait_until 30 sh -c "curl -fs $PROXY/health/ready"; then pass "queen-proxy ready (database and broker up)"; else
	fail "queen-proxy ready" "$(curl -s "$PROXY/health/ready")"; fi
code=$(curl -s -o /tmp/tenant.json -w '%{http_code}' -H "Authorization: Bearer $admin_token" -H 'Content-Type: application/json' \
	--data '{"id":"acme","name":"Acme"}' "$PADMIN/admin/v1/tenants")
expect_eq "admin API: tenant created" 201 "$code"
curl -s -o /tmp/key.json -H "Authorization: Bearer $admin_token" -H 'Content-Type: application/json' \
	--data '{"name":"app","scope":"write"}' "$PADMIN/admin/v1/tenants/acme/keys"
key=$(sed -n 's/.*"key":"\([^"]*\)".*/\1/p' /tmp/key.json)
if [ -n "$key" ]; then pass "admin API: key minted"; else fail "admin API: key minted" "$(cat /tmp/key.json)"; fi
code=$(curl -s -o /tmp/ppush.json -w '%{http_code}' --max-time 30 -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
	--data '{"items":[{"queue":"orders","payload":{"via":"proxy"}}]}' "$PROXY/api/v1/push")
expect_eq "push through queen-proxy with the tenant's key: 201" 201 "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 -H 'Content-Type: application/json' \
	--data '{"items":[{"queue":"orders","payload":{"via":"nokey"}}]}' "$PROXY/api/v1/push")
expect_eq "push through queen-proxy without a key: 401" 401 "$code"
expect_eq "the broker stored it under the tenant's name" 1 "$(psql_q "SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'acme:orders'")"
body=$(curl -s --max-time 30 -H 'X-Queen-Tenant: acme' "$URL/api/v1/pop/queue/orders?autoAck=true")
expect_match "the tenant's pop at the broker returns it" '"via":"proxy"' "$body"

# --- upgrade: conffile kept without a prompt, service restarted on v2 ------------
rm -rf /etc/systemd/system/queen.service.d
systemctl daemon-reload
old=$(show queen.service MainPID) oldp=$(show queen-proxy.service MainPID)
check "dpkg -i v2 ($V2) with no conffile prompt (stdin closed)" dpkg -i "$SHARE/v2.deb" </dev/null
expect_match "edited queen.env kept" '^# edited by the deb test$' "$(cat /etc/queen/queen.env)"
expect_match "edited setting kept" '^PG_HOST=/run/postgresql$' "$(cat /etc/queen/queen.env)"
wait_until 20 systemctl is-active --quiet queen.service
new=$(show queen.service MainPID)
if [ "$new" != 0 ] && [ "$new" != "$old" ]; then pass "upgrade restarted queen.service ($old → $new)"; else fail "upgrade restarted queen.service" "old=$old new=$new"; fi
read -r code body <<<"$(http GET /health)"
expect_match "serving version $V2" "\"version\":\"${V2//+/\\+}\"" "$body"
wait_until 20 systemctl is-active --quiet queen-proxy.service
newp=$(show queen-proxy.service MainPID)
if [ "$newp" != 0 ] && [ "$newp" != "$oldp" ]; then pass "upgrade restarted queen-proxy.service ($oldp → $newp)"; else fail "upgrade restarted queen-proxy.service" "old=$oldp new=$newp"; fi
expect_eq "upgrade kept queen-proxy enabled" "enabled enabled" "$(systemctl is-enabled queen-proxy.socket queen-proxy-admin.socket | tr '\n' ' ' | sed 's/ $//')"
expect_match "edited queen-proxy.env kept" '^QUEEN_PROXY_LOGIN=false$' "$(cat /etc/queen/queen-proxy.env)"
expect_match "old process drained on upgrade" '"msg":"stopped"' "$(journalctl -u queen.service _PID="$old" -o cat --no-pager)"
read -r code body <<<"$(http GET '/api/v1/pop/queue/upgrade?autoAck=true')"
expect_match "data pushed before the upgrade pops after it" '"kept":"across the upgrade"' "$body"

# --- remove and purge -------------------------------------------------------------
check "dpkg -r" dpkg -r queen
expect_eq "remove: socket and service stopped" "inactive inactive" \
	"$(systemctl is-active queen.socket) $(systemctl is-active queen.service)"
expect_eq "remove: queen-proxy stopped" "inactive inactive inactive" \
	"$(systemctl is-active queen-proxy.socket queen-proxy-admin.socket queen-proxy.service | tr '\n' ' ' | sed 's/ $//')"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/health/live" 2>/dev/null) || true
expect_eq "remove: nothing listens on 6632" 000 "${code:-000}"
expect_eq "remove: no enablement symlinks left" "" "$(find /etc/systemd/system -name 'queen*' 2>/dev/null)"
check "remove: queen.env kept" test -f /etc/queen/queen.env
check "remove: /var/lib/queen kept" test -d /var/lib/queen
check "remove: binary gone" test ! -e /usr/bin/queen
check "dpkg -P" dpkg -P queen
check "purge: /etc/queen gone" test ! -e /etc/queen
check "purge: /var/lib/queen gone" test ! -e /var/lib/queen
check "purge: user queen kept (Debian policy)" getent passwd queen
check "purge: no deb-systemd-helper state left" test -z "$(find /var/lib/systemd/deb-systemd-helper-enabled -name 'queen*' 2>/dev/null)"

finish
