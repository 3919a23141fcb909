package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// Record is one spooled push item handed to the drainer.
type Record struct {
	// Item is the push as it was spooled: queue, partition, payload (plaintext),
	// transaction id, trace id, producer subject. MessageID is empty.
	Item queue.PushItem
	// SpooledAt is when it was written (zero for upstream records).
	SpooledAt time.Time
	// Err is set when the record is intact but cannot be decoded as a push; the
	// drainer must quarantine it.
	Err error

	body []byte
	end  int64
}

// Batch is a run of consecutive records of one spool file, oldest first.
type Batch struct {
	Records   []Record
	seg       *segment
	end       int64 // offset after the last record or corrupt region read
	committed int   // records already committed (Commit is cumulative)
}

// Peek returns up to max of the oldest records not yet committed, all from one
// file, or nil when nothing is pending. It never returns an empty batch: files (or
// ranges) holding only corrupt bytes are skipped, and fully drained files removed,
// along the way. Peek does not consume anything; [Spool.Commit] does.
func (s *Spool) Peek(max int) (*Batch, error) {
	if max <= 0 {
		max = 1
	}
	for {
		s.mu.Lock()
		if len(s.segs) == 0 {
			s.mu.Unlock()
			return nil, nil
		}
		g := s.segs[0]
		start, limit, active := g.doneOff, g.limit(), g == s.active
		if start >= limit {
			var err error
			if !active {
				err = s.removeSegmentLocked(g)
			} else if s.synced == s.written && !s.syncing && g.written == g.durable {
				// Everything appended was replayed: retire the file; the next append
				// starts a new one.
				err = s.removeSegmentLocked(g)
			} else {
				s.mu.Unlock()
				return nil, nil
			}
			s.mu.Unlock()
			if err != nil {
				return nil, err
			}
			s.writePos(nil, 0)
			if active {
				return nil, nil
			}
			continue
		}
		rf := g.reader
		s.mu.Unlock()

		if rf == nil {
			f, err := os.Open(filepath.Join(s.dir, g.name))
			if err != nil {
				return nil, fmt.Errorf("spool: open %s: %w", g.name, err)
			}
			s.mu.Lock()
			g.reader, rf = f, f
			s.mu.Unlock()
		}
		b, err := s.read(g, rf, start, limit, max)
		if err != nil {
			return nil, err
		}
		if len(b.Records) > 0 {
			s.mu.Lock()
			if at := b.Records[0].SpooledAt; !at.IsZero() {
				g.firstAt = at
			}
			s.mu.Unlock()
			return b, nil
		}
		s.Commit(b, 0) // only corrupt bytes up to limit: skip them
	}
}

// read decodes up to max records of g from [start, limit).
func (s *Spool) read(g *segment, rf *os.File, start, limit int64, max int) (*Batch, error) {
	b := &Batch{seg: g, end: start}
	rd := g.newReader(rf, start, limit)
	for len(b.Records) < max {
		fr, c, err := rd.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if c != nil {
			s.mu.Lock()
			s.noteCorruptionLocked(g, *c)
			s.mu.Unlock()
			b.end = c.Offset + c.Size
			continue
		}
		it, at, derr := decodeEvent(fr.Body)
		b.Records = append(b.Records, Record{Item: it, SpooledAt: at, Err: derr, body: fr.Body, end: fr.End})
		b.end = fr.End
	}
	return b, nil
}

