package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress is the status line of a long operation (bulk push, tail, DLQ retry,
// replay) on stderr. On a terminal it redraws one line in place, at most every
// 100 ms; with --progress on something else (a log, a test) it prints a plain line
// at most every second; otherwise it prints nothing. The final summary of done is
// printed in both visible modes.
type progress struct {
	w     io.Writer
	mode  progressMode
	every time.Duration

	mu sync.Mutex
	// last is when the line was last drawn; shown whether it is on screen (tty).
	last  time.Time
	shown bool
}

// progressMode is how a [progress] renders.
type progressMode int

const (
	progressOff progressMode = iota
	progressTTY
	progressPlain
)

// progress returns the progress line of this invocation.
func (a *app) progress() *progress {
	p := &progress{w: a.stderr}
	switch {
	case isTerminal(a.stderr) && a.env["TERM"] != "dumb":
		p.mode, p.every = progressTTY, 100*time.Millisecond
	case a.g.progress:
		p.mode, p.every = progressPlain, time.Second
	}
	return p
}

// update redraws the line with the formatted text, unless it was drawn less than
// the mode's interval ago.
func (p *progress) update(format string, args ...any) {
	if p.mode == progressOff {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	p.draw(fmt.Sprintf(format, args...))
}

// draw writes text in the current mode. p.mu is held.
func (p *progress) draw(text string) {
	if p.mode == progressTTY {
		fmt.Fprintf(p.w, "\r\x1b[K%s", text)
		p.shown = true
		return
	}
	fmt.Fprintln(p.w, text)
}

// clear erases the line on a terminal, before other output is written there.
func (p *progress) clear() {
	if p.mode != progressTTY {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
		p.last = time.Time{}
	}
}

// done erases the line and prints the final summary (when the mode is not off and
// the summary is not empty).
func (p *progress) done(format string, args ...any) {
	p.clear()
	if p.mode == progressOff || format == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}
