# shellcheck shell=bash
# shellcheck disable=SC2034 # PGTEST_DIR and PG_CHILD_* are results for the caller
#
# Throwaway PostgreSQL clusters for tests and `make run`.
# Sourced by scripts/pgtest.sh and scripts/run.sh; defines functions only.
#
# A cluster lives in one state directory (mktemp -d under $TMPDIR, or /tmp when
# running as root and $TMPDIR is not reachable by the postgres user):
#
#   DIR/data/        PGDATA (initdb --no-sync -A trust -U postgres -E UTF8)
#   DIR/.s.PGSQL.N   the Unix socket (-k DIR)
#   DIR/postgres.log server log
#   DIR/port         the TCP port on 127.0.0.1
#   DIR/profile      the durability profile it was started with (fast or durable)
#   DIR/env          `export NAME='value'` lines (QUEEN_TEST_DATABASE_URL, PG_*)
#
# initdb, pg_ctl and postgres refuse to run as root. As root, DIR is chowned to
# $PGTEST_OS_USER (default postgres) and the server commands run through runuser.
#
# Tunables (environment): PGTEST_BINDIR (directory holding initdb and pg_ctl),
# PGTEST_OS_USER (default postgres), PGTEST_MAX_CONNECTIONS (default 300), and
# PGTEST_PROFILE:
#   fast     (default) fsync=off, synchronous_commit=off, full_page_writes=off: a
#            commit is not on disk; for tests, and the bench's second report.
#   durable  fsync, synchronous_commit and full_page_writes on (PostgreSQL's
#            defaults): what a production server runs; for the bench. Put TMPDIR on
#            the disk you mean to measure (not a tmpfs: fsync would cost nothing).
# Both profiles change nothing else from PostgreSQL's defaults but the listen
# address, port and socket directory, and max_connections (raised).

pg_log() { printf 'pgtest: %s\n' "$*" >&2; }
pg_die() { pg_log "error: $*"; exit 1; }

