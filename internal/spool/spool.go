package spool

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of [Options].
const (
	DefaultEventsPerSegment = 10000
	DefaultMaxSegmentBytes  = 64 << 20
)

// File and directory names inside the spool directory.
const (
	lockName    = ".lock"
	posName     = "drain.pos"
	deadDir     = "dead"
	upstreamDir = "failed" // upstream's failed-file directory
	segPrefix   = "segment-"
	segSuffix   = ".spool"
	deadPrefix  = "quarantine-"
)

var (
	// ErrClosed is returned by Append after Close.
	ErrClosed = errors.New("spool: closed")
	// ErrFull is returned by Append when the spool holds Options.MaxBytes.
	ErrFull = errors.New("spool: full (QUEEN_SPOOL_MAX_BYTES reached)")
	// ErrLocked means another process holds the spool directory.
	ErrLocked = errors.New("spool: directory is in use by another process (replicas must not share FILE_BUFFER_DIR)")
)

// Options configures [Open].
type Options struct {
	// Dir is the spool directory (FILE_BUFFER_DIR); it is created if missing.
	Dir string
	// EventsPerSegment starts a new segment after this many records
	// (FILE_BUFFER_EVENTS_PER_FILE); 0 means DefaultEventsPerSegment.
	EventsPerSegment int
	// MaxSegmentBytes starts a new segment once one is this large; 0 means
	// DefaultMaxSegmentBytes.
	MaxSegmentBytes int64
	// MaxBytes bounds the bytes of all spool files (QUEEN_SPOOL_MAX_BYTES): an append
	// beyond it fails with ErrFull. 0 means no bound but the disk.
	MaxBytes int64
	// Logger receives corruption reports and quarantines; nil discards.
	Logger *slog.Logger
	// NowFunc stamps records; nil means time.Now.
	NowFunc func() time.Time
}

// Spool is an append-only, fsynced, CRC-framed log of push items, written while
// PostgreSQL cannot take them and drained by one reader ([Spool.Peek],
// [Spool.Commit]). Append is safe for concurrent use; Peek, Commit and Quarantine
// belong to a single drainer goroutine.
type Spool struct {
	dir    string
	opts   Options
	logger *slog.Logger
	lock   *os.File

	// mu guards everything below, and cond (on mu) wakes appenders waiting for a
	// group fsync. Lock order: mu before deadMu.
	mu     sync.Mutex
	cond   *sync.Cond
	closed bool
	segs   []*segment // pending segments, oldest first; the active one is last
	active *segment   // the segment appends go to, nil until the next append
	// nextSeq numbers the next segment file.
	nextSeq uint64
	// written and synced count bytes appended and made durable since Open, over
	// every segment: an appender whose bytes end at gen g returns once synced ≥ g.
	// A failed fsync fails every appender up to failedGen.
	written, synced, failedGen uint64
	failErr                    error
	syncing                    bool
	// Write health: the last append error (nil once an append succeeds again).
	lastErr     error
	lastErrAt   time.Time
	fullNeed    int64 // the bytes of the append ErrFull refused last
	writeErrors uint64
	// Counters since Open.
	appended, drained uint64
	// corrupt counts the corrupt regions found (and their bytes) since Open,
	// including those of segments already drained.
	corruptRegions, corruptBytes int64
	// byPartition counts the pending records of each (queue, partition), so that a
	// push can follow its partition's spooled records instead of overtaking them.
	byPartition map[partitionKey]int
	// changed is closed (and replaced) whenever a commit retires records, for pushes
	// waiting for their partition to be replayed.
	changed chan struct{}

	deadMu sync.Mutex
	dead   *os.File
	// Quarantined records, files and bytes under dead/ (scanned at Open).
	deadRecords, deadFiles, deadBytes int64
}

// segment is one spool file: one of ours, or an upstream failover file.
type segment struct {
	name     string // path relative to the spool directory
	seq      uint64 // ours: the number in the name
	upstream bool
	created  time.Time

	// Sealed segments: size is the file size. The active segment: written is what
	// was appended, durable what an fsync covered; the drainer reads up to durable.
	size, written, durable int64
	records                int // intact records in [header, size) (active: written)
	durableRecords         int
	broken                 bool // a failed write could not be undone: never append again
	f                      *os.File

	// Drain progress: everything before doneOff is replayed, quarantined or skipped.
	doneOff     int64
	doneRecords int
	firstAt     time.Time // spool time of the first pending record, if known
	corrupt     map[int64]Corruption
	reader      *os.File // the drainer's read handle
}

// limit is how far the drainer may read. Callers hold s.mu.
func (g *segment) limit() int64 {
	if g.f != nil {
		return g.durable
	}
	return g.size
}

func (g *segment) pendingRecords() int {
	n := g.records
	if g.f != nil {
		n = g.durableRecords
	}
	return max(n-g.doneRecords, 0)
}

