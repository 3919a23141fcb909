package testlog

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Writer returns an io.Writer that sends each write to t.Log, without its trailing
// newline. It stops at the cleanup it registers, and drops what comes later: t.Log
// panics once a test has ended, and a daemon or a child's copier may still write
// then. Cleanups run last registered first, so call Writer before registering the
// cleanup that stops what writes to it, or the lines written while that stops are
// dropped.
func Writer(t testing.TB) io.Writer {
	w := &writer{t: t}
	t.Cleanup(w.close)
	return w
}

// Logger returns a text logger at Debug that writes through Writer(t).
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(Writer(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// writer is what Writer returns.
type writer struct {
	t testing.TB

	mu     sync.Mutex
	closed bool
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *writer) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

// Buffer is a bytes.Buffer that writers and readers may use at once. The zero value
// is an empty buffer ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes returns a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// Tail returns the last n bytes written (all of them when fewer), for a failure
// message that must not drown in a long log.
func (b *Buffer) Tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.buf.Bytes()
	return string(p[max(0, len(p)-n):])
}
