#!/usr/bin/env bash
#
# systemd-test.sh: the systemd and packaging tests (`make test-systemd`, part of
# `make test`).
#
#   scripts/systemd-test.sh [SCENARIO...]     (default: deb rpm repo)
#
# SYSTEMD_TEST_STATIC=no skips the static checks and the distributions' checkers
# (make test-upgrade: only the packages and the scenario).
#
# 1. Static checks, no box needed: the maintainer scripts parse (sh -n), the
#    maintainer and test scripts pass the shell linter (installed with apt-get when
#    missing, as root); `systemd-analyze security --offline` scores every service
#    unit 2.0 or better; the deb and the rpm hold the same files (but for each one's
#    licence, changelog and zsh completion places); the env files are deb conffiles
#    and rpm %config(noreplace); then scripts/package-lint.sh: lintian and rpmlint
#    (the rpm signed with a throwaway key when gpg is installed).
# 2. Scenarios, each in its own disposable systemd (scripts/sdbox.sh) with its own
#    PostgreSQL cluster, all of them in parallel: scripts/systemd-test/deb.sh, rpm.sh
#    and repo.sh (install from the signed repositories), and, only when named,
#    upgrade.sh (upgrade and downgrade under the checker's traffic: make
#    test-upgrade); see their headers. They need root, util-linux unshare/nsenter,
#    overlayfs and cgroup2; where the machine cannot boot a box they are SKIPPED with
#    the reason. rpm.sh needs `rpm`, repo.sh `dnf` too: installed with apt-get when
#    missing (root). The repositories come from make release
#    (scripts/systemd-test/repo-build.sh).
#
# Packages: two amd64 builds of the working tree, v1 = the version from git and
# v2 = v1 + ".upgrade" (sorts higher for dpkg and rpm), built with
# scripts/packages into $QUEEN_SYSTEMD_TEST_DIR (default: a temporary directory);
# their package version is VERSION-1 (the release).
# Prints each failure again, then "N passed, N failed" (", N skipped") last; exits non-zero on any failure.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
sdbox=$root/scripts/sdbox.sh
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(deb rpm repo)
static=${SYSTEMD_TEST_STATIC:-yes}
# wants SCENARIO: whether SCENARIO is to run.
wants() { printf '%s\n' "${scenarios[@]}" | grep -qx "$1"; }
# apt_install PKG...: installs Debian packages when root can (quietly; false on failure).
apt_install() {
	[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 1
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$@" >/dev/null 2>&1 ||
		{ apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$@" >/dev/null 2>&1; }
}

passed=0 failed=0 skipped=0
say() { printf 'systemd-test: %s\n' "$*"; }
ok() { passed=$((passed + 1)); say "ok   $*"; }
failures=()
bad() { failed=$((failed + 1)); failures+=("$*"); say "FAIL $*"; }
skip() { skipped=$((skipped + 1)); say "SKIP $*"; }
summary() {
	# The failures again, last, so that the tail of a long log names them.
	local f
	for f in "${failures[@]}"; do say "failed: $f"; done
	printf 'systemd-test: %d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
	[ "$failed" = 0 ]
}

work=${QUEEN_SYSTEMD_TEST_DIR:-}
if [ -z "$work" ]; then
	work=$(mktemp -d /tmp/queen-systemd-test.XXXXXX)
	trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

# --- static checks ------------------------------------------------------------------
maint=(packaging/scripts/deb/* packaging/scripts/rpm/*.sh packaging/queen-backup.sh)
[ "$static" = yes ] || maint=()
for s in "${maint[@]}"; do
	if sh -n "$s"; then ok "sh -n $s"; else bad "sh -n $s"; fi
done
if ! command -v shellcheck >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	say "installing shellcheck (apt-get install shellcheck)"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq shellcheck >/dev/null 2>&1 ||
		{ apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq shellcheck >/dev/null 2>&1; } || true
fi
if [ "$static" != yes ]; then
	:
elif command -v shellcheck >/dev/null 2>&1; then
	if out=$(shellcheck -s sh "${maint[@]}" 2>&1 &&
		shellcheck -x scripts/systemd-test.sh scripts/systemd-test/*.sh scripts/package-lint.sh scripts/sdbox.sh 2>&1); then
		ok "shellcheck maintainer, backup and test scripts"
	else
		bad "shellcheck" && printf '%s\n' "$out"
	fi
else
	skip "shellcheck: not installed and not installable here (not root, or apt-get failed)"
fi
if [ "$static" != yes ]; then
	:
elif command -v systemd-analyze >/dev/null 2>&1; then
	for u in systemd/*.service; do
		out=$(systemd-analyze security --offline=yes --threshold=20 "$u" 2>&1) && rc=0 || rc=$?
		score=$(printf '%s\n' "$out" | grep -o 'Overall exposure level for [^:]*: [0-9.]*' | grep -o '[0-9.]*$' || true)
		if [ "$rc" = 0 ]; then ok "security $u: exposure $score ≤ 2.0"; else bad "security $u: exposure ${score:-?} > 2.0"; fi
	done
else
	skip "systemd-analyze not installed: no unit checks"
fi

# --- packages -----------------------------------------------------------------------
say "building packages in $work"
t=$(date +%s)
# A throwaway signing key, so that the rpm checks see a signed package as a release
# would be (scripts/packages signs with $QUEEN_PKG_SIGNING_KEY).
pubkey=
if command -v gpg >/dev/null 2>&1; then
	export GNUPGHOME=$work/gnupg
	mkdir -p "$GNUPGHOME" && chmod 700 "$GNUPGHOME"
	if gpg --batch --quiet --passphrase '' --quick-gen-key 'queen test packages <test@queen.invalid>' rsa3072 sign 1d >/dev/null 2>&1 &&
		gpg --batch --armor --export-secret-keys >"$work/signing.key" && gpg --batch --armor --export >"$work/signing.pub"; then
		export QUEEN_PKG_SIGNING_KEY=$work/signing.key
		pubkey=$work/signing.pub
	fi
fi
go run ./scripts/packages -arch amd64 -out "$work/v1" >"$work/v1.list"
v1=$(sed -n 's|.*/queen_\(.*\)-1_amd64\.deb$|\1|p' "$work/v1.list")
v2=$v1.upgrade
go run ./scripts/packages -arch amd64 -version "$v2" -out "$work/v2" >"$work/v2.list"
say "built $v1 and $v2 in $(($(date +%s) - t)) s"
deb1=$work/v1/queen_${v1}-1_amd64.deb deb2=$work/v2/queen_${v2}-1_amd64.deb
rpm1=$work/v1/queen-$v1-1.x86_64.rpm rpm2=$work/v2/queen-$v2-1.x86_64.rpm
for f in "$deb1" "$deb2" "$rpm1" "$rpm2"; do
	if [ -s "$f" ]; then ok "package $(basename "$f")"; else bad "package $(basename "$f") missing"; fi
done

# Files only: dpkg lists every parent directory, rpm only those it owns.
debfiles=$(dpkg-deb -c "$deb1" | awk '$1 !~ /^d/ {print $NF}' | sed -e 's|^\./|/|' | sort)
if [ "$(dpkg-deb -f "$deb1" Version)" = "$v1-1" ]; then ok "deb version $v1-1"; else bad "deb version"; fi
for f in queen.env queen-proxy.env; do
	if dpkg-deb -I "$deb1" conffiles | grep -x "/etc/queen/$f" >/dev/null; then ok "deb: $f is a conffile"; else bad "deb: $f is not a conffile"; fi
done
if ! command -v rpm >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	say "installing rpm (apt-get install rpm) for the rpm checks"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq rpm >/dev/null 2>&1 ||
		{ apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq rpm >/dev/null 2>&1; } || true
fi
if command -v rpm >/dev/null 2>&1; then
	rpmfiles=$(rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpm1" 2>/dev/null | awk '$1 !~ /^d/ {print $2}' | sort)
	# Each format's own places: the licence and changelog (Debian: copyright and
	# changelog.Debian.gz in the doc directory, the lintian overrides; Fedora: the
	# licenses directory, the changelog in the header) and zsh's completions.
	missing=$(comm -23 <(printf '%s\n' "$rpmfiles") <(printf '%s\n' "$debfiles") |
		grep -vxF -e /usr/share/licenses/queen/copyright -e /usr/share/zsh/site-functions/_queenctl || true)
	extra=$(comm -13 <(printf '%s\n' "$rpmfiles") <(printf '%s\n' "$debfiles") |
		grep -vxF -e /usr/share/doc/queen/copyright -e /usr/share/doc/queen/changelog.Debian.gz \
			-e /usr/share/lintian/overrides/queen -e /usr/share/zsh/vendor-completions/_queenctl || true)
	if [ -z "$missing$extra" ]; then
		ok "rpm -qpl lists the same files as the deb ($(printf '%s\n' "$rpmfiles" | wc -l) paths)"
	else
		bad "rpm and deb contents differ" && printf 'only in rpm: %s\nonly in deb: %s\n' "$missing" "$extra"
	fi
	for f in queen.env queen-proxy.env; do
		if rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpm1" 2>/dev/null | grep -x "cn /etc/queen/$f" >/dev/null; then
			ok "rpm: $f is %config(noreplace)"
		else
			bad "rpm: $f is not %config(noreplace)"
		fi
	done
	if [ "$(rpm -qp --qf '%{VERSION}' "$rpm1" 2>/dev/null)" = "$v1" ]; then ok "rpm version $v1"; else bad "rpm version"; fi
else
	skip "rpm checks: rpm not installed and not installable here"
fi

# --- the distributions' checkers ------------------------------------------------------
if [ "$static" = yes ]; then
	lint=$(PKG_LINT_PUBKEY=$pubkey scripts/package-lint.sh "$deb1" "$rpm1" 2>&1) && lrc=0 || lrc=$?
	printf '%s\n' "$lint" | grep -v '^package-lint: [0-9]* passed'
	while IFS= read -r f; do failures+=("package-lint: $f"); done < <(printf '%s\n' "$lint" | sed -n 's/^package-lint: FAIL //p')
	line=$(printf '%s\n' "$lint" | grep -E '^package-lint: [0-9]+ passed' | tail -1)
	passed=$((passed + $(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p')))
	failed=$((failed + $(printf '%s' "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')))
	skipped=$((skipped + $(printf '%s' "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')))
	if [ "$lrc" != 0 ] && [ -z "$line" ]; then bad "scripts/package-lint.sh exited $lrc"; fi
fi

# --- the signed repositories (repo.sh, upgrade.sh) ----------------------------------------
# Versions v1 and v2 signed with the throwaway key by make release (or, without it,
# made from the packages above in its layout: scripts/systemd-test/repo-build.sh),
# plus tampered copies for repo.sh and the checker's test binary for upgrade.sh.
if wants repo || wants upgrade; then
	if [ -z "$pubkey" ]; then
		bad "repositories: no signing key (gpg missing)"
	elif ! { scripts/systemd-test/repo-build.sh "$work/repo-v1" "$v1" "$deb1" "$rpm1" &&
		scripts/systemd-test/repo-build.sh "$work/repo-v2" "$v2" "$deb2" "$rpm2"; } >"$work/repo-build.log" 2>&1; then
		bad "repositories: scripts/systemd-test/repo-build.sh failed" && cat "$work/repo-build.log"
	else
		ok "repositories of $v1 and $v2 built and signed"
	fi
fi
if wants repo; then
	command -v dnf >/dev/null 2>&1 || { say "installing dnf (apt-get install dnf) for the repo scenario"; apt_install dnf || true; }
	for k in inrelease packages repomd rpm; do
		scripts/systemd-test/repo-build.sh --tamper "$k" "$work/repo-v2" "$work/repo-bad-$k" || bad "tampered repository $k"
	done
	command -v rpmbuild >/dev/null 2>&1 && { scripts/systemd-test/repo-build.sh --stub "$work/queen-test-deps.noarch.rpm" || bad "stub rpm"; }
fi
if wants upgrade; then
	say "building the checker's test binary for the upgrade scenario"
	go test -c -o "$work/checker.test" ./internal/checker/ || bad "go test -c ./internal/checker/"
fi

# --- scenarios in boxes ----------------------------------------------------------------
why_no_box() {
	[ "$(id -u)" = 0 ] || { echo "not root"; return; }
	for c in unshare nsenter pivot_root ip; do
		command -v "$c" >/dev/null 2>&1 || { echo "$c not installed"; return; }
	done
	[ -x /lib/systemd/systemd ] || { echo "systemd is not installed in the root filesystem"; return; }
	grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || { echo "no overlayfs"; return; }
	grep -qw cgroup2 /proc/filesystems || { echo "no cgroup2"; return; }
	# The scenarios run their own PostgreSQL cluster (pg_createcluster) and curl, both
	# from the host's root file system.
	if ! command -v pg_createcluster >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
		(
			# shellcheck source-path=SCRIPTDIR
			. scripts/lib/pg.sh
			pg_install
		) >/dev/null 2>&1 || true
	fi
	for c in pg_createcluster curl; do
		command -v "$c" >/dev/null 2>&1 || { echo "$c not installed"; return; }
	done
	local name=probe-$$ out
	if ! out=$(SDBOX_DIR=$work/box "$sdbox" up "$name" 2>&1); then
		SDBOX_DIR=$work/box "$sdbox" down "$name" >/dev/null 2>&1 || true
		echo "a test box did not boot: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
		return
	fi
	SDBOX_DIR=$work/box "$sdbox" down "$name" >/dev/null 2>&1 || true
}
reason=$(why_no_box)
if [ -n "$reason" ]; then
	for s in "${scenarios[@]}"; do skip "scenario $s: this machine cannot boot a disposable systemd ($reason)"; done
	summary
	exit
fi

run_scenario() { # NAME: boot a box, run scripts/systemd-test/NAME.sh in it, power off
	local name=$1 box=q$1-$$ status=0
	local -x SDBOX_DIR=$work/box
	if ! "$sdbox" up "$box" >"$work/$name.log" 2>&1; then
		"$sdbox" down "$box" >/dev/null 2>&1 || true
		echo "box did not boot; trying once more" >>"$work/$name.log"
		if ! "$sdbox" up "$box" >>"$work/$name.log" 2>&1; then
			echo "box did not boot" >>"$work/$name.log"
			return 1
		fi
	fi
	local share=$SDBOX_DIR/$box/share
	cp scripts/systemd-test/lib.sh "scripts/systemd-test/$name.sh" "$share/"
	cp "$deb1" "$share/v1.deb" && cp "$deb2" "$share/v2.deb"
	[ -f "$rpm1" ] && cp "$rpm1" "$share/v1.rpm" && cp "$rpm2" "$share/v2.rpm"
	printf 'V1=%s\nV2=%s\n' "$v1" "$v2" >"$share/versions"
	if [ "$name" = repo ] || [ "$name" = upgrade ]; then
		cp scripts/systemd-test/repo-lib.sh "$share/"
		local r
		for r in "$work"/repo-*/ "$work/queen-test-deps.noarch.rpm" "$work/checker.test"; do
			[ -e "$r" ] || continue
			# Hard links where possible: the box only reads them.
			cp -al "${r%/}" "$share/" 2>/dev/null || cp -a "${r%/}" "$share/"
		done
	fi
	timeout 600 "$sdbox" run "$box" bash "/mnt/share/$name.sh" >>"$work/$name.log" 2>&1 || status=$?
	"$sdbox" down "$box" >/dev/null 2>&1 || true
	return "$status"
}

declare -A pids
for s in "${scenarios[@]}"; do
	if { [ "$s" = rpm ] || [ "$s" = repo ]; } && ! command -v rpm >/dev/null 2>&1; then
		skip "scenario $s: rpm is not installed"
		continue
	fi
	run_scenario "$s" &
	pids[$s]=$!
done
for s in "${!pids[@]}"; do
	t=$(date +%s)
	status=0
	wait "${pids[$s]}" || status=$?
	cat "$work/$s.log"
	line=$(grep -E "^$s: [0-9]+ passed, [0-9]+ failed" "$work/$s.log" | tail -1 || true)
	p=$(printf '%s' "$line" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p')
	f=$(printf '%s' "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	while IFS= read -r l; do failures+=("$s: $l"); done < <(sed -n 's/^\[[^]]*\] FAIL //p' "$work/$s.log")
	if [ "$status" != 0 ] && [ "${f:-0}" = 0 ]; then bad "scenario $s exited $status"; fi
done
summary
