#!/bin/sh
# queen postremove, shared by the deb (postrm) and the rpm (%postun).
#
#   deb: remove    reload systemd; /etc/queen and /var/lib/queen stay
#        purge     also delete /etc/queen and /var/lib/queen, except the backups in
#                  /var/lib/queen/backups (delete those by hand); the user queen stays
#   rpm: 0 = erase (reload systemd; rpm keeps an edited queen.env as .rpmsave),
#        1 = upgrade (reload systemd)
set -e

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi

if [ "$1" = purge ]; then
	if command -v deb-systemd-helper >/dev/null 2>&1; then
		for u in queen.socket queen-backup.timer; do
			deb-systemd-helper purge "$u" >/dev/null || true
			deb-systemd-helper unmask "$u" >/dev/null || true
		done
	fi
	rm -rf /etc/queen
	if [ -d /var/lib/queen ]; then
		find /var/lib/queen -mindepth 1 -maxdepth 1 ! -name backups -exec rm -rf {} +
		if [ -d /var/lib/queen/backups ] && [ -n "$(ls -A /var/lib/queen/backups)" ]; then
			echo "queen: kept the database dumps in /var/lib/queen/backups; delete them by hand when no longer needed"
		else
			rm -rf /var/lib/queen
		fi
	fi
fi
exit 0
