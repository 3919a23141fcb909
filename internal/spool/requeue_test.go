package spool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// TestSpoolRequeue: records an earlier run quarantined for a reason retry accepts go
// back to the spool and are replayed; the others stay in their dead-letter file; a
// second Requeue finds nothing more, and this run's own dead-letter file is left alone.
func TestSpoolRequeue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const readOnly = "ERROR: cannot execute INSERT in a read-only transaction (SQLSTATE 25006)"
	s := open(t, dir)
	require.NoError(t, s.Append(t.Context(), []queue.PushItem{item(1), item(2), item(3), item(4)}))
	b, err := s.Peek(10)
	require.NoError(t, err)
	for i, why := range []string{readOnly, `queue "orders" is full: maxSize reached`, readOnly} {
		require.NoError(t, s.Quarantine(b.Records[i], why))
	}
	s.Commit(b, 3)
	require.NoError(t, s.Close())

	s = open(t, dir)
	retry := func(reason string) bool { return strings.Contains(reason, "SQLSTATE 25006") }
	n, err := s.Requeue(t.Context(), retry)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	st := s.Stats()
	require.EqualValues(t, 1, st.QuarantinedRecords, "the full-queue record stays quarantined")
	require.EqualValues(t, 1, st.DeadFiles)
	require.Equal(t, []string{"tx-0004", "tx-0001", "tx-0003"}, drainAll(t, s, 10),
		"the pending record, then the requeued ones in their quarantine order")

	n, err = s.Requeue(t.Context(), retry)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to requeue")

	// This run's own quarantines were judged by this release: never requeued.
	require.NoError(t, s.Append(t.Context(), []queue.PushItem{item(5)}))
	b, err = s.Peek(10)
	require.NoError(t, err)
	require.NoError(t, s.Quarantine(b.Records[0], readOnly))
	s.Commit(b, 1)
	n, err = s.Requeue(t.Context(), retry)
	require.NoError(t, err)
	require.Zero(t, n)
	require.NoError(t, s.Close())

	s = open(t, dir)
	n, err = s.Requeue(t.Context(), func(string) bool { return true })
	require.NoError(t, err)
	require.Equal(t, 2, n, "a later run requeues both files' records")
	dead, err := filepath.Glob(filepath.Join(dir, deadDir, deadPrefix+"*"))
	require.NoError(t, err)
	require.Empty(t, dead, "emptied dead-letter files are removed")
	require.Zero(t, s.Stats().QuarantinedRecords)
	require.Equal(t, []string{"tx-0002", "tx-0005"}, drainAll(t, s, 10))
	_, err = os.Stat(filepath.Join(dir, deadDir))
	require.NoError(t, err)
}
