package spool

import (
	"errors"
	"os"
)

// probeBytes is what the probe after a failed write writes: one filesystem block, so
// that a disk with no block left refuses it as it refused the records.
const probeBytes = 4096

// Recheck clears the mark a failed append left (Stats().Healthy false) once the spool
// can take records again, so that the broker need not wait for a push to find out: a
// spool that was full (QUEEN_SPOOL_MAX_BYTES) once the drain has freed room for the
// append it refused, and after
// a failed write or fsync once a probe file in the directory can be written, synced
// and removed. It returns nil when the spool is healthy (again), else why not. The
// probe runs without the spool's lock (a hung disk must not hold up Stats, which the
// metrics and the health checks read); the caller runs it at most every second or so.
func (s *Spool) Recheck() error {
	s.mu.Lock()
	last := s.lastErr
	switch {
	case s.closed:
		s.mu.Unlock()
		return ErrClosed
	case last == nil:
		s.mu.Unlock()
		return nil
	case errors.Is(last, ErrFull):
		// Only the cap refused it: no probe, only the room.
		if s.fileBytesLocked()+s.fullNeed > s.opts.MaxBytes {
			s.mu.Unlock()
			return last
		}
		s.lastErr = nil
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	if err := probeWrite(s.dir); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr == last { // an append that failed meanwhile keeps its own mark
		s.lastErr = nil
	}
	return s.lastErr
}

// probeWrite writes, syncs and removes a file of probeBytes in dir. Its name does not
// look like a segment's, so one left by a crash is never read as records.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, probeBytes))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
