#!/usr/bin/env bash
#
# build.sh: build the queen container image (packaging/container/Containerfile).
#
#   packaging/container/build.sh [-t IMAGE] [-a ARCH] [-b BUILDER] [-c DIR]
#
#   -t IMAGE    tag of the image (default: queen:<version>)
#   -a ARCH     GOARCH of the binaries and the image (default: the host's, `go env GOARCH`)
#   -b BUILDER  podman, buildah or docker (default: the first one installed)
#   -c DIR      only prepare the build context in DIR (created, must be empty or absent)
#               and print the build command; build nothing
#
# The image is FROM scratch: no base image is pulled, so no registry is needed. This
# script builds the binaries with the host's Go toolchain as scripts/packages does
# (CGO_ENABLED=0, -trimpath, -s -w, version, commit and date stamped), then lays out
# the build context the Containerfile expects: rootfs/ (binaries, /etc/passwd and
# /etc/group with the user queen 65532:65532, nsswitch.conf, the host's CA bundle) and
# an empty spool/. Run it from anywhere inside the repository.
#
# Version: `git describe --tags --match 'v[0-9]*' --dirty` without the leading v
# (1.2.3, or 1.2.3-5-gabc1234 after it), 0.0.0-g<commit>[-dirty] without a release
# tag; QUEEN_IMAGE_VERSION overrides it. File dates and the image's creation time are
# the commit's, so rebuilding one commit gives the same layers. Prints the image tag
# (or, with -c, the context directory) on stdout; everything else goes to stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
containerfile=$root/packaging/container/Containerfile
module=github.com/queenmq/queen
uid=65532

usage() {
	sed -n '3,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
say() { printf 'container-build: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

image='' arch='' builder='' ctxonly=''
while getopts 't:a:b:c:h' opt; do
	case $opt in
	t) image=$OPTARG ;;
	a) arch=$OPTARG ;;
	b) builder=$OPTARG ;;
	c) ctxonly=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage

cd "$root"
command -v go >/dev/null 2>&1 || die "go is not installed"
[ -n "$arch" ] || arch=$(go env GOARCH)
ca=/etc/ssl/certs/ca-certificates.crt
[ -s "$ca" ] || die "$ca is missing: install the ca-certificates package"

commit=$(git rev-parse --short=12 HEAD 2>/dev/null) || die "not a git checkout: the version comes from git (set QUEEN_IMAGE_VERSION and run inside a checkout)"
epoch=$(git log -1 --format=%ct)
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
version=${QUEEN_IMAGE_VERSION:-}
if [ -z "$version" ]; then
	if desc=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
		version=${desc#v}
	else
		version=0.0.0-g$commit
		[ -z "$(git status --porcelain --untracked-files=no)" ] || version=$version-dirty
	fi
fi
[ -n "$image" ] || image=queen:$version

if [ -z "$ctxonly" ]; then
	if [ -z "$builder" ]; then
		for b in podman buildah docker; do
			if command -v "$b" >/dev/null 2>&1; then builder=$b && break; fi
		done
		[ -n "$builder" ] || die "no podman, buildah or docker installed (use -c DIR to prepare the context only)"
	fi
	case $builder in podman | buildah | docker) ;; *) die "unknown builder $builder" ;; esac
	ctx=$(mktemp -d "${TMPDIR:-/tmp}/queen-image.XXXXXX")
	trap 'rm -rf "$ctx"' EXIT
else
	ctx=$ctxonly
	if [ -e "$ctx" ] && [ -n "$(ls -A "$ctx")" ]; then die "$ctx is not empty"; fi
	mkdir -p "$ctx"
fi

# --- the context ------------------------------------------------------------------
umask 022
rootfs=$ctx/rootfs
mkdir -p "$rootfs/usr/bin" "$rootfs/etc/ssl/certs" "$rootfs/var/lib/queen" "$ctx/spool"
chmod 0750 "$ctx/spool"
ldflags="-s -w -buildid= -X $module/internal/buildinfo.Version=$version -X $module/internal/buildinfo.Commit=$commit -X $module/internal/buildinfo.Date=$created"
say "building queen, queenctl and queen-proxy $version for linux/$arch"
CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags "$ldflags" \
	-o "$rootfs/usr/bin/" ./cmd/queen ./cmd/queenctl ./cmd/queen-proxy
printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
	"queen:x:$uid:$uid:queen message broker:/var/lib/queen:/sbin/nologin" >"$rootfs/etc/passwd"
printf '%s\n' 'root:x:0:' "queen:x:$uid:" >"$rootfs/etc/group"
printf '%s\n' 'hosts: files dns' >"$rootfs/etc/nsswitch.conf"
cp "$ca" "$rootfs/etc/ssl/certs/ca-certificates.crt"
chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group" "$rootfs/etc/nsswitch.conf" "$rootfs/etc/ssl/certs/ca-certificates.crt"
find "$ctx" -exec touch -h -d "@$epoch" {} +

buildargs=(--build-arg "VERSION=$version" --build-arg "REVISION=$commit" --build-arg "CREATED=$created")
if [ -n "$ctxonly" ]; then
	say "context ready; build it with:"
	say "  podman build -f $containerfile --platform linux/$arch ${buildargs[*]} -t $image $ctx"
	echo "$ctx"
	exit 0
fi

# --- the image --------------------------------------------------------------------
say "building $image with $builder"
case $builder in
podman | buildah)
	# buildah's own CLI spells it "bud"; --timestamp pins the creation time and file dates.
	cmd=("$builder" build)
	[ "$builder" = buildah ] && cmd=(buildah bud)
	"${cmd[@]}" --quiet --pull=never --platform "linux/$arch" --timestamp "$epoch" \
		"${buildargs[@]}" -f "$containerfile" -t "$image" "$ctx" >&2
	;;
docker)
	SOURCE_DATE_EPOCH=$epoch docker build --quiet --platform "linux/$arch" \
		"${buildargs[@]}" -f "$containerfile" -t "$image" "$ctx" >&2
	;;
esac
echo "$image"
