package daemon

import (
	"fmt"
	"log/slog"
	"net"
	"slices"

	"github.com/coreos/go-systemd/v22/activation"
)

// Names of the sockets systemd passes (FileDescriptorName= of queen-proxy.socket
// and queen-proxy-admin.socket).
const (
	socketHTTP  = "http"
	socketAdmin = "admin"
)

// systemdListeners returns the public and admin listeners: the ones the caller
// gave (tests), else the sockets systemd passed, by name, for those it passed; a
// nil result is bound by build from HOST:PORT or QUEEN_PROXY_ADMIN_LISTEN. A passed
// socket always wins over those settings. Each name carries one socket (one
// ListenStream= per unit); a socket of another name, or a second one under a name,
// is an error, so that a misconfigured unit fails at start instead of leaving an
// address unserved. activation.ListenersWithNames takes the descriptors and unsets
// LISTEN_*; it works once per process, which is why this is its only caller.
func systemdListeners(public, admin net.Listener, logger *slog.Logger) (net.Listener, net.Listener, error) {
	if public != nil || admin != nil {
		return public, admin, nil
	}
	passed, err := activation.ListenersWithNames()
	if err != nil {
		return nil, nil, fmt.Errorf("sockets passed by systemd: %w", err)
	}
	if len(passed) == 0 {
		return nil, nil, nil
	}
	closeAll := func() {
		for _, lns := range passed {
			for _, ln := range lns {
				if ln != nil {
					_ = ln.Close()
				}
			}
		}
	}
	names := make([]string, 0, len(passed))
	for name, lns := range passed {
		names = append(names, name)
		switch {
		case name != socketHTTP && name != socketAdmin:
			closeAll()
			return nil, nil, fmt.Errorf("socket %q passed by systemd: queen-proxy serves sockets named %q and %q (FileDescriptorName=)",
				name, socketHTTP, socketAdmin)
		case len(lns) != 1 || lns[0] == nil:
			closeAll()
			return nil, nil, fmt.Errorf("socket %q passed by systemd: want one stream listener, got %d descriptors (one ListenStream= per socket unit)",
				name, len(lns))
		}
	}
	slices.Sort(names)
	attrs := []any{"sockets", names}
	if lns := passed[socketHTTP]; lns != nil {
		public = lns[0]
		attrs = append(attrs, "http", public.Addr().String())
	}
	if lns := passed[socketAdmin]; lns != nil {
		admin = lns[0]
		attrs = append(attrs, "admin", admin.Addr().String())
	}
	logger.Info("listening on sockets from systemd socket activation; their addresses win over HOST, PORT and QUEEN_PROXY_ADMIN_LISTEN", attrs...)
	return public, admin, nil
}
