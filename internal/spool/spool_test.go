package spool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

func item(i int) queue.PushItem {
	return queue.PushItem{
		Queue: "orders", Partition: fmt.Sprintf("p%d", i%3), TransactionID: fmt.Sprintf("tx-%04d", i),
		Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)),
	}
}

func open(t *testing.T, dir string, opts ...func(*Options)) *Spool {
	t.Helper()
	o := Options{Dir: dir}
	for _, f := range opts {
		f(&o)
	}
	s, err := Open(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// drainAll peeks and commits everything, returning the transaction ids in order.
func drainAll(t *testing.T, s *Spool, batch int) []string {
	t.Helper()
	var ids []string
	for i := 0; ; i++ {
		require.Less(t, i, 100000, "drain does not end")
		b, err := s.Peek(batch)
		require.NoError(t, err)
		if b == nil {
			return ids
		}
		require.NotEmpty(t, b.Records)
		for _, r := range b.Records {
			require.NoError(t, r.Err)
			ids = append(ids, r.Item.TransactionID)
		}
		s.Commit(b, len(b.Records))
	}
}

func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, segPrefix+"*"))
	require.NoError(t, err)
	return m
}

func TestSpoolRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, func(o *Options) { o.EventsPerSegment = 7 })
	var want []string
	for i := range 30 {
		it := item(i)
		require.NoError(t, s.Append(t.Context(), []queue.PushItem{it}))
		want = append(want, it.TransactionID)
	}
	st := s.Stats()
	require.EqualValues(t, 30, st.PendingRecords)
	require.Equal(t, 5, st.Segments, "7 records per segment")
	require.Positive(t, st.PendingBytes)
	require.False(t, st.OldestPending.IsZero())
	require.True(t, st.Healthy)

	b, err := s.Peek(4)
	require.NoError(t, err)
	require.Len(t, b.Records, 4)
	require.Equal(t, "orders", b.Records[0].Item.Queue)
	require.Equal(t, "p0", b.Records[0].Item.Partition)
	require.JSONEq(t, `{"n":0}`, string(b.Records[0].Item.Payload))
	require.Empty(t, b.Records[0].Item.MessageID, "replay assigns new message ids")
	s.Commit(b, 2) // a partial commit: the next peek starts at record 2
	require.EqualValues(t, 28, s.Stats().PendingRecords)

	got := drainAll(t, s, 5)
	require.Equal(t, want[2:], got)
	st = s.Stats()
	require.Zero(t, st.PendingRecords)
	require.Zero(t, st.PendingBytes)
	require.Empty(t, segmentFiles(t, dir), "the spool shrinks to nothing once drained")
	require.EqualValues(t, 30, st.Appended)
	require.EqualValues(t, 30, st.Drained)

	// The next append starts a new segment.
	require.NoError(t, s.Append(t.Context(), []queue.PushItem{item(99)}))
	require.Len(t, segmentFiles(t, dir), 1)
	require.Equal(t, []string{"tx-0099"}, drainAll(t, s, 10))
}

func TestSpoolSurvivesReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, EventsPerSegment: 4})
	require.NoError(t, err)
	for i := range 10 {
		require.NoError(t, s.Append(t.Context(), []queue.PushItem{item(i)}))
	}
	b, err := s.Peek(3)
	require.NoError(t, err)
	s.Commit(b, 3)
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Append(t.Context(), []queue.PushItem{item(0)}), ErrClosed)

	s = open(t, dir)
	st := s.Stats()
	require.EqualValues(t, 7, st.PendingRecords, "the drain position survives")
	require.Zero(t, st.CorruptRegions)
	got := drainAll(t, s, 100)
	require.Equal(t, []string{"tx-0003", "tx-0004", "tx-0005", "tx-0006", "tx-0007", "tx-0008", "tx-0009"}, got)
}

func TestSpoolLocksItsDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir)
	_, err := Open(Options{Dir: dir})
	require.ErrorIs(t, err, ErrLocked)
	require.NoError(t, s.Close())
	open(t, dir) // released by Close
}

// TestSpoolGroupCommit appends from many goroutines: every acknowledged record is
// drained exactly once, in per-goroutine order.
func TestSpoolGroupCommit(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), func(o *Options) { o.EventsPerSegment = 50 })
	const writers, each = 8, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				it := queue.PushItem{Queue: "q", Partition: fmt.Sprintf("w%d", w), TransactionID: fmt.Sprintf("w%d-%03d", w, i)}
				require.NoError(t, s.Append(context.Background(), []queue.PushItem{it, it}))
			}
		})
	}
	wg.Wait()
	got := drainAll(t, s, 64)
	require.Len(t, got, writers*each*2)
	last := map[string]string{}
	for _, id := range got {
		w := strings.Split(id, "-")[0]
		require.GreaterOrEqual(t, id, last[w], "order within one writer")
		last[w] = id
	}
}