// Commit marks the first n records of b as done (replayed, or quarantined first;
// calls are cumulative: Commit(b, 2) after Commit(b, 1) adds one record),
// together with any corrupt bytes read after them when n is all of b. It persists
// the drain position; a file whose records are all done is removed. A crash between
// a replay and its Commit replays those records again, which is harmless:
// replay deduplicates on the transaction id.
func (s *Spool) Commit(b *Batch, n int) {
	if b == nil {
		return
	}
	n = min(max(n, 0), len(b.Records))
	s.mu.Lock()
	g := b.seg
	switch {
	case n == len(b.Records):
		g.doneOff = max(g.doneOff, b.end)
	case n > 0:
		g.doneOff = max(g.doneOff, b.Records[n-1].end)
	}
	from := b.committed
	if n > from {
		b.committed = n
		g.doneRecords += n - from
		s.drained += uint64(n - from)
	}
	for _, r := range b.Records[from:max(n, from)] {
		if r.Err != nil {
			continue
		}
		k := keyOf(r.Item)
		if s.byPartition[k] <= 1 {
			delete(s.byPartition, k)
		} else {
			s.byPartition[k]--
		}
	}
	if n > from {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	g.firstAt = time.Time{}
	if n < len(b.Records) {
		g.firstAt = b.Records[n].SpooledAt
	}
	off := g.doneOff
	s.mu.Unlock()
	s.writePos(g, off)
}

// Quarantine appends r to this run's dead-letter file under dead/, with reason in
// the record's "error" key, and fsyncs it. The drainer calls it for a record the
// database refuses for a reason other than being unavailable, then commits the
// record and goes on.
func (s *Spool) Quarantine(r Record, reason string) error {
	frame := appendFrame(nil, withError(r.body, reason))
	s.deadMu.Lock()
	defer s.deadMu.Unlock()
	if s.dead == nil {
		name := fmt.Sprintf("%s%s%s", deadPrefix, time.Now().UTC().Format("20060102T150405.000000000"), segSuffix)
		f, err := os.OpenFile(filepath.Join(s.dir, deadDir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("spool: create dead-letter file: %w", err)
		}
		if _, err := f.Write(segmentHeader[:]); err != nil {
			f.Close()
			return fmt.Errorf("spool: write dead-letter file: %w", err)
		}
		s.dead = f
		s.deadFiles++
		s.deadBytes += headerSize
	}
	if _, err := s.dead.Write(frame); err != nil {
		return fmt.Errorf("spool: write dead-letter file: %w", err)
	}
	if err := s.dead.Sync(); err != nil {
		return fmt.Errorf("spool: fsync dead-letter file: %w", err)
	}
	s.deadRecords++
	s.deadBytes += int64(len(frame))
	s.logger.Warn("spool: record quarantined to the dead-letter file", "queue", r.Item.Queue,
		"partition", r.Item.Partition, "transaction_id", r.Item.TransactionID, "reason", reason,
		"file", filepath.Join(deadDir, filepath.Base(s.dead.Name())))
	return nil
}

// position is the drain.pos file: how far the drainer got in one file. It is
// written after each commit without fsync: losing it only replays records again.
type position struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
}

// writePos records the drain position (g nil: none). Only the drainer calls it.
func (s *Spool) writePos(g *segment, off int64) {
	path := filepath.Join(s.dir, posName)
	if g == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.logger.Debug("spool: remove drain position", "err", err)
		}
		return
	}
	data, _ := json.Marshal(position{File: g.name, Offset: off})
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		s.logger.Debug("spool: write drain position", "err", err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		s.logger.Debug("spool: write drain position", "err", err)
	}
}

func (s *Spool) readPos() (string, int64) {
	data, err := os.ReadFile(filepath.Join(s.dir, posName))
	if err != nil {
		return "", 0
	}
	var p position
	if json.Unmarshal(data, &p) != nil {
		return "", 0
	}
	return p.File, p.Offset
}

// Stats is a snapshot of the spool.
type Stats struct {
	Dir string
	// PendingRecords and PendingBytes are what waits to be replayed, in Segments
	// files; OldestPending is the spool time of the oldest such record (zero when
	// none; an upstream file's modification time for its records).
	PendingRecords int64
	PendingBytes   int64
	Segments       int
	OldestPending  time.Time
	// Upstream counts pending upstream failover files.
	Upstream int
	// QuarantinedRecords are the records in dead-letter files; DeadFiles and
	// DeadBytes count everything under dead/ (also corrupt segments kept as evidence).
	QuarantinedRecords int64
	DeadFiles          int64
	DeadBytes          int64
	// CorruptRegions and CorruptBytes count the torn or corrupt ranges skipped since
	// Open (including those found when Open scanned the directory).
	CorruptRegions int64
	CorruptBytes   int64
	// Appended and Drained count records since Open; WriteErrors counts failed
	// appends.
	Appended, Drained uint64
	WriteErrors       uint64
	// Healthy is false while the last append failed; LastError says why.
	Healthy     bool
	LastError   string
	LastErrorAt time.Time
}

// Stats returns a snapshot (no I/O).
func (s *Spool) Stats() Stats {
	s.mu.Lock()
	st := s.statsLocked()
	s.mu.Unlock()
	s.deadMu.Lock()
	st.QuarantinedRecords, st.DeadFiles, st.DeadBytes = s.deadRecords, s.deadFiles, s.deadBytes
	s.deadMu.Unlock()
	return st
}

func (s *Spool) statsLocked() Stats {
	st := Stats{
		Dir: s.dir, Appended: s.appended, Drained: s.drained, WriteErrors: s.writeErrors,
		CorruptRegions: s.corruptRegions, CorruptBytes: s.corruptBytes, Healthy: s.lastErr == nil,
	}
	if s.lastErr != nil {
		st.LastError, st.LastErrorAt = s.lastErr.Error(), s.lastErrAt
	}
	for _, g := range s.segs {
		n := g.pendingRecords()
		if n == 0 {
			continue
		}
		st.Segments++
		if g.upstream {
			st.Upstream++
		}
		st.PendingRecords += int64(n)
		st.PendingBytes += g.limit() - g.doneOff
		at := g.firstAt
		if at.IsZero() {
			at = g.created // upstream records carry no time: the file's
		}
		if !at.IsZero() && (st.OldestPending.IsZero() || at.Before(st.OldestPending)) {
			st.OldestPending = at
		}
	}
	return st
}
