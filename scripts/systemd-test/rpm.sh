#!/usr/bin/env bash
# rpm.sh: the rpm lifecycle, the backup timer's service and two replicas, in a
# disposable systemd. Run inside the box by scripts/systemd-test.sh with
# /mnt/share/v1.rpm, /mnt/share/v2.rpm and /mnt/share/versions.
#
# rpm -i (scriptlets with rpm's integer $1 against a real systemd) → first request,
# push/pop → queen-backup.service: a dump pg_restore --list accepts, the password via
# a pgpass file (never argv), rotation → replicas queen@1 and queen@2 on port 6632
# (ReusePort=) serving the same data → rpm -U (service still running afterwards:
# the old %preun must not stop it) → rpm -e (stopped, disabled, edited env file kept
# as .rpmsave).
# Debian's rpm has an empty package database, so --nodeps skips the dependencies
# (postgresql, systemd), and it warns on every call; both are harmless here.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC1091
. "$SHARE/versions"

no_policy_rc_d
pg_setup
log "PostgreSQL ready ($PG_UNIT)"
rpmq() { rpm "$@" 2>&1 | grep -v 'should not be used directly'; }

# --- install ---------------------------------------------------------------------
check "rpm -i v1 ($V1)" rpm -i --nodeps "$SHARE/v1.rpm"
expect_eq "rpm -q" "queen-$V1-1.x86_64" "$(rpmq -q queen)"
check "user queen created" getent passwd queen
expect_eq "queen.socket enabled and listening" "enabled active" \
	"$(systemctl is-enabled queen.socket) $(systemctl is-active queen.socket)"
expect_eq "queen-backup.timer enabled and waiting" "enabled active" \
	"$(systemctl is-enabled queen-backup.timer) $(systemctl is-active queen-backup.timer)"
expect_match "queen.env is %config(noreplace)" '^cn /etc/queen/queen.env$' \
	"$(rpmq -q --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' queen)"
check "user queen-proxy created" getent passwd queen-proxy
expect_eq "preset: queen-proxy disabled" "disabled disabled disabled" \
	"$(systemctl is-enabled queen-proxy.socket queen-proxy-admin.socket queen-proxy.service 2>&1 | tr '\n' ' ' | sed 's/ $//')"
expect_eq "man -w queen-proxy" /usr/share/man/man8/queen-proxy.8.gz "$(man -w queen-proxy 2>&1)"

queen_env
echo "# edited by the rpm test" >>/etc/queen/queen.env
read -r code body <<<"$(http POST /api/v1/push '{"items":[{"queue":"rpm","payload":{"from":"rpm"}}]}')"
expect_eq "first request (push) through the socket: 201" 201 "$code"
read -r code body <<<"$(http GET '/api/v1/pop/queue/rpm?autoAck=true')"
expect_match "pop returns it" '"from":"rpm"' "$body"
expect_match "StatusText ready" '^ready: ' "$(show queen.service StatusText)"

# --- backup ------------------------------------------------------------------------
read -r code body <<<"$(http POST /api/v1/push '{"items":[{"queue":"backed-up","payload":{"n":1}}]}')"
check "backup: queen-backup.service runs (peer authentication)" systemctl start queen-backup.service
expect_eq "backup: result" "success 0" "$(show queen-backup.service Result) $(show queen-backup.service ExecMainStatus)"
dump=$(find /var/lib/queen/backups -name 'queen-*.dump' | sort | tail -1)
if [ -n "$dump" ]; then pass "backup: dump written ($dump)"; else fail "backup: dump written" "$(ls -la /var/lib/queen/backups 2>&1)"; fi
expect_eq "backup: dump owned by queen, mode 600" "queen 600" "$(stat -c '%U %a' "$dump" 2>&1)"
list=$(pg_restore --list "$dump" 2>&1)
expect_match "backup: pg_restore --list reads it, with queen.messages" 'TABLE (DATA )?queen messages' "$list"
runuser -u postgres -- createdb restored
# The dump is queen's (0600): root reads it and feeds pg_restore, run as postgres.
check "backup: pg_restore into a fresh database" sh -c "runuser -u postgres -- pg_restore --no-owner -d restored <'$dump'"
expect_eq "backup: restored data" 1 "$(runuser -u postgres -- psql -qAtX -d restored -c "SELECT count(*) FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'backed-up'" 2>&1)"