# pg_bindir_find prints a directory holding initdb and pg_ctl, or returns 1.
# Order: $PGTEST_BINDIR, PATH, `pg_config --bindir`, the newest
# /usr/lib/postgresql/*/bin (Debian), the newest /usr/pgsql-*/bin (RHEL).
pg_bindir_find() {
	local d c
	d=${PGTEST_BINDIR:-}
	if [ -n "$d" ]; then
		[ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
		pg_log "PGTEST_BINDIR=$d has no initdb and pg_ctl; searching elsewhere"
	fi
	if c=$(command -v initdb 2>/dev/null) && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$c"
		return 0
	fi
	if command -v pg_config >/dev/null 2>&1; then
		d=$(pg_config --bindir 2>/dev/null || true)
		[ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
	fi
	# An unmatched glob stays literal and fails the -x test.
	for d in $(printf '%s\n' /usr/lib/postgresql/*/bin /usr/pgsql-*/bin | sort -rV); do
		[ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
	done
	return 1
}

# pg_install installs the distribution's PostgreSQL server packages (root only,
# Debian/Ubuntu apt). The package's postinst may create and start a "main"
# cluster on 5432; we stop it again so that nothing is left running: our
# clusters never use it.
pg_install() {
	[ "$(id -u)" = 0 ] || pg_die "PostgreSQL server binaries (initdb, pg_ctl) not found; install them (Debian: apt-get install postgresql) or set PGTEST_BINDIR"
	command -v apt-get >/dev/null 2>&1 || pg_die "PostgreSQL server binaries not found and apt-get is unavailable; install PostgreSQL 15+ or set PGTEST_BINDIR"
	pg_log "PostgreSQL server binaries not found; installing Debian packages (apt-get install postgresql)"
	# Wait for the dpkg lock: another pgtest.sh may be installing at the same time.
	apt-get -o DPkg::Lock::Timeout=300 update -qq >&2 || pg_die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
		--no-install-recommends postgresql >&2 \
		|| pg_die "apt-get install postgresql failed"
	if command -v pg_lsclusters >/dev/null 2>&1; then
		local ver name port status _
		while read -r ver name port status _; do
			if [ "$status" = online ]; then
				pg_log "stopping the cluster $ver/$name (port $port) that the package started"
				pg_ctlcluster "$ver" "$name" stop >&2 || true
			fi
		done < <(pg_lsclusters -h 2>/dev/null)
	fi
}

# pg_bindir prints the server bin directory, installing packages if needed.
pg_bindir() {
	local d
	if d=$(pg_bindir_find); then echo "$d"; return 0; fi
	pg_install
	d=$(pg_bindir_find) || pg_die "PostgreSQL server binaries still not found after installing"
	echo "$d"
}

# pg_as_owner runs a server command as the cluster owner: directly for a
# non-root user, through runuser as root. Runs from / so that an unreadable
# working directory (root's home) does not bother initdb.
pg_as_owner() {
	if [ "$(id -u)" = 0 ]; then
		(cd / && runuser -u "${PGTEST_OS_USER:-postgres}" -- "$@")
	else
		(cd / && "$@")
	fi
}

# pg_tmp_parent prints a directory for the state directory: $TMPDIR or /tmp,
# but as root only if the postgres user can reach it.
pg_tmp_parent() {
	local p=${TMPDIR:-/tmp}
	p=${p%/}
	if [ "$(id -u)" = 0 ] && ! runuser -u "${PGTEST_OS_USER:-postgres}" -- test -x "$p" 2>/dev/null; then
		p=/tmp
	fi
	echo "${p:-/tmp}"
}

# pg_port_busy succeeds if something accepts TCP connections on 127.0.0.1:$1.
pg_port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# pg_url prints the connection URL of the cluster in DIR.
pg_url() {
	printf 'postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable\n' "$(cat "$1/port")"
}

# pg_env prints `export` lines for the cluster in DIR: the test URL, the
# daemon's PG_* variables, libpq's PGHOST/PGPORT/PGUSER/PGDATABASE (so a bare
# psql reaches the cluster), and PGTEST_DIR.
pg_env() {
	local port
	port=$(cat "$1/port")
	printf "export QUEEN_TEST_DATABASE_URL='%s'\n" "$(pg_url "$1")"
	printf "export PG_HOST='127.0.0.1'\n"
	printf "export PG_PORT='%s'\n" "$port"
	printf "export PG_USER='postgres'\n"
	printf "export PG_PASSWORD=''\n"
	printf "export PG_DB='postgres'\n"
	printf "export PGHOST='127.0.0.1' PGPORT='%s' PGUSER='postgres' PGDATABASE='postgres'\n" "$port"
	printf "export PGTEST_DIR='%s'\n" "$1"
}

# pg_export sets the variables of pg_env in the current shell.
pg_export() {
	eval "$(pg_env "$1")"
}

# pg_running succeeds if the cluster in DIR has a live postmaster.
pg_running() {
	local pid
	[ -f "$1/data/postmaster.pid" ] || return 1
	pid=$(head -n1 "$1/data/postmaster.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	# kill -0 also succeeds on a zombie (a killed postmaster not yet reaped).
	if [ -r "/proc/$pid/stat" ]; then
		! grep -q '^[0-9]* (.*) Z ' "/proc/$pid/stat"
	fi
}

# pg_durability_flags prints the server flags of the profile $1 (fast or durable).
pg_durability_flags() {
	case $1 in
	fast) echo "-c fsync=off -c synchronous_commit=off -c full_page_writes=off" ;;
	durable) echo "-c fsync=on -c synchronous_commit=on -c full_page_writes=on" ;;
	*) return 1 ;;
	esac
}

# pg_start creates and starts a fresh cluster with the durability of
# $PGTEST_PROFILE (default fast) and sets PGTEST_DIR to its state directory. On
# failure it removes what it created and exits.
pg_start() {
	local bindir dir parent port try locale log profile durability
	profile=${PGTEST_PROFILE:-fast}
	durability=$(pg_durability_flags "$profile") \
		|| pg_die "PGTEST_PROFILE=$profile: must be fast or durable"
	bindir=$(pg_bindir) || exit 1
	parent=$(pg_tmp_parent)
	dir=$(mktemp -d "$parent/queen-pgtest.XXXXXXXX") || pg_die "mktemp -d in $parent failed"
	PGTEST_DIR=$dir
	if [ "$(id -u)" = 0 ]; then
		id "${PGTEST_OS_USER:-postgres}" >/dev/null 2>&1 || {
			rm -rf "$dir"
			pg_die "running as root but user ${PGTEST_OS_USER:-postgres} does not exist (initdb refuses root)"
		}
		chown "${PGTEST_OS_USER:-postgres}:" "$dir"
	fi
	chmod 700 "$dir"

	locale=C
	if locale -a 2>/dev/null | grep -ix 'c\.utf-\?8' >/dev/null; then locale=C.UTF-8; fi
	if ! pg_as_owner env LC_ALL=C "$bindir/initdb" --no-sync -A trust -U postgres -E UTF8 \
		--locale="$locale" -D "$dir/data" >"$dir/initdb.log" 2>&1; then
		cat "$dir/initdb.log" >&2
		pg_stop "$dir"
		pg_die "initdb failed"
	fi

	log="$dir/postgres.log"
	for try in 1 2 3 4 5 6 7 8 9 10; do
		# Below Linux's ephemeral range (32768+), so outgoing connections never hold it.
		port=$((20000 + RANDOM % 12000))
		pg_port_busy "$port" && continue
		if pg_as_owner env LC_ALL=C "$bindir/pg_ctl" -D "$dir/data" -l "$log" -w -t 60 -s \
			-o "-c listen_addresses=127.0.0.1 -p $port -k '$dir' $durability -c max_connections=${PGTEST_MAX_CONNECTIONS:-300}" \
			start >&2; then
			echo "$port" >"$dir/port"
			echo "$bindir" >"$dir/bindir"
			echo "$profile" >"$dir/profile"
			pg_env "$dir" >"$dir/env"
			chmod 644 "$dir/port" "$dir/bindir" "$dir/profile" "$dir/env" 2>/dev/null || true
			return 0
		fi
		# Lost a race for the port: try another. Anything else is fatal.
		if ! grep -q -e 'could not bind' -e 'could not create any TCP/IP sockets' "$log" 2>/dev/null; then
			cat "$log" >&2 2>/dev/null || true
			pg_stop "$dir"
			pg_die "pg_ctl start failed"
		fi
		: >"$log"
	done
	pg_stop "$dir"
	pg_die "no free TCP port found after $try tries"
}

# pg_stop stops the cluster in DIR (immediate mode: it is throwaway) and
# removes DIR. Safe to call on a half-created or already stopped cluster.
pg_stop() {
	local dir=$1 bindir pid
	[ -n "$dir" ] && [ -d "$dir" ] || return 0
	if pg_running "$dir"; then
		bindir=$(cat "$dir/bindir" 2>/dev/null || pg_bindir_find || true)
		if [ -n "$bindir" ]; then
			pg_as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w -t 30 -s stop >&2 2>/dev/null || true
		fi
		if pg_running "$dir"; then
			pid=$(head -n1 "$dir/data/postmaster.pid")
			kill -QUIT "$pid" 2>/dev/null || true
			for _ in 1 2 3 4 5 6 7 8 9 10; do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.2
			done
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	rm -rf "$dir"
}

# pg_watch stops and removes the cluster in DIR once process PID is gone. It is
# the safety net for a caller killed with SIGKILL, whose EXIT trap never runs;
# after a normal exit it finds nothing left to do and ends within a second.
pg_watch() {
	local pid=$1 dir=$2
	(
		trap '' INT TERM HUP
		while kill -0 "$pid" 2>/dev/null; do sleep 1; done
		pg_stop "$dir"
	) </dev/null >/dev/null 2>&1 &
}

# pg_run_child runs "$@" as a child of this shell with stdin and default
# INT/QUIT handling, forwards INT, TERM and HUP to it, waits for it to exit
# (also after forwarding) and sets PG_CHILD_STATUS to its exit status. The
# caller's EXIT trap does the cleanup afterwards.
pg_run_child() {
	local sig
	# `<&0`: without it, bash gives a background command /dev/null as stdin.
	if { : <&0; } 2>/dev/null; then
		(trap - INT QUIT; exec "$@") <&0 &
	else
		(trap - INT QUIT; exec "$@") </dev/null &
	fi
	PG_CHILD_PID=$!
	for sig in INT TERM HUP; do
		# shellcheck disable=SC2064
		trap "PG_CHILD_SIGNALED=$sig; kill -$sig $PG_CHILD_PID 2>/dev/null || true" "$sig"
	done
	while :; do
		PG_CHILD_SIGNALED=
		PG_CHILD_STATUS=0
		wait "$PG_CHILD_PID" || PG_CHILD_STATUS=$?
		# A trapped signal interrupts wait with 128+n; wait again for the real
		# status (bash remembers it even if the child is already reaped).
		[ -n "$PG_CHILD_SIGNALED" ] || break
	done
	trap - INT TERM HUP
}
