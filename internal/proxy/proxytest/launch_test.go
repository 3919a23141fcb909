package proxytest

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/pgtest"
)

// A child that exits before it is ready is reported with the end of its output; when
// its port was taken, the error says so, and Exec tries other ports.
func TestLaunchReportsATakenPort(t *testing.T) {
	t.Parallel()
	broker := StartBroker(t, daemontest.Options{})
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	admin, err := freeAddr()
	require.NoError(t, err)
	_, err = launch(t, proxyBinary(t), Options{Backends: []string{broker.URL}}, pgtest.NewDBURL(t), io.Discard,
		taken.Addr().String(), admin)
	require.ErrorIs(t, err, errPortTaken)
	require.ErrorContains(t, err, "exited before it was ready")
	require.ErrorContains(t, err, "the output ends:")
}

func TestFirstWins(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"A=1", "B=2", "C="}, firstWins([]string{"A=1", "B=2", "A=3", "C=", "B=", "C=4"}))
	require.Nil(t, firstWins(nil))
}
