#!/bin/sh
# queen preremove, shared by the deb (prerm) and the rpm (%preun).
#
#   deb: remove            the package goes away: stop and disable everything
#        upgrade | deconfigure | failed-upgrade   nothing (the service keeps running;
#                          the new package's postinstall restarts it)
#   rpm: 0 = erase (stop and disable), 1 = upgrade (nothing: rpm runs the old
#        package's %preun after the new package's %post)
set -e

case "$1" in
remove | 0) ;;
*) exit 0 ;;
esac

if [ -d /run/systemd/system ]; then
	# Sockets first, so that nothing re-activates a service that is stopping.
	systemctl stop queen.socket 'queen@*.socket' queen-backup.timer || true
	systemctl stop queen.service 'queen@*.service' queen-backup.service || true
fi
# Disabling a template (queen@.socket) disables all of its instances.
systemctl disable queen.socket queen.service queen@.socket queen@.service queen.target \
	queen-backup.timer >/dev/null 2>&1 || true
exit 0
