#!/usr/bin/env bash
#
# release-image.sh: the container image of one architecture as an OCI archive, for
# `make release` (scripts/release).
#
#   scripts/release-image.sh ARCH VERSION OUT.oci.tar
#
# Builds the image with packaging/container/build.sh (FROM scratch, binaries built
# like the packages', version VERSION, dates the commit's) with podman in private
# storage under a temporary directory (nothing of the host's podman is used or
# changed), then `podman save --format oci-archive`, repacked (sorted, dated, root-owned)
# to OUT so that the archive is reproducible too. The image holds only
# COPY layers, so an arm64 image builds on an amd64 host without emulation.
#
# Exit 0: written. Exit 3: podman cannot build here (not root, not installed, no
# storage driver or user namespace); the reason is printed on stdout and the
# release goes on without the image. Any other exit: the build failed.
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 ARCH VERSION OUT.oci.tar" >&2; exit 2; }
arch=$1 version=$2 out=$3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf 'release-image: %s\n' "$*" >&2; }
skip() { echo "$*"; exit 3; }

[ "$(id -u)" = 0 ] || skip "not root (podman here builds as root, in private storage)"
command -v podman >/dev/null 2>&1 || skip "podman is not installed (Debian: apt-get install podman; make release installs it as root)"

. "$root/scripts/lib/podman.sh"
work=$(mktemp -d /tmp/queen-release-image.XXXXXX)
trap 'cleanup_podman "$work"' EXIT
setup_podman "$work" ""

if ! info=$(podman info --format '{{.Store.GraphDriverName}}' 2>&1); then
	skip "podman cannot start here: $(printf '%s' "$info" | tail -n 1)"
fi
# A probe build of the same kind (FROM scratch, one COPY) tells "cannot build here"
# apart from a broken image build.
mkdir -p "$work/probe"
printf 'probe\n' >"$work/probe/probe"
printf 'FROM scratch\nCOPY probe /probe\n' >"$work/probe/Containerfile"
if ! probe=$(podman build -q --pull=never --platform "linux/$arch" -t localhost/queen-release-probe:1 "$work/probe" 2>&1); then
	skip "podman cannot build an image here: $(printf '%s' "$probe" | tail -n 1)"
fi

# A tag cannot hold "+" (dev versions): "_" stands for it, as in Docker Hub tags.
image=localhost/queen:${version//+/_}-$arch
QUEEN_IMAGE_VERSION=$version "$root/packaging/container/build.sh" -b podman -a "$arch" -t "$image" >/dev/null
mkdir -p "$(dirname "$out")"
rm -f "$out"
podman save -q --format oci-archive -o "$work/saved.tar" "$image" >/dev/null
# podman writes the archive's own entries with the current time: repacked sorted,
# dated SOURCE_DATE_EPOCH (else the commit's), owned by root, so that two releases
# of one commit give the same archive, not only the same blobs.
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}
mkdir -p "$work/oci"
tar -xf "$work/saved.tar" -C "$work/oci"
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=posix \
	--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
	-cf "$out" -C "$work/oci" blobs index.json oci-layout
say "saved $image to $out ($(du -h "$out" | cut -f1))"