# With a password over TCP: it must reach pg_dump through a pgpass file. ':' and '\'
# exercise the pgpass escaping.
pw='s3cret:with\colon'
psql_q "ALTER ROLE queen PASSWORD '$pw'" >/dev/null
printf 'PG_HOST=127.0.0.1\nPG_PASSWORD="%s"\n' "${pw//\\/\\\\}" >/etc/queen/backup-test.env
mkdir -p /etc/systemd/system/queen-backup.service.d
cat >/etc/systemd/system/queen-backup.service.d/test.conf <<'UNIT'
[Service]
EnvironmentFile=/etc/queen/backup-test.env
Environment=KEEP=2
ExecStartPost=/bin/sh -c 'echo "runtime directory: $$(ls -A "$$RUNTIME_DIRECTORY")"'
UNIT
systemctl daemon-reload
for i in 1 2 3; do
	sleep 1.1 # dump names have one-second resolution
	check "backup: run $i with a password over TCP, KEEP=2" systemctl start queen-backup.service
done
expect_eq "backup: rotation keeps 2 dumps" 2 "$(find /var/lib/queen/backups -name 'queen-*.dump' | wc -l)"
expect_match "backup: pgpass file in the private runtime directory" 'runtime directory: pgpass' \
	"$(journalctl -u queen-backup.service -o cat --no-pager)"
check "backup: runtime directory removed afterwards" test ! -e /run/queen-backup
expect_match "backup: journal" 'queen-backup: keeping the newest 2 dumps; removed' "$(journalctl -u queen-backup.service -o cat --no-pager)"
if journalctl -o cat --no-pager | grep -F "$pw" >/dev/null; then fail "backup: password never logged"; else pass "backup: password never logged"; fi
rm -rf /etc/systemd/system/queen-backup.service.d /etc/queen/backup-test.env
systemctl daemon-reload
expect_match "backup timer scheduled" 'queen-backup.timer' "$(systemctl list-timers --all --no-pager)"

# --- two replicas on one port, one database --------------------------------------
systemctl disable --now queen.socket queen.service >/dev/null 2>&1
check "replicas: enable --now queen@1.socket queen@2.socket" systemctl enable --now queen@1.socket queen@2.socket
expect_eq "replicas: two listeners on port 6632" 2 "$(ss -Hltn 'sport = :6632' | wc -l)"
for i in $(seq 1 40); do
	code=$(push replicas "r-$i")
	[ "$code" = 201 ] || fail "replicas: push r-$i" "HTTP $code"
done
expect_eq "replicas: both activated by the pushes" "active active" \
	"$(systemctl is-active queen@1.service) $(systemctl is-active queen@2.service)"
popped=""
for i in $(seq 1 60); do
	read -r code body <<<"$(http GET '/api/v1/pop/queue/replicas?autoAck=true')"
	[ "$code" = 200 ] && popped+="$(printf '%s' "$body" | grep -o '"tx":"r-[0-9]*"')"$'\n'
done
expect_eq "replicas: all 40 messages popped exactly once across both" 40 "$(printf '%s' "$popped" | grep -c . || true)"
expect_eq "replicas: no duplicates" 40 "$(printf '%s' "$popped" | grep . | sort -u | wc -l)"
for i in 1 2; do
	expect_match "replica $i: QUEEN_INSTANCE=$i and its own spool directory" \
		"\"FILE_BUFFER_DIR\":\\{\"value\":\"/var/lib/queen/$i/spool\".*\"QUEEN_INSTANCE\":\\{\"value\":\"$i\"" \
		"$(journalctl -u "queen@$i.service" -o cat --no-pager)"
	expect_eq "replica $i: state directory" "queen 750" "$(stat -c '%U %a' /var/lib/queen/$i/spool 2>&1)"
