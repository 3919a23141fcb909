package appliance

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/coreos/go-systemd/v22/activation"
)

// Listen returns the listener to serve: the sockets systemd passed (LISTEN_FDS),
// merged into one, or else addr bound here. passed lists the sockets systemd passed
// as name=address, for the log, and is empty when addr was bound. activation.Files
// takes the descriptors and unsets LISTEN_*; it can only be used once per process, so
// a daemon calls Listen or NamedListeners once.
func Listen(addr string) (ln net.Listener, passed string, err error) {
	files := activation.Files(true)
	if len(files) == 0 {
		ln, err = net.Listen("tcp", addr)
		if err != nil {
			return nil, "", fmt.Errorf("listen on %s: %w", addr, err)
		}
		return ln, "", nil
	}
	lns := make([]net.Listener, 0, len(files))
	names := make([]string, 0, len(files))
	for _, f := range files {
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, "", fmt.Errorf("socket %q passed by systemd is not a stream listener: %w", f.Name(), err)
		}
		lns = append(lns, l)
		names = append(names, f.Name()+"="+l.Addr().String())
	}
	passed = strings.Join(names, ", ")
	if len(lns) == 1 {
		return lns[0], passed, nil
	}
	return NewMultiListener(lns), passed, nil
}

// NamedListeners returns the sockets systemd passed, by their FileDescriptorName=,
// or nil when it passed none. Each name must be one of names and carry one stream
// socket (one ListenStream= per socket unit); anything else is an error, with every
// passed socket closed, so that a misconfigured unit fails at start instead of
// leaving an address unserved. daemon names the program in the error. It takes the
// descriptors like Listen, once per process.
func NamedListeners(daemon string, names ...string) (map[string]net.Listener, error) {
	passed, err := activation.ListenersWithNames()
	if err != nil {
		return nil, fmt.Errorf("sockets passed by systemd: %w", err)
	}
	if len(passed) == 0 {
		return nil, nil
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
	lns := make(map[string]net.Listener, len(passed))
	for name, got := range passed {
		switch {
		case !slices.Contains(names, name):
			closeAll()
			quoted := make([]string, len(names))
			for i, n := range names {
				quoted[i] = strconv.Quote(n)
			}
			return nil, fmt.Errorf("socket %q passed by systemd: %s serves sockets named %s (FileDescriptorName=)",
				name, daemon, strings.Join(quoted, " and "))
		case len(got) != 1 || got[0] == nil:
			closeAll()
			return nil, fmt.Errorf("socket %q passed by systemd: want one stream listener, got %d descriptors (one ListenStream= per socket unit)",
				name, len(got))
		}
		lns[name] = got[0]
	}
	return lns, nil
}

// MultiListener serves several passed sockets (a socket unit with more than one
// ListenStream=) through one net.Listener, so the HTTP server and its shutdown stay
// the same as with one socket.
type MultiListener struct {
	lns       []net.Listener
	conns     chan acceptResult
	done      chan struct{}
	closeOnce sync.Once
}

type acceptResult struct {
	conn net.Conn
	err  error
}

// NewMultiListener serves lns, which must not be empty, as one listener.
func NewMultiListener(lns []net.Listener) *MultiListener {
	ml := &MultiListener{lns: lns, conns: make(chan acceptResult), done: make(chan struct{})}
	for _, l := range lns {
		go ml.forward(l)
	}
	return ml
}

// forward hands l's connections and errors to Accept until l or ml is closed.
func (ml *MultiListener) forward(l net.Listener) {
	for {
		c, err := l.Accept()
		select {
		case ml.conns <- acceptResult{c, err}:
		case <-ml.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// Accept returns the next connection of any of the sockets.
func (ml *MultiListener) Accept() (net.Conn, error) {
	select {
	case r := <-ml.conns:
		return r.conn, r.err
	case <-ml.done:
		return nil, net.ErrClosed
	}
}

// Close closes every socket.
func (ml *MultiListener) Close() error {
	var errs []error
	ml.closeOnce.Do(func() {
		close(ml.done)
		for _, l := range ml.lns {
			errs = append(errs, l.Close())
		}
	})
	return errors.Join(errs...)
}

// Addr is the first socket's address.
func (ml *MultiListener) Addr() net.Addr { return ml.lns[0].Addr() }
