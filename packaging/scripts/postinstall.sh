#!/bin/sh
# queen postinstall, shared by the deb (postinst) and the rpm (%post).
#
#   deb: configure [old-version]   empty old-version = first install, else upgrade
#        abort-upgrade | abort-remove | abort-deconfigure  (nothing to do)
#   rpm: 1 = first install, 2 or more = upgrade
#
# Install: create the user (sysusers.d) and /var/lib/queen (tmpfiles.d), reload
# systemd, enable and start queen.socket (not the service: the first connection
# starts it) and the backup timer. Upgrade: reload systemd and restart only the
# queen services that are running; enablement is left as the admin set it.
# Every systemctl call is guarded: in a chroot or an image build there is no
# running systemd and the package must still install.
set -e

action=
case "$1" in
configure) if [ -z "${2:-}" ]; then action=install; else action=upgrade; fi ;;
abort-*) exit 0 ;;
1) action=install ;;
[2-9] | [1-9][0-9]*) action=upgrade ;;
*) echo "queen postinstall: unknown argument '$1'" >&2; exit 0 ;;
esac

running() { [ -d /run/systemd/system ]; }

if command -v systemd-sysusers >/dev/null 2>&1; then
	systemd-sysusers /usr/lib/sysusers.d/queen.conf || true
elif ! getent passwd queen >/dev/null 2>&1; then
	useradd --system --user-group --home-dir /var/lib/queen --no-create-home \
		--shell /usr/sbin/nologin --comment "queen message broker" queen || true
fi
if command -v systemd-tmpfiles >/dev/null 2>&1; then
	systemd-tmpfiles --create /usr/lib/tmpfiles.d/queen.conf || true
fi

if running; then
	systemctl daemon-reload || true
fi

units="queen.socket queen-backup.timer"
if [ "$action" = install ]; then
	if [ "$1" = configure ] && command -v deb-systemd-helper >/dev/null 2>&1; then
		# As debhelper does: respect an admin's "disable" across remove + reinstall.
		for u in $units; do
			deb-systemd-helper unmask "$u" >/dev/null || true
			if deb-systemd-helper --quiet was-enabled "$u"; then
				deb-systemd-helper enable "$u" >/dev/null || true
			else
				deb-systemd-helper update-state "$u" >/dev/null || true
			fi
		done
	else
		# shellcheck disable=SC2086 # word splitting of the unit list is intended
		systemctl enable $units >/dev/null 2>&1 || true
	fi
	if running; then
		for u in $units; do
			if systemctl --quiet is-enabled "$u" 2>/dev/null; then
				if command -v deb-systemd-invoke >/dev/null 2>&1; then
					deb-systemd-invoke start "$u" >/dev/null || true
				else
					systemctl start "$u" || true
				fi
			fi
		done
		echo "queen: listening on port 6632 through queen.socket; configure PostgreSQL in /etc/queen/queen.env (see /usr/share/doc/queen/deploy.md)"
	fi
else
	if running; then
		# Only instances that are running; an idle socket-activated service needs
		# nothing: the next connection starts the new binary.
		systemctl try-restart queen.service 'queen@*.service' || true
	fi
fi
exit 0
