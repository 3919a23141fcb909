#!/bin/bash
# sdbox: a disposable, real systemd (PID 1 of a new PID namespace) on a
# throwaway overlay of the host root.  Everything written inside lives in a
# tmpfs that only exists in the box's private mount namespace.
#
#   sdbox up   NAME [TARGET]   boot (default target: basic.target); waits for "running"
#   sdbox run  NAME CMD...     run a command inside (all namespaces, clean env)
#   sdbox pid  NAME            host PID of the box's systemd
#   sdbox down NAME            poweroff, wait, clean cgroup + state dir
#
# Host files can be passed in through $STATE/share (mounted at /mnt/share inside).
# Env: SDBOX_NET=host keeps the host network namespace (default: private, lo only).
#      SDBOX_DIR=dir   parent of the per-box state directories (default /tmp/sdbox).
#
# The recipe of a disposable systemd, with the box's PID 1 found by its
# PID namespace (concurrent boots used to pick a transient child). Used by
# scripts/systemd-test.sh; handy by hand to try a unit or a package:
#   scripts/sdbox.sh up t && scripts/sdbox.sh run t systemctl status; scripts/sdbox.sh down t
set -euo pipefail

cmd=${1:?usage: sdbox up|run|pid|down NAME ...}
name=${2:?name}
STATE=${SDBOX_DIR:-/tmp/sdbox}/$name
CG2=""
for c in /sys/fs/cgroup/unified /sys/fs/cgroup; do
  if [ "$(stat -f -c %T "$c" 2>/dev/null)" = cgroup2fs ]; then CG2=$c; break; fi
done

mask_units="systemd-timesyncd.service systemd-sysctl.service systemd-modules-load.service
systemd-binfmt.service proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount
systemd-remount-fs.service systemd-pstore.service systemd-journald-audit.socket
sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount
sys-fs-fuse-connections.mount dev-hugepages.mount kmod-static-nodes.service
systemd-udevd.service systemd-udev-trigger.service systemd-udev-settle.service
getty.target console-getty.service serial-getty@.service getty@.service
e2scrub_all.timer e2scrub_reap.service fstrim.timer apt-daily.timer
apt-daily-upgrade.timer dpkg-db-backup.timer man-db.timer systemd-firstboot.service"

# shellcheck disable=SC2086,SC2116 # the names on one line, for the init script
mask_list=$(echo $mask_units)

boxpid() { cat "$STATE/pid"; }

case $cmd in
up)
  target=${3:-basic.target}
  [ -e "$STATE/pid" ] && { echo "box $name already up (pid $(boxpid))"; exit 1; }
  mkdir -p "$STATE/share" "$STATE/mnt"
  : >"$STATE/console.log"
  # The init script runs as PID 1 of the new namespaces, before systemd.
  cat >"$STATE/init.sh" <<EOF
