#!/usr/bin/env bash
#
# ensure-release-tools.sh: make sure the tools of `make release` and of its tests
# are installed, from Debian's archive, as root: apt-ftparchive (apt-utils),
# createrepo_c, gpg and gpgv, rpmsign and rpmkeys (rpm), podman for the container
# image, and diffoscope (the minimal package) to show where two builds differ.
#
#   scripts/ensure-release-tools.sh
#
# What is on PATH already is left alone. Not root, or no apt-get: it names what is
# missing and exits 0; `make release` then stops with a clear error naming the
# packages, and the release tests skip saying why. podman and diffoscope are
# optional: without podman the release has no container image (it says so), without
# diffoscope a reproducibility failure lists the differing files without the detail.
set -euo pipefail

say() { printf 'ensure-release-tools: %s\n' "$*" >&2; }

missing=()
for pair in apt-ftparchive:apt-utils createrepo_c:createrepo-c gpg:gnupg gpgv:gpgv \
	rpmsign:rpm rpmkeys:rpm podman:podman diffoscope:diffoscope-minimal; do
	command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[ ${#missing[@]} -gt 0 ] || exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	say "not installed: ${missing[*]} (Debian packages; needs root and apt-get to install them here)"
	exit 0
fi
say "installing ${missing[*]} (apt-get install)"
apt() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 "$@" >/dev/null 2>&1; }
if ! { apt install -y -qq --no-install-recommends "${missing[@]}" ||
	{ apt update -qq && apt install -y -qq --no-install-recommends "${missing[@]}"; }; }; then
	say "apt-get could not install ${missing[*]}: make release will name what is missing"
fi