// Open opens (creating if needed) the spool in opts.Dir, takes its lock, and scans
// what a previous run left: its segments, upstream failover files
// (failover_*.buf[.tmp], also under failed/) and dead-letter files. Torn and corrupt
// records are logged and reported in [Spool.Stats].
func Open(opts Options) (*Spool, error) {
	if opts.Dir == "" {
		return nil, errors.New("spool: no directory")
	}
	if opts.EventsPerSegment <= 0 {
		opts.EventsPerSegment = DefaultEventsPerSegment
	}
	if opts.MaxSegmentBytes <= 0 {
		opts.MaxSegmentBytes = DefaultMaxSegmentBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.NowFunc == nil {
		opts.NowFunc = time.Now
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, deadDir), 0o755); err != nil {
		return nil, fmt.Errorf("spool: create %s: %w", opts.Dir, err)
	}
	lock, err := lockDir(filepath.Join(opts.Dir, lockName))
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, opts.Dir)
		}
		return nil, fmt.Errorf("spool: lock %s: %w", opts.Dir, err)
	}
	s := &Spool{dir: opts.Dir, opts: opts, logger: opts.Logger, lock: lock, nextSeq: 1,
		byPartition: make(map[partitionKey]int), changed: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	if err := s.load(); err != nil {
		_ = unlockDir(lock)
		return nil, err
	}
	return s, nil
}

// Dir returns the spool directory.
func (s *Spool) Dir() string { return s.dir }

// load finds and scans the files of a previous run.
func (s *Spool) load() error {
	posSeg, posOff := s.readPos()
	ours, err := filepath.Glob(filepath.Join(s.dir, segPrefix+"*"+segSuffix))
	if err != nil {
		return fmt.Errorf("spool: list: %w", err)
	}
	var segs []*segment
	for _, path := range ours {
		base := filepath.Base(path)
		seq, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(base, segPrefix), segSuffix), 16, 64)
		if err != nil {
			s.logger.Warn("spool: ignoring a file with an unexpected name", "file", base)
			continue
		}
		s.nextSeq = max(s.nextSeq, seq+1)
		segs = append(segs, &segment{name: base, seq: seq})
	}
	// Upstream files: the main directory and failed/, in file-name order taken
	// together (upstream's replay order), before ours: they are older.
	var up []*segment
	for _, pattern := range []string{"failover_*.buf", "failover_*.buf.tmp"} {
		for _, dir := range []string{"", upstreamDir} {
			paths, _ := filepath.Glob(filepath.Join(s.dir, dir, pattern))
			for _, p := range paths {
				rel, _ := filepath.Rel(s.dir, p)
				up = append(up, &segment{name: rel, upstream: true})
			}
		}
	}
	// Numbers never go back, even once every segment is gone: a new segment is
	// numbered after the clock (Unix nanoseconds) as well as after the existing ones,
	// so no name is reused and a stale drain.pos can never point into a new file.
	s.nextSeq = max(s.nextSeq, uint64(max(s.opts.NowFunc().UnixNano(), 0)))
	slices.SortFunc(up, func(a, b *segment) int { return cmp.Compare(filepath.Base(a.name), filepath.Base(b.name)) })
	slices.SortFunc(segs, func(a, b *segment) int { return cmp.Compare(a.seq, b.seq) })
	for _, g := range append(up, segs...) {
		keep, err := s.scan(g, posSeg, posOff)
		if err != nil {
			return err
		}
		if keep {
			s.segs = append(s.segs, g)
		}
	}
	s.scanDead()
	if st := s.statsLocked(); st.PendingRecords > 0 || st.CorruptRegions > 0 {
		s.logger.Info("spool: records left by a previous run will be replayed", "dir", s.dir,
			"records", st.PendingRecords, "bytes", st.PendingBytes, "files", st.Segments,
			"corrupt_regions", st.CorruptRegions)
	}
	return nil
}

// scan reads segment g from its drain position to the end, counting its records and
// corrupt regions. It reports whether g has anything left to drain or report.
func (s *Spool) scan(g *segment, posSeg string, posOff int64) (bool, error) {
	path := filepath.Join(s.dir, g.name)
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("spool: open %s: %w", g.name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("spool: stat %s: %w", g.name, err)
	}
	g.size, g.created = fi.Size(), fi.ModTime()
	var start int64
	if !g.upstream {
		var h [headerSize]byte
		if g.size < headerSize {
			// Created but never written to: no record in it was ever acknowledged.
			s.logger.Warn("spool: removing a segment without a complete header", "file", g.name, "bytes", g.size)
			return false, os.Remove(path)
		}
		if err := readFull(f, h[:], 0); err != nil {
			return false, err
		}
		if h != segmentHeader {
			s.logger.Error("spool: segment has an unknown header; moved aside, not replayed", "file", g.name)
			return false, s.moveToDead(g.name, g.name+".unknown")
		}
		start = headerSize
	}
	if g.name == posSeg && posOff > start && posOff <= g.size {
		start = posOff
	}
	g.doneOff = start
	rd := g.newReader(f, start, g.size)
	for {
		fr, c, err := rd.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return false, err
		}
		if c != nil {
			s.noteCorruptionLocked(g, *c)
			continue
		}
		if it, at, err := decodeEvent(fr.Body); err == nil {
			s.byPartition[keyOf(it)]++
			if g.records == 0 && !at.IsZero() {
				g.firstAt = at
			}
		}
		g.records++
	}
	if g.records == 0 && len(g.corrupt) == 0 {
		return false, s.finishFile(g)
	}
	return true, nil
}

