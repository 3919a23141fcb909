package store

import (
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
)

// TestKeepAliveZeroIsTheSystemsSetting opens connections with keepalive settings of 0
// (the operating system's) and of given values, and reads them back from the sockets.
func TestKeepAliveZeroIsTheSystemsSetting(t *testing.T) {
	t.Parallel()
	sysctl := func(name string) int {
		b, err := os.ReadFile("/proc/sys/net/ipv4/" + name)
		require.NoError(t, err)
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		return n
	}
	url := pgtest.NewDBURL(t)
	for _, tc := range []struct {
		name                  string
		cfg                   net.KeepAliveConfig
		idle, interval, count int
	}{
		{"Zero", net.KeepAliveConfig{},
			sysctl("tcp_keepalive_time"), sysctl("tcp_keepalive_intvl"), sysctl("tcp_keepalive_probes")},
		{"Given", net.KeepAliveConfig{Idle: 61 * time.Second, Interval: 11 * time.Second, Count: 4}, 61, 11, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(Options{ConnString: url, MaxConns: 2, KeepAlive: tc.cfg})
			require.NoError(t, err)
			defer s.Close()
			conn, err := s.pool.Acquire(t.Context())
			require.NoError(t, err)
			defer conn.Release()
			tcp, ok := conn.Conn().PgConn().Conn().(*net.TCPConn)
			require.True(t, ok, "a TCP connection, not %T", conn.Conn().PgConn().Conn())
			raw, err := tcp.SyscallConn()
			require.NoError(t, err)
			got := map[string]int{}
			require.NoError(t, raw.Control(func(fd uintptr) {
				for name, opt := range map[string][2]int{
					"on":       {syscall.SOL_SOCKET, syscall.SO_KEEPALIVE},
					"idle":     {syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE},
					"interval": {syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL},
					"count":    {syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT},
				} {
					v, err := syscall.GetsockoptInt(int(fd), opt[0], opt[1])
					require.NoError(t, err, name)
					got[name] = v
				}
			}))
			require.Equal(t, map[string]int{"on": 1, "idle": tc.idle, "interval": tc.interval, "count": tc.count}, got)
		})
	}
}
