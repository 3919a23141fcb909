package spool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/queenmq/queen/internal/queue"
)

// Requeue gives the quarantined records whose reason retry accepts back to the spool,
// to be replayed like any other, and leaves the rest in their dead-letter files. It
// serves records an earlier release quarantined for a reason that was not theirs
// (the database read-only during a failover, a missing privilege): call it after
// Open, before the drainer starts. A requeued record is appended (fsynced) before its
// dead-letter file is rewritten without it, so a crash in between replays it twice at
// worst, which the transaction id makes harmless. Dead-letter files with corrupt
// regions are left as they are. It returns the records requeued.
func (s *Spool) Requeue(ctx context.Context, retry func(reason string) bool) (int, error) {
	paths, err := filepath.Glob(filepath.Join(s.dir, deadDir, deadPrefix+"*"+segSuffix))
	if err != nil {
		return 0, fmt.Errorf("spool: list dead-letter files: %w", err)
	}
	slices.Sort(paths) // named by time: the oldest first
	total := 0
	for _, p := range paths {
		n, err := s.requeueFile(ctx, p, retry)
		total += n
		if err != nil {
			return total, err
		}
	}
	if total > 0 {
		s.deadMu.Lock()
		s.deadRecords, s.deadFiles, s.deadBytes = 0, 0, 0
		s.scanDead()
		s.deadMu.Unlock()
	}
	return total, nil
}

// requeueFile requeues the records of one dead-letter file that retry accepts.
func (s *Spool) requeueFile(ctx context.Context, path string, retry func(reason string) bool) (int, error) {
	s.deadMu.Lock()
	current := s.dead != nil && s.dead.Name() == path
	s.deadMu.Unlock()
	if current {
		return 0, nil // this run's own file: its records were judged by this release
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("spool: read %s: %w", filepath.Base(path), err)
	}
	if len(data) < headerSize || !bytes.Equal(data[:headerSize], segmentHeader[:]) {
		return 0, nil
	}
	var (
		items []queue.PushItem
		kept  = slices.Clone(segmentHeader[:])
		rd    = newFrameReader(bytes.NewReader(data), headerSize, int64(len(data)))
	)
	for {
		fr, c, err := rd.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("spool: read %s: %w", filepath.Base(path), err)
		}
		if c != nil {
			s.logger.Warn("spool: dead-letter file has a corrupt region; its records are not requeued",
				"file", filepath.Join(deadDir, filepath.Base(path)), "offset", c.Offset)
			return 0, nil
		}
		var why struct {
			Error string `json:"error"`
		}
		it, _, derr := decodeEvent(fr.Body)
		if derr != nil || json.Unmarshal(fr.Body, &why) != nil || !retry(why.Error) {
			kept = append(kept, data[fr.Offset:fr.End]...)
			continue
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return 0, nil
	}
	if err := s.Append(ctx, items); err != nil {
		return 0, fmt.Errorf("spool: requeue %d records of %s: %w", len(items), filepath.Base(path), err)
	}
	if err := rewriteDead(path, kept); err != nil {
		return len(items), err
	}
	s.logger.Info("spool: quarantined records requeued for replay: their reason was the database's, not theirs",
		"file", filepath.Join(deadDir, filepath.Base(path)), "records", len(items),
		"left", len(kept) > headerSize)
	return len(items), nil
}

// rewriteDead replaces a dead-letter file with kept (header and frames), or removes it
// when no record is left, durably.
func rewriteDead(path string, kept []byte) error {
	if len(kept) <= headerSize {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("spool: remove %s: %w", filepath.Base(path), err)
		}
		return syncDir(filepath.Dir(path))
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("spool: rewrite %s: %w", filepath.Base(path), err)
	}
	_, werr := f.Write(kept)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("spool: rewrite %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("spool: rewrite %s: %w", filepath.Base(path), err)
	}
	return syncDir(filepath.Dir(path))
}