set -eu
S='$STATE'
mount --make-rprivate /
mount -t tmpfs -o mode=0755 sdbox "\$S/mnt"
mkdir "\$S/mnt/upper" "\$S/mnt/work" "\$S/mnt/root"
mount -t overlay overlay -o lowerdir=/,upperdir="\$S/mnt/upper",workdir="\$S/mnt/work" "\$S/mnt/root"
R="\$S/mnt/root"
mount -t proc proc "\$R/proc"
mount --bind "\$R/proc/sys" "\$R/proc/sys";  mount -o remount,bind,ro "\$R/proc/sys"
if [ -e "\$R/proc/sysrq-trigger" ]; then mount --bind "\$R/proc/sysrq-trigger" "\$R/proc/sysrq-trigger"; mount -o remount,bind,ro "\$R/proc/sysrq-trigger"; fi
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "\$R/sys"
# cgroup2 mounted inside the new cgroup namespace: systemd sees its own subtree as root and runs in unified mode
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "\$R/sys/fs/cgroup"
mount -t tmpfs -o mode=0755,nosuid,size=16m devtmp "\$R/dev"
for d in null zero full random urandom tty; do : >"\$R/dev/\$d"; mount --bind "/dev/\$d" "\$R/dev/\$d"; done
mkdir "\$R/dev/pts" "\$R/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "\$R/dev/pts"
ln -s pts/ptmx "\$R/dev/ptmx"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "\$R/dev/shm"
ln -s /proc/self/fd "\$R/dev/fd"; ln -s /proc/self/fd/0 "\$R/dev/stdin"
ln -s /proc/self/fd/1 "\$R/dev/stdout"; ln -s /proc/self/fd/2 "\$R/dev/stderr"
: >"\$R/dev/console"; mount --bind "\$S/console.log" "\$R/dev/console"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "\$R/run"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "\$R/tmp"
mkdir -p "\$R/mnt/share"; mount --bind "\$S/share" "\$R/mnt/share"
for u in $mask_list; do ln -sf /dev/null "\$R/etc/systemd/system/\$u"; done
echo "sdbox-$name" >"\$R/etc/hostname"; hostname "sdbox-$name"
rm -f "\$R/etc/machine-id"; : >"\$R/etc/machine-id"    # fresh transient id per boot
ip link set lo up 2>/dev/null || true
cd "\$R"; mkdir -p .oldroot; pivot_root . .oldroot; cd /
umount -l /.oldroot; rmdir /.oldroot
exec env -i container=sdbox TERM=dumb /lib/systemd/systemd --system --unit=$target --show-status=false
EOF
  netflag=--net; [ "${SDBOX_NET:-}" = host ] && netflag=
  (
    if [ -n "$CG2" ]; then
      mkdir -p "$CG2/sdbox-$name"; echo "$BASHPID" >"$CG2/sdbox-$name/cgroup.procs"
    fi
    exec setsid unshare --pid --fork --mount --uts --ipc --cgroup $netflag \
      bash "$STATE/init.sh" </dev/null >"$STATE/init.log" 2>&1
  ) &
  upid=$!
  # The box's PID 1 is the child of unshare that is PID 1 in its own PID namespace
  # (NSpid ends in 1). Checking that matters: before exec'ing unshare, the subshell
  # briefly has other children (mkdir), and taking one of those for the box made
  # concurrent boots fail with "box died".
  p=
  for _ in $(seq 100); do
    for c in $(ps -o pid= --ppid "$upid" 2>/dev/null || true); do
      if [ "$(awk '/^NSpid:/ {print $NF}' "/proc/$c/status" 2>/dev/null)" = 1 ]; then p=$c; break 2; fi
    done
    sleep 0.1
  done
  [ -n "$p" ] || { echo "no box pid"; cat "$STATE/init.log"; exit 1; }
  echo "$p" >"$STATE/pid"; echo "$upid" >"$STATE/unshare.pid"
  # wait until systemd answers and has finished booting
  t0=$(date +%s%N)
  for _ in $(seq 600); do
    st=$("$0" run "$name" systemctl is-system-running 2>/dev/null || true)
    case $st in running|degraded) break;; esac
    kill -0 "$p" 2>/dev/null || { echo "box died"; cat "$STATE/init.log"; tail -20 "$STATE/console.log"; exit 1; }
    sleep 0.1
  done
  echo "box $name pid $p state=$st boot=$(( ($(date +%s%N) - t0) / 1000000 ))ms"
  ;;
run)
  shift 2
  p=$(boxpid)
  exec nsenter -t "$p" -m -p -u -i -n -C -- \
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    TERM=dumb SYSTEMD_PAGER= SYSTEMD_COLORS=0 LANG=C.UTF-8 HOME=/root "$@"
  ;;
pid) boxpid ;;
down)
  p=$(boxpid 2>/dev/null || true)
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    "$0" run "$name" systemctl poweroff --no-block >/dev/null 2>&1 || kill -s SIGRTMIN+4 "$p" || true
    for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then echo "poweroff timed out; SIGKILL box pid $p"; kill -9 "$p"; sleep 0.5; fi
  fi
  if [ -n "$CG2" ] && [ -d "$CG2/sdbox-$name" ]; then
    # remove the (now empty) cgroup tree bottom-up
    # (the kernel may take a moment to release the last processes' cgroups)
    for _ in $(seq 30); do
      find "$CG2/sdbox-$name" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      [ -d "$CG2/sdbox-$name" ] || break
      sleep 0.1
    done
    [ -d "$CG2/sdbox-$name" ] && echo "warning: cgroup $CG2/sdbox-$name still present"
  fi
  rm -rf "$STATE"
  echo "box $name down"
  ;;
*) echo "unknown command $cmd"; exit 2 ;;
esac
