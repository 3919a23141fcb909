package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// cpuProfiler records a CPU profile of the broker child during each measured broker
// window, through the child's QUEEN_PPROF_ADDR listener (Options.CPUProfileDir). A
// profile that cannot be fetched or written is a warning, never a failed run.
type cpuProfiler struct {
	url     string // the child's /debug/pprof/profile
	dir     string
	seconds int // profile length: the window, rounded up, at least 1 s
	hc      *http.Client
	logf    func(format string, args ...any)
}

// newCPUProfiler creates dir and profiles the broker whose pprof listener is at
// pprofAddr for the length of window.
func newCPUProfiler(dir, pprofAddr string, window time.Duration, logf func(string, ...any)) (*cpuProfiler, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cpu profile directory: %w", err)
	}
	return &cpuProfiler{
		url:     "http://" + pprofAddr + "/debug/pprof/profile",
		dir:     dir,
		seconds: max(1, int(math.Ceil(window.Seconds()))),
		hc:      &http.Client{},
		logf:    logf,
	}, nil
}

// hook returns the window's atStart for the case name: it starts fetching a profile as
// the measured part begins, and its wait blocks until the profile is written, so that
// the next case's set-up (truncates, fills) stays out of it. A nil profiler returns nil.
func (p *cpuProfiler) hook(ctx context.Context, name string) func() (wait func()) {
	if p == nil {
		return nil
	}
	return func() func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			path := filepath.Join(p.dir, name+".pprof")
			if err := p.fetch(ctx, path); err != nil {
				p.logf("warning: CPU profile of %s: %v", name, err)
				return
			}
			p.logf("CPU profile of %s written to %s", name, path)
		}()
		return func() { <-done }
	}
}

// fetch asks for a profile of p.seconds and writes it to path.
func (p *cpuProfiler) fetch(ctx context.Context, path string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(p.seconds)*time.Second+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"?seconds="+strconv.Itoa(p.seconds), nil)
	if err != nil {
		return err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return fmt.Errorf("read: %w", err)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s: %s", resp.Status, data)
	case len(data) == 0:
		return errors.New("empty profile")
	}
	return os.WriteFile(path, data, 0o644)
}
