#!/usr/bin/env bash
#
# pgtest.sh: a throwaway PostgreSQL cluster for tests.
#
#   scripts/pgtest.sh run [--] CMD [ARG...]
#       Start a cluster, export QUEEN_TEST_DATABASE_URL and PG_HOST, PG_PORT,
#       PG_USER, PG_PASSWORD, PG_DB (plus PGTEST_DIR), run CMD, then stop the
#       cluster and remove its directory on any exit, signals included. Exits
#       with CMD's status. If QUEEN_TEST_DATABASE_URL is already set, just runs
#       CMD against that database.
#   scripts/pgtest.sh start [LINK]
#       Start a cluster and print `export NAME='value'` lines for eval, and the
#       state directory. With LINK, also make LINK a symlink to the state
#       directory; if LINK already points at a running cluster, reuse it.
#       Use: eval "$(scripts/pgtest.sh start)"
#   scripts/pgtest.sh env DIR|LINK    print the export lines of a running cluster
#   scripts/pgtest.sh url DIR|LINK    print its QUEEN_TEST_DATABASE_URL
#   scripts/pgtest.sh stop DIR|LINK   stop it and remove DIR (and LINK)
#
# PGTEST_PROFILE=durable starts the cluster with fsync, synchronous_commit and
# full_page_writes on (PostgreSQL's defaults) instead of off (fast, the default).
# Server binaries are found on PATH, via pg_config --bindir, or in
# /usr/lib/postgresql/*/bin (newest first); as root, the Debian packages are
# installed if none are found. See scripts/lib/pg.sh.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib/pg.sh"

usage() {
	sed -n '3,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# state_dir resolves DIR or LINK to a state directory created by pg_start. It
# returns 3 if there is no such directory, and exits if it is not one of ours.
state_dir() {
	local arg=${1:-} dir
	[ -n "$arg" ] || usage
	dir=$arg
	if [ -L "$arg" ]; then dir=$(readlink "$arg"); fi
	if [ ! -d "$dir" ]; then
		return 3
	fi
	# Refuse to touch a directory that is not one of ours.
	[ -f "$dir/port" ] || [ -f "$dir/data/PG_VERSION" ] || [ -f "$dir/initdb.log" ] \
		|| pg_die "$dir does not look like a pgtest state directory"
	echo "$dir"
}

cmd_run() {
	[ "${1:-}" = -- ] && shift
	[ $# -gt 0 ] || usage
	if [ -n "${QUEEN_TEST_DATABASE_URL:-}" ]; then
		exec "$@"
	fi
	PGTEST_DIR=
	trap 'pg_stop "$PGTEST_DIR"' EXIT
	# Until the child runs, a signal just exits (and the EXIT trap cleans up).
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	pg_start
	pg_watch $$ "$PGTEST_DIR"
	pg_export "$PGTEST_DIR"
	pg_log "PostgreSQL on 127.0.0.1:$PG_PORT ($PGTEST_DIR, profile ${PGTEST_PROFILE:-fast}), QUEEN_TEST_DATABASE_URL=$QUEEN_TEST_DATABASE_URL"
	pg_run_child "$@"
	exit "$PG_CHILD_STATUS"
}

cmd_start() {
	local link=${1:-} dir
	if [ -n "$link" ]; then
		if dir=$(state_dir "$link") && pg_running "$dir"; then
			pg_log "reusing the running cluster in $dir (profile $(cat "$dir/profile" 2>/dev/null || echo fast))"
			pg_env "$dir"
			return 0
		fi
		if [ -L "$link" ]; then
			# Stale: the cluster died or its directory was removed (reboot).
			dir=$(readlink "$link")
			[ -d "$dir" ] && pg_stop "$dir"
			rm -f "$link"
		elif [ -e "$link" ]; then
			pg_die "$link exists and is not a symlink to a pgtest state directory"
		fi
	fi
	PGTEST_DIR=
	trap 'pg_stop "$PGTEST_DIR"' EXIT
	pg_start
	if [ -n "$link" ]; then ln -sfn "$PGTEST_DIR" "$link"; fi
	trap - EXIT
	pg_env "$PGTEST_DIR"
	printf '# state: %s\n# stop with: %s stop %s\n' "$PGTEST_DIR" "$0" "${link:-$PGTEST_DIR}"
}

# lookup is state_dir for commands that need an existing cluster.
lookup() {
	local dir rc=0
	dir=$(state_dir "${1:-}") || rc=$?
	[ "$rc" = 3 ] && pg_die "no pgtest cluster at ${1:-}"
	[ "$rc" = 0 ] || exit "$rc"
	echo "$dir"
}

cmd_env() {
	local dir
	dir=$(lookup "${1:-}")
	pg_running "$dir" || pg_die "the cluster in $dir is not running"
	pg_env "$dir"
}

cmd_url() {
	local dir
	dir=$(lookup "${1:-}")
	pg_url "$dir"
}

cmd_stop() {
	local arg=${1:-} dir rc=0
	[ -n "$arg" ] || usage
	dir=$(state_dir "$arg") || rc=$?
	case $rc in
	0) pg_stop "$dir"; pg_log "stopped and removed $dir" ;;
	3) pg_log "no pgtest cluster at $arg" ;;
	*) exit "$rc" ;;
	esac
	if [ -L "$arg" ]; then rm -f "$arg"; fi
}

case "${1:-}" in
run) shift; cmd_run "$@" ;;
start) shift; cmd_start "$@" ;;
env) shift; cmd_env "$@" ;;
url) shift; cmd_url "$@" ;;
stop) shift; cmd_stop "$@" ;;
*) usage ;;
esac