done
p1=$(show queen@1.service MainPID) p2=$(show queen@2.service MainPID)
check "replicas: systemctl restart queen.target" systemctl restart queen.target
# The propagated restarts (PartOf=) are not waited for: wait for both READY=1.
wait_until 20 systemctl is-active --quiet queen@1.service queen@2.service
if [ "$(show queen@1.service MainPID)" != "$p1" ] && [ "$(show queen@2.service MainPID)" != "$p2" ] &&
	systemctl is-active --quiet queen@1.service queen@2.service; then
	pass "replicas: queen.target restarted both"
else
	fail "replicas: queen.target restarted both" "$p1→$(show queen@1.service MainPID) $p2→$(show queen@2.service MainPID)" \
		"$(systemctl status --no-pager queen.target 'queen@*' 2>&1 | tail -40)"
fi
# Replica 2 stays enabled and running next to queen.service through the upgrade and the
# erase: both must be restarted by the upgrade, and the erase must disable the template's
# instances too.
systemctl disable --now queen@1.socket >/dev/null 2>&1
systemctl stop queen@1.service
systemctl enable --now queen.socket >/dev/null 2>&1
systemctl start queen.service
read -r code body <<<"$(http POST /api/v1/push '{"items":[{"queue":"upgrade","payload":{"kept":"rpm"}}]}')"
expect_eq "queen.service and queen@2 side by side" 201 "$code"

# --- upgrade and erase ---------------------------------------------------------------
old=$(show queen.service MainPID) old2=$(show queen@2.service MainPID)
check "rpm -U v2 ($V2)" rpm -U --nodeps "$SHARE/v2.rpm"
expect_eq "rpm -q after upgrade" "queen-$V2-1.x86_64" "$(rpmq -q queen)"
wait_until 20 systemctl is-active --quiet queen.service
new=$(show queen.service MainPID)
if [ "$new" != 0 ] && [ "$new" != "$old" ] && systemctl is-active --quiet queen.service; then
	pass "upgrade: service restarted and still running after the old %preun/%postun ($old → $new)"
else
	fail "upgrade: service restarted and still running" "old=$old new=$new state=$(systemctl is-active queen.service)"
fi
expect_eq "upgrade: socket still enabled and listening" "enabled active" \
	"$(systemctl is-enabled queen.socket) $(systemctl is-active queen.socket)"
wait_until 20 systemctl is-active --quiet queen@2.service
new2=$(show queen@2.service MainPID)
if [ "$new2" != 0 ] && [ "$new2" != "$old2" ]; then pass "upgrade: replica queen@2 restarted too ($old2 → $new2)"; else fail "upgrade: replica queen@2 restarted too" "old=$old2 new=$new2"; fi
expect_match "upgrade: edited queen.env kept" '^# edited by the rpm test$' "$(cat /etc/queen/queen.env)"
check "upgrade: no .rpmnew (the shipped file did not change)" test ! -e /etc/queen/queen.env.rpmnew
read -r code body <<<"$(http GET /health)"
expect_match "upgrade: serving version $V2" "\"version\":\"${V2//+/\\+}\"" "$body"
read -r code body <<<"$(http GET '/api/v1/pop/queue/upgrade?autoAck=true')"
expect_match "upgrade: data kept" '"kept":"rpm"' "$body"

check "rpm -e" rpm -e queen
expect_eq "erase: queen-proxy units gone" "" "$(systemctl list-unit-files 'queen-proxy*' --no-legend 2>&1)"
expect_eq "erase: sockets and services stopped" "inactive inactive inactive inactive" \
	"$(systemctl is-active queen.socket queen.service queen@2.socket queen@2.service | tr '\n' ' ' | sed 's/ $//')"
expect_eq "erase: no enablement symlinks left" "" "$(find /etc/systemd/system -name 'queen*' 2>/dev/null)"
check "erase: edited queen.env saved as .rpmsave" test -f /etc/queen/queen.env.rpmsave
check "erase: binary gone" test ! -e /usr/bin/queen
check "erase: dumps kept" test -n "$(find /var/lib/queen/backups -name 'queen-*.dump')"

finish
