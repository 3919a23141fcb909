#!/bin/sh
# queen %preun, after the pattern of the systemd_preun macro. $1 is the number of
# queen packages left once this one is gone: 0 = erase (stop and disable every unit,
# replicas included), 1 = upgrade (nothing: this runs after the new package's %post,
# and the services keep running).
if [ "$1" -eq 0 ] && [ -x /usr/bin/systemctl ]; then
	if [ -d /run/systemd/system ]; then
		# Sockets and the timer first, so that nothing re-activates a stopping service.
		/usr/bin/systemctl stop queen.socket 'queen@*.socket' queen-backup.timer \
			queen-proxy.socket queen-proxy-admin.socket >/dev/null 2>&1 || :
		/usr/bin/systemctl stop queen.service 'queen@*.service' queen-backup.service \
			queen-proxy.service >/dev/null 2>&1 || :
	fi
	# Disabling a template (queen@.socket) disables all of its instances.
	/usr/bin/systemctl --no-reload disable queen.socket queen.service queen@.socket queen@.service \
		queen.target queen-backup.timer queen-proxy.socket queen-proxy-admin.socket \
		queen-proxy.service >/dev/null 2>&1 || :
fi
exit 0
