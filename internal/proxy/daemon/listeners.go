package daemon

import (
	"log/slog"
	"maps"
	"net"
	"slices"

	"github.com/queenmq/queen/internal/appliance"
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
// is an error (appliance.NamedListeners). It takes the descriptors once per process,
// which is why this is its only caller.
func systemdListeners(public, admin net.Listener, logger *slog.Logger) (net.Listener, net.Listener, error) {
	if public != nil || admin != nil {
		return public, admin, nil
	}
	passed, err := appliance.NamedListeners("queen-proxy", socketHTTP, socketAdmin)
	if err != nil || len(passed) == 0 {
		return nil, nil, err
	}
	names := slices.Sorted(maps.Keys(passed))
	attrs := []any{"sockets", names}
	if ln := passed[socketHTTP]; ln != nil {
		public = ln
		attrs = append(attrs, "http", public.Addr().String())
	}
	if ln := passed[socketAdmin]; ln != nil {
		admin = ln
		attrs = append(attrs, "admin", admin.Addr().String())
	}
	logger.Info("listening on sockets from systemd socket activation; their addresses win over HOST, PORT and QUEEN_PROXY_ADMIN_LISTEN", attrs...)
	return public, admin, nil
}