// TestSpoolCorruption is the corruption test of the issue: a spool file with a
// truncated last record and a flipped byte in the middle. Every intact record is
// replayed, the two broken ones are reported, and the file is kept under dead/.
func TestSpoolCorruption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	require.NoError(t, err)
	const n = 20
	for i := range n {
		require.NoError(t, s.Append(t.Context(), []queue.PushItem{item(i)}))
	}
	require.NoError(t, s.Close())
	files := segmentFiles(t, dir)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)

	// Locate record 10 by decoding, flip a byte inside its body, cut the last record.
	offs := recordOffsets(t, data)
	require.Len(t, offs, n)
	data[offs[10]+frameHeaderSize+5] ^= 0x20
	data = data[:len(data)-3]
	require.NoError(t, os.WriteFile(files[0], data, 0o644))

	s = open(t, dir)
	st := s.Stats()
	require.EqualValues(t, n-2, st.PendingRecords)
	require.EqualValues(t, 2, st.CorruptRegions, "the flipped record and the torn tail")
	got := drainAll(t, s, 7)
	var want []string
	for i := range n {
		if i != 10 && i != n-1 {
			want = append(want, item(i).TransactionID)
		}
	}
	require.Equal(t, want, got)
	require.Empty(t, segmentFiles(t, dir))
	kept, err := filepath.Glob(filepath.Join(dir, deadDir, "*.corrupt"))
	require.NoError(t, err)
	require.Len(t, kept, 1, "the damaged file is kept for inspection")
	t.Logf("corruption: %d records written, %d replayed, %d corrupt regions reported", n, len(got), st.CorruptRegions)
}

func recordOffsets(t *testing.T, data []byte) []int64 {
	t.Helper()
	var offs []int64
	rd := newFrameReader(readerAt(data), headerSize, int64(len(data)))
	for {
		fr, c, err := rd.next()
		if err != nil {
			return offs
		}
		require.Nil(t, c)
		offs = append(offs, fr.Offset)
	}
}

type readerAt []byte

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r)) {
		return 0, errors.New("eof")
	}
	n := copy(p, r[off:])
	if n < len(p) {
		return n, errors.New("eof")
	}
	return n, nil
}

func TestSpoolQuarantine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir)
	require.NoError(t, s.Append(t.Context(), []queue.PushItem{item(1), item(2)}))
	b, err := s.Peek(10)
	require.NoError(t, err)
	require.NoError(t, s.Quarantine(b.Records[0], "queue \"orders\" is full"))
	s.Commit(b, 2)
	st := s.Stats()
	require.EqualValues(t, 1, st.QuarantinedRecords)
	require.EqualValues(t, 1, st.DeadFiles)
	require.NoError(t, s.Close())

	// The dead-letter file is framed like a segment and carries the reason.
	dead, err := filepath.Glob(filepath.Join(dir, deadDir, deadPrefix+"*"))
	require.NoError(t, err)
	require.Len(t, dead, 1)
	data, err := os.ReadFile(dead[0])
	require.NoError(t, err)
	rd := newFrameReader(readerAt(data), headerSize, int64(len(data)))
	fr, c, err := rd.next()
	require.NoError(t, err)
	require.Nil(t, c)
	var ev event
	require.NoError(t, json.Unmarshal(fr.Body, &ev))
	require.Equal(t, "tx-0001", ev.TransactionID)
	require.Equal(t, `queue "orders" is full`, ev.Error)

	s = open(t, dir)
	require.EqualValues(t, 1, s.Stats().QuarantinedRecords, "counted again at open")
}

// TestSpoolReplaysUpstreamFiles reads upstream Queen's failover files (main
// directory and failed/, .buf and .buf.tmp) before queen's own segments.
func TestSpoolReplaysUpstreamFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir)
	require.NoError(t, s.Append(t.Context(), []queue.PushItem{item(7)}))
	require.NoError(t, s.Close())

	ev := func(id string) string {
		return `{"queue":"orders","partition":"Default","payload":{"x":1},"failover":true,"transactionId":"` + id + `"}`
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, upstreamDir), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "failover_0190a.buf"), upstreamFile(ev("u1"), ev("u2")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, upstreamDir, "failover_0190b.buf"), upstreamFile(ev("u3")), 0o644))
	torn := upstreamFile(ev("u4"), ev("u5"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "failover_0190c.buf.tmp"), torn[:len(torn)-2], 0o644))

	s = open(t, dir)
	st := s.Stats()
	require.EqualValues(t, 5, st.PendingRecords)
	require.Equal(t, 3, st.Upstream)
	require.EqualValues(t, 1, st.CorruptRegions)
	require.Equal(t, []string{"u1", "u2", "u3", "u4", "tx-0007"}, drainAll(t, s, 2))
	left, _ := filepath.Glob(filepath.Join(dir, "failover_*"))
	require.Empty(t, left)
}

