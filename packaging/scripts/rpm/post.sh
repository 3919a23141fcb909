#!/bin/sh
# queen %post, after the pattern of the systemd_post macro. $1 is the number of
# queen packages installed once this one is: 1 = first install, 2 or more = upgrade.
#
# Users (sysusers.d, on upgrades too: a new release may add one) and /var/lib/queen
# (tmpfiles.d). On first install, systemctl preset applies
# /usr/lib/systemd/system-preset/80-queen.preset (the distribution's own presets
# win): queen.socket and queen-backup.timer on, queen-proxy off; then what it
# enabled is started. The restart of an upgrade is the postun scriptlet's.
if [ -x /usr/bin/systemd-sysusers ]; then
	/usr/bin/systemd-sysusers queen.conf || :
fi
if [ -x /usr/bin/systemd-tmpfiles ]; then
	/usr/bin/systemd-tmpfiles --create queen.conf || :
fi
if [ "$1" -eq 1 ] && [ -x /usr/bin/systemctl ]; then
	/usr/bin/systemctl --no-reload preset queen.socket queen-backup.timer \
		queen-proxy.socket queen-proxy-admin.socket queen-proxy.service >/dev/null 2>&1 || :
	if [ -d /run/systemd/system ]; then
		/usr/bin/systemctl daemon-reload >/dev/null 2>&1 || :
		for unit in queen.socket queen-backup.timer; do
			if /usr/bin/systemctl --quiet is-enabled "$unit" 2>/dev/null; then
				/usr/bin/systemctl start "$unit" >/dev/null 2>&1 || :
			fi
		done
		echo "queen: listening on port 6632 through queen.socket; configure PostgreSQL in /etc/queen/queen.env (see /usr/share/doc/queen/deploy.md)"
		echo "queen: queen-proxy is installed but not enabled; see /usr/share/doc/queen/multi-tenant.md, then: systemctl enable --now queen-proxy.socket queen-proxy-admin.socket"
	fi
fi
exit 0
