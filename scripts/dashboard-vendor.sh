#!/usr/bin/env bash
# dashboard-vendor.sh: the dashboard's vendored JavaScript libraries, from the npm registry.
#
#   scripts/dashboard-vendor.sh refresh   download the versions recorded in VERSIONS and
#                                         copy their files in (records tarball integrity
#                                         and the SHA-256 of every vendored file)
#   scripts/dashboard-vendor.sh verify    download the same versions again and prove that
#                                         the tarballs match the recorded integrity and the
#                                         committed files are exactly what refresh makes
#
# To move to a new version, edit its line in VERSIONS and run refresh, which records the new
# tarball's integrity; verify then holds the registry to it. Needs npm and node; the Go build never does.
#
# Each vendored file is the package's own ES module build with two deterministic edits:
# the trailing sourceMappingURL comment is dropped (no .map files ship), and the bare
# import specifier "preact" becomes the relative "./preact.mjs", since browsers resolve
# bare specifiers only through an import map, and an inline import map would need CSP's
# 'unsafe-inline'.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
vendor="$root/internal/dashboard/dist/vendor"
versions="$vendor/VERSIONS"
sums="$vendor/SHA256SUMS"

# files lists, per package, "<path in the tarball> <vendored name>".
files() {
	case "$1" in
	preact) printf '%s\n' 'package/dist/preact.mjs preact.mjs' \
		'package/hooks/dist/hooks.mjs hooks.mjs' 'package/LICENSE LICENSE-preact.txt' ;;
	htm) printf '%s\n' 'package/dist/htm.module.js htm.mjs' 'package/LICENSE LICENSE-htm.txt' ;;
	*) echo "dashboard-vendor: no file list for package $1" >&2; return 1 ;;
	esac
}

# transform copies src to dst with the two edits described above.
transform() {
	local src=$1 dst=$2
	case "$dst" in
	*.mjs)
		sed -e '/^\/\/# sourceMappingURL=/d' -e 's/from"preact"/from".\/preact.mjs"/g' "$src" >"$dst"
		if grep -Eq 'from ?"[^./]' "$dst"; then
			echo "dashboard-vendor: $dst still imports a bare specifier" >&2
			return 1
		fi
		;;
	*) cp "$src" "$dst" ;;
	esac
}

integrity() {
	node -e 'const c=require("crypto"),f=require("fs");process.stdout.write("sha512-"+c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$1"
}

# fetch downloads pkg@ver into $work and unpacks it into $work/pkg; prints the integrity.
fetch() {
	local pkg=$1 ver=$2 tgz
	tgz=$(cd "$work" && npm pack --silent "$pkg@$ver" | tail -n 1)
	mkdir -p "$work/$pkg"
	tar -xzf "$work/$tgz" -C "$work/$pkg"
	integrity "$work/$tgz"
}

# build fetches every package of VERSIONS and writes the vendored files into $1, and the
# new VERSIONS into $1/VERSIONS.new. With $2 = strict it fails when a tarball differs from
# its recorded integrity.
build() {
	local out=$1 strict=${2:-} pkg ver want got src dst
	: >"$out/VERSIONS.new"
	while read -r pkg ver want; do
		case "$pkg" in '' | '#'*) continue ;; esac
		got=$(fetch "$pkg" "$ver")
		if [[ $want != "$got" ]]; then
			echo "dashboard-vendor: $pkg@$ver tarball integrity $got, recorded ${want:--}" >&2
			[[ $strict == strict ]] && return 1
		fi
		printf '%s %s %s\n' "$pkg" "$ver" "$got" >>"$out/VERSIONS.new"
		while read -r src dst; do
			transform "$work/$pkg/$src" "$out/$dst"
		done < <(files "$pkg")
	done <"$versions"
}

header='# package version tarball-integrity (npm dist.integrity); scripts/dashboard-vendor.sh'

mode=${1:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out"

case "$mode" in
refresh)
	build "$work/out"
	find "$vendor" -maxdepth 1 -type f ! -name VERSIONS -delete
	cp "$work/out/"* "$vendor/"
	rm -f "$vendor/VERSIONS.new"
	{ echo "$header"; cat "$work/out/VERSIONS.new"; } >"$versions"
	(cd "$vendor" && find . -maxdepth 1 -type f ! -name VERSIONS ! -name SHA256SUMS -printf '%P\n' |
		LC_ALL=C sort | xargs sha256sum) >"$sums"
	echo "dashboard-vendor: refreshed $(grep -vc '^#' "$versions") packages into ${vendor#"$root"/}"
	;;
verify)
	build "$work/out" strict
	(cd "$vendor" && sha256sum --quiet -c SHA256SUMS)
	status=0
	while read -r _ dst; do
		if ! cmp -s "$work/out/$dst" "$vendor/$dst"; then
			echo "dashboard-vendor: $dst differs from what the registry tarball gives" >&2
			status=1
		fi
	done < <(while read -r pkg _; do case "$pkg" in '' | '#'*) ;; *) files "$pkg" ;; esac; done <"$versions")
	extra=$(cd "$vendor" && find . -maxdepth 1 -type f ! -name VERSIONS ! -name SHA256SUMS -printf '%P\n' |
		while read -r f; do [[ -e "$work/out/$f" ]] || echo "$f"; done)
	if [[ -n $extra ]]; then
		echo "dashboard-vendor: files not from any recorded package: $extra" >&2
		status=1
	fi
	[[ $status == 0 ]] && echo "dashboard-vendor: vendored files match the registry tarballs"
	exit $status
	;;
*)
	echo "usage: $0 refresh|verify" >&2
	exit 2
	;;
esac