// TestSpoolDiskFull fills a tiny filesystem: appends fail with an error once it is
// full, and nothing of a failed append is ever replayed.
func TestSpoolDiskFull(t *testing.T) {
	t.Parallel()
	dir := FullDiskDir(t, 64<<10)
	s := open(t, dir)
	payload := json.RawMessage(`{"pad":"` + strings.Repeat("x", 3000) + `"}`)
	var ok []string
	var failed int
	for i := 0; failed < 5; i++ {
		require.Less(t, i, 1000, "a 64 KiB filesystem never filled up")
		it := item(i)
		it.Payload = payload
		if err := s.Append(t.Context(), []queue.PushItem{it}); err != nil {
			failed++
			continue
		}
		require.Zero(t, failed, "an append succeeded after one failed on a full disk")
		ok = append(ok, it.TransactionID)
	}
	st := s.Stats()
	require.False(t, st.Healthy)
	require.Contains(t, st.LastError, "no space left")
	require.ErrorContains(t, s.Recheck(), "no space left", "the probe while the disk is full")
	require.False(t, s.Stats().Healthy)
	require.EqualValues(t, len(ok), st.PendingRecords)
	require.Equal(t, ok, drainAll(t, s, 100), "exactly the acknowledged records are replayed")
	require.NoError(t, s.Recheck(), "the drain freed the disk")
	require.True(t, s.Stats().Healthy, "healthy again without waiting for an append")
	t.Logf("disk full: %d appends acknowledged, then %d refused", len(ok), failed)
}

// FullDiskDir returns a directory on a tmpfs of size bytes (root: mount -t tmpfs),
// unmounted when the test ends.
func FullDiskDir(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; the read-only directory variant runs in the daemon tests")
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0755", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// TestSpoolCommitIsCumulative commits one batch record by record (the drainer's
// poison path): counts and the per-partition index move by one record each time.
func TestSpoolCommitIsCumulative(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir)
	a := queue.PushItem{Queue: "q", Partition: "a", TransactionID: "1"}
	b := queue.PushItem{Queue: "q", TransactionID: "2"} // Default partition
	require.False(t, s.HasPending([]queue.PushItem{a}))
	require.NoError(t, s.Append(t.Context(), []queue.PushItem{a, b, a}))
	require.True(t, s.HasPending([]queue.PushItem{{Queue: "q", Partition: "Default"}}))
	require.False(t, s.HasPending([]queue.PushItem{{Queue: "q", Partition: "c"}, {Queue: "r", Partition: "a"}}))

	batch, err := s.Peek(10)
	require.NoError(t, err)
	require.Len(t, batch.Records, 3)
	for i := 1; i <= 3; i++ {
		s.Commit(batch, i)
		s.Commit(batch, i) // repeating a commit changes nothing
		st := s.Stats()
		require.EqualValues(t, 3-i, st.PendingRecords, "after committing %d", i)
		require.EqualValues(t, i, st.Drained)
	}
	require.False(t, s.HasPending([]queue.PushItem{a, b}))

	// The index is rebuilt from the files at open.
	require.NoError(t, s.Append(t.Context(), []queue.PushItem{b}))
	require.NoError(t, s.Close())
	s = open(t, dir)
	require.True(t, s.HasPending([]queue.PushItem{b}))
	require.False(t, s.HasPending([]queue.PushItem{a}))
}

// TestSpoolMaxBytes: appends beyond QUEEN_SPOOL_MAX_BYTES fail with ErrFull and
// leave nothing behind; draining makes room again, and Recheck sees it before any
// append does.
func TestSpoolMaxBytes(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), func(o *Options) { o.MaxBytes = 2000 })
	var ok int
	for i := range 100 {
		err := s.Append(t.Context(), []queue.PushItem{item(i)})
		if err != nil {
			require.ErrorIs(t, err, ErrFull)
			break
		}
		ok++
	}
	require.Positive(t, ok)
	require.Less(t, ok, 100)
	st := s.Stats()
	require.EqualValues(t, ok, st.PendingRecords)
	require.False(t, st.Healthy)
	require.ErrorIs(t, s.Recheck(), ErrFull, "still full")
	require.Len(t, drainAll(t, s, 100), ok)
	require.NoError(t, s.Recheck(), "room again once drained")
	require.True(t, s.Stats().Healthy)
	require.NoError(t, s.Append(t.Context(), []queue.PushItem{item(0)}), "room again once drained")
	require.True(t, s.Stats().Healthy)
}

func TestCheckDirRefusesAPathThroughAFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	file := filepath.Join(root, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))

	require.NoError(t, CheckDir(root))
	require.NoError(t, CheckDir(filepath.Join(root, "new", "deeper")), "missing directories are created by Open")
	require.ErrorContains(t, CheckDir(file), file+" exists and is not a directory")
	err := CheckDir(filepath.Join(file, "buffers", "x"))
	require.ErrorContains(t, err, file+" is not a directory, so "+filepath.Join(file, "buffers", "x")+" cannot be created")
	require.Error(t, CheckDir(""))

	// Open fails on the same paths, which is what the check predicts.
	_, err = Open(Options{Dir: filepath.Join(file, "buffers")})
	require.Error(t, err)
}