func (g *segment) newReader(f *os.File, off, end int64) reader {
	if g.upstream {
		return newUpstreamReader(f, off, end)
	}
	return newFrameReader(f, off, end)
}

// scanDead counts the quarantined records and files under dead/.
func (s *Spool) scanDead() {
	entries, _ := os.ReadDir(filepath.Join(s.dir, deadDir))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		s.deadFiles++
		s.deadBytes += info.Size()
		if !strings.HasPrefix(e.Name(), deadPrefix) {
			continue
		}
		f, err := os.Open(filepath.Join(s.dir, deadDir, e.Name()))
		if err != nil {
			continue
		}
		rd := newFrameReader(f, headerSize, info.Size())
		for {
			_, c, err := rd.next()
			if err != nil {
				break
			}
			if c == nil {
				s.deadRecords++
			}
		}
		f.Close()
	}
}

// noteCorruptionLocked records a corrupt region of g (once per offset) and logs it.
// Callers hold s.mu (or own s exclusively, as load does).
func (s *Spool) noteCorruptionLocked(g *segment, c Corruption) {
	if g.corrupt == nil {
		g.corrupt = make(map[int64]Corruption)
	}
	if _, seen := g.corrupt[c.Offset]; seen {
		return
	}
	g.corrupt[c.Offset] = c
	s.corruptRegions++
	s.corruptBytes += c.Size
	s.logger.Warn("spool: skipping a corrupt region; the records around it are replayed",
		"file", g.name, "offset", c.Offset, "bytes", c.Size, "reason", c.Reason, "tail", c.Tail)
}

// Close fsyncs and closes the active segment, removes it if the drainer has
// replayed all of it, and releases the directory lock. Records not yet replayed
// stay on disk for the next Open.
func (s *Spool) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for s.syncing {
		s.cond.Wait()
	}
	var errs []error
	if g := s.active; g != nil {
		s.sealActiveLocked()
		if g.doneOff >= g.size {
			errs = append(errs, s.removeSegmentLocked(g))
		}
	}
	for _, g := range s.segs {
		if g.reader != nil {
			g.reader.Close()
			g.reader = nil
		}
	}
	errs = append(errs, syncDir(s.dir))
	s.mu.Unlock()

	s.deadMu.Lock()
	if s.dead != nil {
		errs = append(errs, s.dead.Sync(), s.dead.Close())
		s.dead = nil
	}
	s.deadMu.Unlock()
	errs = append(errs, unlockDir(s.lock))
	return errors.Join(errs...)
}

// removeSegmentLocked drops g from the pending list and deletes its file (a segment
// with corrupt regions is kept under dead/ as evidence instead).
func (s *Spool) removeSegmentLocked(g *segment) error {
	s.segs = slices.DeleteFunc(s.segs, func(x *segment) bool { return x == g })
	if g.reader != nil {
		g.reader.Close()
		g.reader = nil
	}
	if s.active == g {
		g.f.Close()
		g.f = nil
		s.active = nil
	}
	return s.finishFile(g)
}

// finishFile deletes a fully drained file, or moves it to dead/ when it had corrupt
// regions (what was skipped stays available for inspection).
func (s *Spool) finishFile(g *segment) error {
	if len(g.corrupt) > 0 {
		return s.moveToDead(g.name, filepath.Base(g.name)+".corrupt")
	}
	if err := os.Remove(filepath.Join(s.dir, g.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("spool: remove %s: %w", g.name, err)
	}
	return nil
}

func (s *Spool) moveToDead(name, deadName string) error {
	dst := filepath.Join(s.dir, deadDir, deadName)
	if err := os.Rename(filepath.Join(s.dir, name), dst); err != nil {
		return fmt.Errorf("spool: move %s to %s: %w", name, deadDir, err)
	}
	if info, err := os.Stat(dst); err == nil {
		s.deadMu.Lock()
		s.deadFiles++
		s.deadBytes += info.Size()
		s.deadMu.Unlock()
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("spool: fsync directory %s: %w", dir, err)
	}
	return nil
}
