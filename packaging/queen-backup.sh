#!/bin/sh
# queen-backup: one pg_dump of queen's schemas (queen, queen_streams), then rotation. Run by
# queen-backup.service (see /usr/share/doc/queen/backup.md), as the user queen.
#
# Connection: queen's own variables from /etc/queen/queen.env (PG_HOST and PG_PORT,
# lists included, PG_TARGET_SESSION_ATTRS, PG_USER, PG_DATABASE or PG_DB, PG_PASSWORD,
# PG_USE_SSL, PG_SSL_REJECT_UNAUTHORIZED, PG_SSL_ROOT_CERT, PG_SSL_CERT, PG_SSL_KEY),
# with queen's defaults and meanings: TLS verifies the server (verify-full) unless
# PG_SSL_REJECT_UNAUTHORIZED=false. The password comes from
# $CREDENTIALS_DIRECTORY/PG_PASSWORD if present, else PG_PASSWORD, and reaches pg_dump
# through a pgpass file in the unit's private runtime directory: never through the
# command line or the environment. Certificates and the key given as PEM text (or as
# credentials) are written to files there too.
#
# Output: $BACKUP_DIR (default /var/lib/queen/backups)/queen-YYYYmmddTHHMMSSZ.dump
# (pg_dump --format=custom, restore with pg_restore). Only a dump that
# pg_restore --list can read replaces older ones; the newest $KEEP (default 7) stay.
set -eu
umask 077

dir=${BACKUP_DIR:-/var/lib/queen/backups}
keep=${KEEP:-7}
case $keep in '' | *[!0-9]* | 0) echo "queen-backup: KEEP=$keep must be a positive integer" >&2; exit 2 ;; esac

# flag NAME DEFAULT: succeeds when the boolean setting NAME is true, read as queen reads
# it (true/1/yes/on or false/0/no/off, in any case; unset or empty: DEFAULT). Any other
# value stops the backup, as it stops queen.
flag() {
	eval "v=\${$1:-}"
	[ -n "$v" ] || v=$2
	case $(printf '%s' "$v" | tr '[:upper:]' '[:lower:]') in
	true | 1 | yes | on) return 0 ;;
	false | 0 | no | off) return 1 ;;
	esac
	echo "queen-backup: $1=$v is not a boolean (true/false, 1/0, yes/no or on/off)" >&2
	exit 2
}

rundir=${RUNTIME_DIRECTORY:-}
[ -n "$rundir" ] || rundir=$(mktemp -d)

# setting NAME: the systemd credential NAME if the unit has one, else the variable.
setting() {
	if [ -n "${CREDENTIALS_DIRECTORY:-}" ] && [ -r "$CREDENTIALS_DIRECTORY/$1" ]; then
		cat "$CREDENTIALS_DIRECTORY/$1"
	else
		eval "printf '%s' \"\${$1:-}\""
	fi
}

# pemfile NAME: the file libpq reads for setting NAME. A path is used as it is; PEM text
# (as queen accepts it, with "\n" for line breaks in an env file) goes to a private file.
pemfile() {
	v=$(setting "$1")
	case $v in
	'') ;;
	*-----BEGIN*)
		printf '%s\n' "$v" | sed 's/\\n/\n/g' >"$rundir/$1.pem"
		chmod 600 "$rundir/$1.pem"
		printf '%s' "$rundir/$1.pem"
		;;
	*) printf '%s' "$v" ;;
	esac
}

PGHOST=${PG_HOST:-localhost}
PGPORT=${PG_PORT:-5432}
PGTARGETSESSIONATTRS=${PG_TARGET_SESSION_ATTRS:-read-write}
PGUSER=${PG_USER:-postgres}
PGDATABASE=${PG_DATABASE:-${PG_DB:-postgres}}
PGSSLMODE=disable
if flag PG_USE_SSL false; then
	PGSSLMODE=verify-full
	flag PG_SSL_REJECT_UNAUTHORIZED true || PGSSLMODE=require
	PGSSLROOTCERT=$(pemfile PG_SSL_ROOT_CERT)
	# libpq's default is ~/.postgresql/root.crt; queen's is the system's CAs (Debian's
	# bundle, or Red Hat's).
	if [ -z "$PGSSLROOTCERT" ]; then
		for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
			if [ -r "$f" ]; then
				PGSSLROOTCERT=$f
				break
			fi
		done
	fi
	PGSSLCERT=$(pemfile PG_SSL_CERT)
	PGSSLKEY=$(pemfile PG_SSL_KEY)
	export PGSSLROOTCERT
	[ -z "$PGSSLCERT" ] || export PGSSLCERT PGSSLKEY
fi
PGCONNECT_TIMEOUT=10
PGAPPNAME=queen-backup
export PGHOST PGPORT PGTARGETSESSIONATTRS PGUSER PGDATABASE PGSSLMODE PGCONNECT_TIMEOUT PGAPPNAME
unset PGPASSWORD

# As queen: unset means the default "postgres", set but empty means no password.
password=${PG_PASSWORD-postgres}
if [ -n "${CREDENTIALS_DIRECTORY:-}" ] && [ -r "$CREDENTIALS_DIRECTORY/PG_PASSWORD" ]; then
	password=$(cat "$CREDENTIALS_DIRECTORY/PG_PASSWORD")
fi
unset PG_PASSWORD
if [ -n "$password" ]; then
	PGPASSFILE=$rundir/pgpass
	# pgpass fields escape \ and : with a backslash.
	esc=$(printf '%s' "$password" | sed -e 's/\\/\\\\/g' -e 's/:/\\:/g')
	printf '*:*:*:*:%s\n' "$esc" >"$PGPASSFILE"
	chmod 600 "$PGPASSFILE"
	export PGPASSFILE
fi
password=
esc=

mkdir -p "$dir"
name=queen-$(date -u +%Y%m%dT%H%M%SZ).dump
tmp=$dir/.$name.partial
trap 'rm -f "$tmp"' EXIT
start=$(date +%s)
echo "queen-backup: dumping schemas queen and queen_streams of database $PGDATABASE on $PGHOST port $PGPORT as $PGUSER"
pg_dump --format=custom --schema=queen --schema=queen_streams --no-owner --file="$tmp"
pg_restore --list "$tmp" >/dev/null
mv "$tmp" "$dir/$name"
trap - EXIT
size=$(wc -c <"$dir/$name")
echo "queen-backup: wrote $dir/$name ($size bytes) in $(($(date +%s) - start)) s"

# Rotation: the glob sorts the names, oldest first; delete all but the newest $keep.
set -- "$dir"/queen-[0-9]*Z.dump
[ -e "$1" ] || set --
excess=$(($# - keep))
removed=0
for old in "$@"; do
	[ "$excess" -gt 0 ] || break
	rm -f "$old"
	excess=$((excess - 1))
	removed=$((removed + 1))
done
echo "queen-backup: keeping the newest $keep dumps; removed $removed"
