//go:build linux

package daemon_test

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/cli"
)

// openPTY opens a pseudo-terminal: the master end (what a terminal emulator reads
// and writes) and the slave end (a program's terminal).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = master.Close() })
	unlock := int32(0)
	require.NoError(t, ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)))
	var n uint32
	require.NoError(t, ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)))
	slave, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = slave.Close() })
	return master, slave
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// echoOn reports whether the terminal echoes what is typed.
func echoOn(t *testing.T, f *os.File) bool {
	t.Helper()
	var tio syscall.Termios
	require.NoError(t, ioctl(f, syscall.TCGETS, unsafe.Pointer(&tio)))
	return tio.Lflag&syscall.ECHO != 0
}

// queenctl login reads a password typed at a terminal without echoing it, and puts
// the terminal back as it was.
func TestQueenctlLoginPasswordNotEchoed(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{login: true})
	createUser(t, b.proxy, "op", "operator-password", "admin", "")
	master, slave := openPTY(t)
	require.True(t, echoOn(t, slave))

	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := cli.Main(t.Context(), []string{"login", "--server", b.proxy.URL, "--username", "op", "-o", "json"},
			[]string{"QUEENCTL_CONFIG=" + t.TempDir() + "/config.yaml"}, slave, &out, &errOut)
		done <- result{code, out.String(), errOut.String()}
	}()
	// Type the password only once queenctl has turned echo off: a terminal echoes
	// input as it arrives.
	eventually(t, 10*time.Second, func() bool { return !echoOn(t, slave) }, "queenctl never turned echo off")
	_, err := master.Write([]byte("operator-password\n"))
	require.NoError(t, err)
	var res result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("queenctl login did not return")
	}
	require.Equal(t, cli.ExitOK, res.code, "%s%s", res.out, res.errOut)
	require.Contains(t, res.out, `"token"`)
	require.Contains(t, res.errOut, "Password: ")
	require.True(t, echoOn(t, slave), "the terminal's echo is not restored")

	// What the terminal showed: nothing of the password. The terminal echoes input
	// as it takes it in, before a reader sees it, so any echo is waiting at the
	// master end by now: read what is there without blocking.
	fd := int(master.Fd())
	require.NoError(t, syscall.SetNonblock(fd, true))
	var shown bytes.Buffer
	buf := make([]byte, 1024)
	for {
		n, err := syscall.Read(fd, buf)
		if n > 0 {
			shown.Write(buf[:n])
		}
		if errors.Is(err, syscall.EAGAIN) {
			break
		}
		require.NoError(t, err)
		require.Positive(t, n, "the terminal closed")
	}
	require.NotContains(t, shown.String(), "operator-password", "the password was echoed")
}
