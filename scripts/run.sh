#!/usr/bin/env bash
#
# run.sh: serve the broker for development (make run).
#
#   scripts/run.sh [QUEEN_FLAG...]
#
# If any PG_* variable is set, bin/queen is exec'd against that database as is.
# Otherwise a throwaway PostgreSQL cluster is started (scripts/lib/pg.sh; as root
# the Debian packages are installed if missing), PG_HOST, PG_PORT, PG_USER,
# PG_PASSWORD and PG_DB point queen at it, and HOST (127.0.0.1) and
# FILE_BUFFER_DIR (inside the cluster's directory) default to development-safe
# values. queen runs in the foreground; Ctrl-C or SIGTERM is forwarded to it,
# and once it has exited the cluster is stopped and removed. The exit status is
# queen's.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib/pg.sh"

queen=$root/bin/queen
[ -x "$queen" ] || pg_die "$queen not found; run make build (or make run)"

if [ -n "$(compgen -e PG_ || true)" ]; then
	printf 'run: using the database from PG_* (PG_HOST=%s PG_PORT=%s PG_DB=%s)\n' \
		"${PG_HOST:-localhost}" "${PG_PORT:-5432}" "${PG_DB:-postgres}" >&2
	printf 'run: queen on http://localhost:%s\n' "${PORT:-6632}" >&2
	exec "$queen" "$@"
fi

PGTEST_DIR=
trap 'pg_stop "$PGTEST_DIR"' EXIT
# Until queen runs, a signal just exits (and the EXIT trap cleans up).
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
pg_start
pg_watch $$ "$PGTEST_DIR"
pg_export "$PGTEST_DIR"
unset QUEEN_TEST_DATABASE_URL
export HOST=${HOST:-127.0.0.1}
export FILE_BUFFER_DIR=${FILE_BUFFER_DIR:-$PGTEST_DIR/spool}

cat >&2 <<MSG
run: throwaway PostgreSQL: $(pg_url "$PGTEST_DIR")
run:   (psql "$(pg_url "$PGTEST_DIR")"; removed when queen exits)
run: queen on http://localhost:${PORT:-6632}   (Ctrl-C to stop)
run:   curl -s -X POST localhost:${PORT:-6632}/api/v1/push -H 'Content-Type: application/json' -d '{"items":[{"queue":"demo","payload":{"hello":"world"}}]}'
run:   curl -s 'localhost:${PORT:-6632}/api/v1/pop/queue/demo?autoAck=true'
MSG

pg_run_child "$queen" "$@"
exit "$PG_CHILD_STATUS"
