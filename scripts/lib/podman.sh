# shellcheck shell=bash
#
# podman in private storage for the container scripts: nothing of the host's podman
# is used or changed. Sourced by scripts/container-test.sh and
# scripts/release-image.sh; defines functions only.

# Private storage and configuration: nothing of the host's podman is used or changed.
# podman reads these two files instead of /etc/containers/*.conf.
setup_podman() { # WORK RUNTIME
	local driver=vfs engine_runtime=
	grep -qw overlay /proc/filesystems && driver=overlay
	[ -z "$2" ] || engine_runtime="runtime = \"$2\""
	mkdir -p "$1/storage" "$1/run" "$1/tmp"
	cat >"$1/storage.conf" <<-EOF
		[storage]
		driver = "$driver"
		graphroot = "$1/storage"
		runroot = "$1/run"
	EOF
	# Limits no higher than this process's own: raising them needs CAP_SYS_RESOURCE,
	# which a CI container may not have.
	cat >"$1/containers.conf" <<-EOF
		[containers]
		default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
		[engine]
		cgroup_manager = "cgroupfs"
		events_logger = "file"
		tmp_dir = "$1/tmp"
		$engine_runtime
	EOF
	export CONTAINERS_STORAGE_CONF=$1/storage.conf CONTAINERS_CONF=$1/containers.conf
}

# cleanup_podman WORK: remove containers and images, unmount what storage left, delete.
cleanup_podman() {
	[ -n "${1:-}" ] && [ -d "$1" ] || return 0
	if [ -n "${CONTAINERS_CONF:-}" ]; then
		podman rm -a -f >/dev/null 2>&1 || true
		podman rmi -a -f >/dev/null 2>&1 || true
	fi
	{ findmnt -rn -o TARGET 2>/dev/null || true; } | { grep -F "$1/" || true; } | sort -r |
		while read -r m; do umount -l "$m" 2>/dev/null || true; done
	rm -rf "$1"
}
