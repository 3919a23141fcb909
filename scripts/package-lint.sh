#!/usr/bin/env bash
#
# package-lint.sh: the distributions' own checkers on the queen packages (part of
# `make test` through scripts/systemd-test.sh; alone: `make package-lint`).
#
#   scripts/package-lint.sh DEB RPM
#
# lintian (Debian's) on the deb and rpmlint on the rpm; any error or warning fails,
# unless the package's own overrides name it with a reason:
# packaging/lintian-overrides (shipped as /usr/share/lintian/overrides/queen) and
# packaging/queen.rpmlintrc, with the target distributions' settings in
# packaging/rpmlint.toml. An override that no longer matches fails too. When
# $PKG_LINT_PUBKEY names the public key the rpm was signed with, rpmlint's signature
# check and `rpm -K` verify against it; without it the rpm's missing or unknown
# signature is an error, as it is for rpmlint.
#
# Both tools come from Debian's archive: installed with apt-get when missing and
# running as root (like PostgreSQL for the tests); otherwise the checks are SKIPPED
# with the reason. Prints "package-lint: N passed, N failed, N skipped" last; exits
# non-zero on any failure.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# = 2 ] || { echo "usage: $0 DEB RPM" >&2; exit 2; }
deb=$(realpath "$1") rpm=$(realpath "$2")

passed=0 failed=0 skipped=0
say() { printf 'package-lint: %s\n' "$*"; }
ok() { passed=$((passed + 1)); say "ok   $*"; }
bad() { failed=$((failed + 1)); say "FAIL $*"; }
skip() { skipped=$((skipped + 1)); say "SKIP $*"; }
summary() {
	printf 'package-lint: %d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
	[ "$failed" = 0 ]
}

# ensure CMD PACKAGE...: CMD is on PATH, or installed from Debian's archive; prints
# why not otherwise.
ensure() {
	local cmd=$1
	shift
	command -v "$cmd" >/dev/null 2>&1 && return
	[ "$(id -u)" = 0 ] || { echo "$cmd is not installed and this is not root"; return; }
	command -v apt-get >/dev/null 2>&1 || { echo "$cmd is not installed and apt-get is missing"; return; }
	say "installing $* (apt-get)" >&2
	{
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$@" ||
			{ apt-get -o DPkg::Lock::Timeout=300 update -qq &&
				DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$@"; }
	} >/dev/null 2>&1 || true
	command -v "$cmd" >/dev/null 2>&1 || echo "apt-get install $* failed"
}

tmp=$(mktemp -d /tmp/queen-package-lint.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# --- the manual pages and completions are in both packages ---------------------------
debfiles=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|')
for f in /usr/share/man/man8/queen.8.gz /usr/share/man/man8/queen-proxy.8.gz /usr/share/man/man1/queenctl.1.gz \
	/usr/share/bash-completion/completions/queenctl /usr/share/fish/vendor_completions.d/queenctl.fish \
	/usr/share/zsh/vendor-completions/_queenctl /usr/share/doc/queen/copyright /usr/share/doc/queen/changelog.Debian.gz; do
	if grep -qxF "$f" <<<"$debfiles"; then ok "deb has $f"; else bad "deb lacks $f"; fi
done

# --- lintian -----------------------------------------------------------------------
why=$(ensure lintian lintian)
if [ -n "$why" ]; then
	skip "lintian: $why"
else
	# -i explains each tag; E: errors, W: warnings, I: info (overrides that match
	# nothing show up there). Overridden tags are not printed.
	out=$(lintian -i --tag-display-limit 0 "$deb" 2>&1) || true
	tags=$(printf '%s\n' "$out" | grep -E '^[EW]: |^I: .*(unused-override|mismatched-override)' || true)
	if [ -z "$tags" ]; then
		ok "lintian $(basename "$deb"): no error or warning beyond packaging/lintian-overrides"
	else
		bad "lintian $(basename "$deb")"
		printf '%s\n' "$out" | sed 's/^/       | /'
	fi
fi

# --- rpmlint -----------------------------------------------------------------------
why=$(ensure rpmlint rpmlint python3-magic)
if [ -z "$why" ] && ! command -v rpm >/dev/null 2>&1; then why=$(ensure rpm rpm); fi
if [ -n "$why" ]; then
	skip "rpmlint: $why"
else
	rpmfiles=$(rpm -qpl "$rpm" 2>/dev/null)
	for f in /usr/share/man/man8/queen.8.gz /usr/share/man/man8/queen-proxy.8.gz /usr/share/man/man1/queenctl.1.gz \
		/usr/share/bash-completion/completions/queenctl /usr/share/zsh/site-functions/_queenctl \
		/usr/share/licenses/queen/copyright; do
		if grep -qxF "$f" <<<"$rpmfiles"; then ok "rpm has $f"; else bad "rpm lacks $f"; fi
	done
	# rpm's database is $HOME/.rpmdb on Debian: a private one for the signing key.
	export HOME=$tmp/home
	mkdir -p "$HOME"
	if [ -n "${PKG_LINT_PUBKEY:-}" ]; then
		rpmkeys --import "$PKG_LINT_PUBKEY" 2>/dev/null
		if out=$(rpmkeys -K "$rpm" 2>&1) && grep -q 'signatures OK' <<<"$out"; then
			ok "rpm -K: the signature verifies"
		else
			bad "rpm -K: $out"
		fi
	fi
	# The rpm's cpio archive has absolute paths and rpmlint unpacks it with plain
	# `cpio -id`: without --no-absolute-filenames GNU cpio would write the package
	# into this machine's / instead of rpmlint's directory.
	mkdir -p "$tmp/bin"
	printf '#!/bin/sh\nexec %s --no-absolute-filenames "$@"\n' "$(command -v cpio)" >"$tmp/bin/cpio"
	chmod +x "$tmp/bin/cpio"
	out=$(cd "$tmp" && PATH=$tmp/bin:$PATH rpmlint -c "$root/packaging/rpmlint.toml" \
		-r "$root/packaging/queen.rpmlintrc" "$rpm" 2>&1) && rc=0 || rc=$?
	findings=$(printf '%s\n' "$out" | grep -E ': [EW]: ' || true)
	if [ -z "$findings" ] && [ "$rc" = 0 ]; then
		ok "rpmlint $(basename "$rpm"): no error or warning beyond packaging/queen.rpmlintrc"
	else
		bad "rpmlint $(basename "$rpm") (exit $rc)"
		printf '%s\n' "$out" | sed 's/^/       | /'
	fi
	# Every filter must still match a finding of an unfiltered run: rpmlint 2.4 does
	# not report filters that match nothing, and a stale one would hide a new finding.
	raw=$(cd "$tmp" && { PATH=$tmp/bin:$PATH rpmlint -c "$root/packaging/rpmlint.toml" "$rpm" 2>&1 || true; })
	while IFS= read -r re; do
		if grep -qP -- "$re" <<<"$raw"; then
			ok "rpmlint filter still needed: $re"
		else
			bad "rpmlint filter matches nothing (remove it): $re"
			stale=1
		fi
	done < <(sed -n 's/^addFilter(r"\(.*\)")$/\1/p' "$root/packaging/queen.rpmlintrc")
	if [ -n "${stale:-}" ]; then
		say "the unfiltered rpmlint run:"
		printf '%s\n' "$raw" | sed 's/^/       | /'
	fi
fi
summary
