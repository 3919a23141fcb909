#!/usr/bin/env bash
# repo-build.sh: the signed apt and dnf repositories of one version, for the box
# scenarios repo.sh and upgrade.sh. Runs on the host (scripts/systemd-test.sh).
#
#   repo-build.sh OUT VERSION DEB RPM
#   repo-build.sh --tamper KIND GOOD OUT   a copy of repository GOOD changed by one byte
#                                          where KIND says (see tamper below)
#   repo-build.sh --stub OUT.rpm           the rpm that declares the dependencies
#                                          Debian's packages fill (see repo.sh)
#
# GNUPGHOME holds the throwaway signing key (its first key signs). The layout is
# the one `make release` writes:
#
#   OUT/apt/dists/stable/{InRelease,Release,Release.gpg}, main/binary-amd64/Packages(.gz)
#   OUT/apt/pool/main/q/queen/queen_VERSION-1_amd64.deb
#   OUT/rpm/queen-VERSION-1.x86_64.rpm, OUT/rpm/repodata/repomd.xml(.asc)
#   OUT/queen-archive-keyring.gpg (binary public key), OUT/queen-archive-keyring.asc
#
# `make release` builds it from the working tree (amd64, no container image), signed
# with that key: what the box installs is what a release publishes. With
# QUEEN_TEST_REPO_FROM=packages (or without a release target) the repositories are
# made here instead, from the packages given (built by systemd-test.sh, the rpm
# header-signed with the same key), with the tools the release uses: apt-ftparchive,
# gpg and createrepo_c (installed with apt-get when missing, as root).
set -euo pipefail

# flip FILE OFFSET: changes the byte at OFFSET (negative: from the end) of FILE.
flip() {
	python3 - "$1" "$2" <<'PY'
import sys
path, off = sys.argv[1], int(sys.argv[2])
data = bytearray(open(path, "rb").read())
data[off] ^= 0x01
open(path, "wb").write(data)
PY
}

# tamper KIND GOOD OUT: what a hostile mirror would serve.
#   inrelease  one hex digit of the Packages hash in InRelease and Release changed
#              (the signatures left as they were)
#   packages   one byte of Packages changed, Packages.gz remade (Release untouched)
#   repomd     one digit of repodata/repomd.xml changed (repomd.xml.asc untouched)
#   rpm        one byte of the rpm's payload changed (metadata untouched)
tamper() {
	local kind=$1 good=$2 out=$3 f
	rm -rf "$out"
	cp -a "$good" "$out"
	case $kind in
	inrelease)
		for f in "$out/apt/dists/stable/InRelease" "$out/apt/dists/stable/Release"; do
			python3 - "$f" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
m = re.search(r"^SHA256:\n ([0-9a-f])", text, re.M)
i = m.start(1)
text = text[:i] + ("0" if text[i] != "0" else "1") + text[i + 1:]
open(path, "w").write(text)
PY
		done
		;;
	packages)
		f=$out/apt/dists/stable/main/binary-amd64/Packages
		sed -i 's/^Description: /Description: ! /' "$f"
		gzip -9nf -c "$f" >"$f.gz"
		;;
	repomd)
		# One digit of the revision: still well-formed, no longer what was signed.
		f=$out/rpm/repodata/repomd.xml
		python3 - "$f" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
m = re.search(r"<revision>([0-9])", text)
i = m.start(1)
text = text[:i] + ("1" if text[i] != "1" else "2") + text[i + 1:]
open(path, "w").write(text)
PY
		;;
	rpm)
		f=$(find "$out/rpm" -maxdepth 1 -name '*.rpm' | head -1)
		flip "$f" -4096
		;;
	*) echo "repo-build: unknown tampering $kind" >&2; return 2 ;;
	esac
}

case ${1:-} in
--tamper)
	tamper "${2:?kind}" "${3:?good}" "${4:?out}"
	exit
	;;
--stub)
	stub=${2:?out.rpm}
	top=$(mktemp -d)
	cat >"$top/stub.spec" <<'SPEC'
Name: queen-test-deps
Version: 1
Release: 1
Summary: Declares what Debian's packages provide, for rpm on Debian (tests only)
License: Apache-2.0
BuildArch: noarch
Provides: postgresql
Provides: systemd
%description
queen's rpm requires postgresql and systemd; on Debian they come from dpkg, which
the rpm database does not know of.
%files
SPEC
	rpmbuild --quiet --define "_topdir $top" -bb "$top/stub.spec" >&2
	cp "$top/RPMS/noarch/queen-test-deps-1-1.noarch.rpm" "$stub"
	rm -rf "$top"
	exit
	;;
esac

out=${1:?usage: repo-build.sh OUT VERSION DEB RPM} version=${2:?version} deb=${3:?deb} rpm=${4:?rpm}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
key=$(gpg --batch --with-colons --list-secret-keys 2>/dev/null | awk -F: '$1 == "fpr" {print $10; exit}')
[ -n "$key" ] || { echo "repo-build: no secret key in GNUPGHOME=${GNUPGHOME:-}" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"

if [ "${QUEEN_TEST_REPO_FROM:-release}" = release ] && grep -q '^release:' "$root/Makefile"; then
	make -C "$root" --no-print-directory release RELEASE_VERSION="$version" RELEASE_ARCH=amd64 RELEASE_IMAGE=0 RELEASE_OUT="$out" \
		QUEEN_RELEASE_GNUPGHOME="$GNUPGHOME" QUEEN_RELEASE_KEY_ID="$key" >&2
	exit
fi

need=()
command -v apt-ftparchive >/dev/null 2>&1 || need+=(apt-utils)
command -v createrepo_c >/dev/null 2>&1 || need+=(createrepo-c)
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
	echo "repo-build: installing ${need[*]} (apt-get install)" >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${need[@]}" >/dev/null 2>&1 ||
		{ apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${need[@]}" >/dev/null 2>&1; } || true
fi

# apt: Packages from the pool, a Release over them, signed inline and detached.
a=$out/apt
mkdir -p "$a/pool/main/q/queen" "$a/dists/stable/main/binary-amd64"
cp "$deb" "$a/pool/main/q/queen/queen_${version}-1_amd64.deb"
(
	cd "$a"
	apt-ftparchive packages pool >dists/stable/main/binary-amd64/Packages
	gzip -9nk dists/stable/main/binary-amd64/Packages
	apt-ftparchive -o APT::FTPArchive::Release::Origin=queen -o APT::FTPArchive::Release::Label=queen \
		-o APT::FTPArchive::Release::Suite=stable -o APT::FTPArchive::Release::Codename=stable \
		-o APT::FTPArchive::Release::Architectures=amd64 -o APT::FTPArchive::Release::Components=main \
		release dists/stable >dists/stable/Release.tmp
	mv dists/stable/Release.tmp dists/stable/Release
	gpg --batch --yes --local-user "$key" --clearsign -o dists/stable/InRelease dists/stable/Release
	gpg --batch --yes --local-user "$key" --armor --detach-sign -o dists/stable/Release.gpg dists/stable/Release
)

# dnf: the header-signed rpm, createrepo_c's metadata, repomd.xml signed detached.
mkdir -p "$out/rpm"
cp "$rpm" "$out/rpm/queen-${version}-1.x86_64.rpm"
createrepo_c --quiet "$out/rpm"
gpg --batch --yes --local-user "$key" --armor --detach-sign -o "$out/rpm/repodata/repomd.xml.asc" "$out/rpm/repodata/repomd.xml"

gpg --batch --yes --export "$key" >"$out/queen-archive-keyring.gpg"
gpg --batch --yes --armor --export "$key" >"$out/queen-archive-keyring.asc"
