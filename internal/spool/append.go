package spool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// partitionKey names a (queue, partition).
type partitionKey struct{ queue, partition string }

func keyOf(it queue.PushItem) partitionKey {
	p := it.Partition
	if p == "" {
		p = queue.DefaultPartition
	}
	return partitionKey{it.Queue, p}
}

// Append writes items as one group of records and returns once they are on stable
// storage (fsync; concurrent appends share one fsync). On error nothing of items is
// kept: a failed write or fsync is cut back, so a caller that reports the error
// never leaves a record behind that would be replayed. Items must carry their
// transaction id (replay deduplicates on it).
func (s *Spool) Append(ctx context.Context, items []queue.PushItem) error {
	if len(items) == 0 {
		return nil
	}
	now := s.opts.NowFunc()
	buf := make([]byte, 0, 256*len(items))
	for _, it := range items {
		body, err := encodeEvent(it, now)
		if err != nil {
			return err
		}
		if len(body) > MaxRecordBytes {
			return fmt.Errorf("spool: record of %d bytes for queue %q exceeds %d", len(body), it.Queue, MaxRecordBytes)
		}
		buf = appendFrame(buf, body)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	err := s.appendLocked(buf, len(items), now)
	if err != nil {
		s.lastErr, s.lastErrAt = err, now
		s.writeErrors++
		if errors.Is(err, ErrFull) {
			s.fullNeed = int64(len(buf))
		}
		return err
	}
	s.lastErr = nil
	s.appended += uint64(len(items))
	for _, it := range items {
		s.byPartition[keyOf(it)]++
	}
	return nil
}

// Changed returns a channel closed at the next commit: wait on it, then ask
// HasPending again (take the channel before asking, or a commit may be missed).
func (s *Spool) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// HasPending reports whether the spool holds records not yet replayed of any
// (queue, partition) that items go to. The broker spools a push to such a partition
// too, so that it is replayed after them and the partition keeps its push order.
func (s *Spool) HasPending(items []queue.PushItem) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byPartition) == 0 {
		return false
	}
	for _, it := range items {
		if s.byPartition[keyOf(it)] > 0 {
			return true
		}
	}
	return false
}

func (s *Spool) appendLocked(buf []byte, n int, now time.Time) error {
	if max := s.opts.MaxBytes; max > 0 && s.fileBytesLocked()+int64(len(buf)) > max {
		return ErrFull
	}
	g, err := s.writableLocked(int64(len(buf)))
	if err != nil {
		return err
	}
	off := g.written
	w, err := g.f.Write(buf)
	if err != nil {
		s.undoWriteLocked(g, off, w)
		return fmt.Errorf("spool: write %s: %w", g.name, err)
	}
	if g.records == g.doneRecords && g.firstAt.IsZero() {
		g.firstAt = now
	}
	g.written += int64(w)
	g.records += n
	s.written += uint64(w)
	return s.waitDurableLocked(s.written)
}

// fileBytesLocked is the size of the spool files not yet removed.
func (s *Spool) fileBytesLocked() int64 {
	var n int64
	for _, g := range s.segs {
		if g.f != nil {
			n += g.written
		} else {
			n += g.size
		}
	}
	return n
}

// writableLocked returns the active segment, sealing a full or broken one and
// creating a new one as needed. It may wait (releasing s.mu) for a running fsync,
// so it re-reads the state after every wait.
func (s *Spool) writableLocked(need int64) (*segment, error) {
	for {
		g := s.active
		if g == nil {
			return s.createSegmentLocked()
		}
		full := g.records >= s.opts.EventsPerSegment ||
			(g.written > headerSize && g.written+need > s.opts.MaxSegmentBytes)
		if !g.broken && !full {
			return g, nil
		}
		if s.syncing {
			s.cond.Wait()
			continue
		}
		s.sealActiveLocked()
	}
}

// createSegmentLocked creates the next segment file with its header, fsynced
// together with the directory entry before any record goes in.
func (s *Spool) createSegmentLocked() (*segment, error) {
	name := fmt.Sprintf("%s%016x%s", segPrefix, s.nextSeq, segSuffix)
	path := filepath.Join(s.dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("spool: create segment: %w", err)
	}
	s.nextSeq++
	fail := func(err error) (*segment, error) {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("spool: create segment %s: %w", name, err)
	}
	if _, err := f.Write(segmentHeader[:]); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := syncDir(s.dir); err != nil {
		return fail(err)
	}
	g := &segment{
		name: name, seq: s.nextSeq - 1, created: s.opts.NowFunc(), f: f,
		written: headerSize, durable: headerSize, doneOff: headerSize,
	}
	s.segs = append(s.segs, g)
	s.active = g
	return g, nil
}

// undoWriteLocked cuts a partly written group back to off. If that fails the
// segment is marked broken: it is sealed at its last durable size and never appended
// to again, so the partial group is never followed by acknowledged records.
func (s *Spool) undoWriteLocked(g *segment, off int64, n int) {
	if n <= 0 {
		return
	}
	if err := g.f.Truncate(off); err != nil {
		s.logger.Error("spool: cannot cut back a failed write; sealing the segment", "file", g.name, "err", err)
		g.broken = true
	}
}

// waitDurableLocked returns once the bytes up to gen are fsynced. The first waiter
// runs the fsync without the lock; later ones wait for it (group commit).
func (s *Spool) waitDurableLocked(gen uint64) error {
	for s.synced < gen {
		if s.failedGen >= gen {
			return s.failErr
		}
		if s.syncing {
			s.cond.Wait()
			continue
		}
		g := s.active
		if g == nil { // cannot happen: sealing syncs everything or fails it
			return errors.New("spool: unsynced records without an active segment")
		}
		target, size, recs := s.written, g.written, g.records
		s.syncing = true
		s.mu.Unlock()
		err := g.f.Sync()
		s.mu.Lock()
		s.syncing = false
		if err == nil {
			s.synced = max(s.synced, target)
			g.durable, g.durableRecords = size, recs
		} else {
			s.failSyncLocked(g, err)
		}
		s.cond.Broadcast()
	}
	return nil
}

// failSyncLocked handles a failed fsync of g: what it covered may or may not be on
// disk, so every appender not yet acknowledged fails and the file is cut back to its
// last durable size (the failed records are never replayed).
func (s *Spool) failSyncLocked(g *segment, err error) {
	s.failedGen = s.written
	s.failErr = fmt.Errorf("spool: fsync %s: %w", g.name, err)
	if terr := g.f.Truncate(g.durable); terr != nil {
		g.broken = true
	}
	g.written, g.records = g.durable, g.durableRecords
	s.logger.Error("spool: fsync failed; the pending appends were refused", "file", g.name, "err", err)
}

// sealActiveLocked makes the active segment read-only: it syncs what is left and
// closes the write handle. Callers hold s.mu with no fsync running (!s.syncing).
func (s *Spool) sealActiveLocked() {
	g := s.active
	if g == nil {
		return
	}
	if s.synced < s.written {
		if err := g.f.Sync(); err != nil {
			s.failSyncLocked(g, err)
		} else {
			s.synced = s.written
			g.durable, g.durableRecords = g.written, g.records
		}
		s.cond.Broadcast()
	}
	if err := g.f.Close(); err != nil {
		s.logger.Warn("spool: close segment", "file", g.name, "err", err)
	}
	g.f = nil
	g.size, g.records = g.durable, g.durableRecords
	s.active = nil
}
