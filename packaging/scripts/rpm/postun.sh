#!/bin/sh
# queen %postun, after the pattern of the systemd_postun_with_restart macro. $1 is
# the number of queen packages left: 0 = erase (reload systemd; an edited queen.env
# is kept as queen.env.rpmsave), 1 = upgrade (reload systemd, then restart the
# services that are running, on the new binaries that are in place by now; an idle
# socket-activated service needs nothing). Replicas (queen@N) restart one at a time: a
# restart returns once the new process is ready (Type=notify), so the others serve
# meanwhile.
if [ -d /run/systemd/system ] && [ -x /usr/bin/systemctl ]; then
	/usr/bin/systemctl daemon-reload >/dev/null 2>&1 || :
	if [ "$1" -ge 1 ]; then
		/usr/bin/systemctl try-restart queen.service queen-proxy.service >/dev/null 2>&1 || :
		for unit in $(/usr/bin/systemctl list-units --plain --no-legend --state=running 'queen@*.service' 2>/dev/null | cut -d' ' -f1); do
			/usr/bin/systemctl try-restart "$unit" >/dev/null 2>&1 || :
		done
	fi
fi
exit 0
