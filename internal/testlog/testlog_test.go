package testlog_test

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/testlog"
)

func TestWriter(t *testing.T) {
	t.Parallel()

	t.Run("DropsWhatComesAfterTheTest", func(t *testing.T) {
		t.Parallel()
		var w io.Writer
		t.Run("Inner", func(t *testing.T) {
			w = testlog.Writer(t)
			n, err := w.Write([]byte("shown with go test -v\n"))
			require.NoError(t, err)
			require.Equal(t, 22, n)
		})
		// t.Log of a finished test panics; the writer must not call it.
		n, err := w.Write([]byte("dropped\n"))
		require.NoError(t, err)
		require.Equal(t, 8, n)
	})
}

func TestBuffer(t *testing.T) {
	t.Parallel()

	t.Run("ConcurrentWritersAndReaders", func(t *testing.T) {
		t.Parallel()
		var b testlog.Buffer
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for j := range 100 {
					_, _ = fmt.Fprintf(&b, "%d-%03d\n", i, j)
					_ = b.String()
				}
			})
		}
		wg.Wait()
		require.Len(t, strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"), 800)
	})

	t.Run("TailAndBytes", func(t *testing.T) {
		t.Parallel()
		var b testlog.Buffer
		require.Empty(t, b.Tail(4))
		_, _ = b.Write([]byte("abcdef"))
		require.Equal(t, "cdef", b.Tail(4))
		require.Equal(t, "abcdef", b.Tail(100))
		p := b.Bytes()
		p[0] = 'X'
		require.Equal(t, "abcdef", b.String(), "Bytes returns a copy")
	})
}
