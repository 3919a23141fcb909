package cellsim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Report is what one simulation measured and found.
type Report struct {
	Config Config
	// PlacedPerCell is how many tenants the placement policy put in each cell.
	PlacedPerCell map[string]int
	// Moves are the moves run; MovesSkipped says why none (or fewer) ran.
	Moves        []MoveResult
	MovesSkipped string
	// Counts are the checker's totals; LostExamples names a few losses.
	Counts       Counts
	LostExamples []string
	// PushRetries are push attempts retried; PopErrors pops and acks answered with an
	// error (503 while a tenant was held, mostly).
	PushRetries, PopErrors int64
	Overhead               Overhead
	Placement              Placement
	// Notes are remarks on the run that break no guarantee.
	Notes []string
	// Setup, Load, Drain and Wall are the phases' wall times.
	Setup, Load, Drain, Wall time.Duration
}

// MovesDone counts the moves that ended done.
func (r *Report) MovesDone() int {
	n := 0
	for _, m := range r.Moves {
		if m.Phase == "done" {
			n++
		}
	}
	return n
}

// Problems lists every broken guarantee of the report; none is a pass.
func (r *Report) Problems() []string {
	var out []string
	c := r.Counts
	for _, v := range []struct {
		n    int
		what string
	}{
		{c.Lost, "lost"}, {c.Duplicated, "duplicated"}, {c.OutOfOrder, "out of order"},
		{c.Foreign, "delivered to another tenant"}, {c.Unpushed, "delivered without a push answered queued"},
	} {
		if v.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", v.n, v.what))
		}
	}
	for _, m := range r.Moves {
		if m.Phase != "done" {
			out = append(out, fmt.Sprintf("move of %s from %s to %s ended %s: %s", m.Tenant, m.From, m.To, m.Phase, m.Error))
		}
	}
	out = append(out, r.Placement.Misplaced...)
	out = append(out, r.Placement.Miscounted...)
	return out
}

// Markdown renders the report as the table of docs/scaling.md.
func (r *Report) Markdown() string {
	var b strings.Builder
	c := r.Counts
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, v) }
	b.WriteString("| | |\n|---|---:|\n")
	row("cells (brokers, PostgreSQL clusters)", fmt.Sprint(r.Config.Cells))
	row("tenants (placed per cell: "+placed(r.PlacedPerCell)+")", fmt.Sprint(r.Config.Tenants))
	moves := fmt.Sprintf("%d of %d done", r.MovesDone(), len(r.Moves))
	if r.MovesSkipped != "" {
		moves += " (skipped: " + r.MovesSkipped + ")"
	}
	row("moves under load", moves)
	row("messages pushed", fmt.Sprint(c.Pushed))
	row(fmt.Sprintf("messages consumed (acked, per group × %d groups)", len(r.Config.Groups)), fmt.Sprint(c.Consumed))
	row("deliveries", fmt.Sprint(c.Deliveries))
	row("lost", fmt.Sprint(c.Lost))
	row("duplicated (after an ack succeeded)", fmt.Sprint(c.Duplicated))
	row("redelivered (no ack known to have succeeded: lease expiry)", fmt.Sprint(c.Redelivered))
	row("out of order per (partition, group)", fmt.Sprint(c.OutOfOrder))
	row("delivered to another tenant", fmt.Sprint(c.Foreign))
	row("acks answered success false", fmt.Sprint(c.AckFailed))
	row("push attempts retried (503 during a move, transport)", fmt.Sprint(r.PushRetries))
	row("pops and acks answered an error", fmt.Sprint(r.PopErrors))
	var durs, pauses []time.Duration
	for _, m := range r.Moves {
		if m.Phase == "done" {
			durs = append(durs, m.Duration)
			pauses = append(pauses, time.Duration(m.PauseMs*float64(time.Millisecond)))
		}
	}
	row("move duration p50 / max", pair(percentile(durs, 50), maxOf(durs)))
	row("move pause (pauseMs) p50 / max", pair(percentile(pauses, 50), maxOf(pauses)))
	o := r.Overhead
	row(fmt.Sprintf("%s via the proxy, p50 / p99 (%d samples)", o.Request, o.Samples), pair(o.ProxyP50, o.ProxyP99))
	row("the same straight to the cell's broker, p50 / p99", pair(o.DirectP50, o.DirectP99))
	row("routing overhead (difference) p50 / p99", pair(o.OverheadP50, o.OverheadP99))
	row("tenants whose rows are outside their cell, or miscounted", fmt.Sprintf("%d, %d (%d moved tenants checked)",
		len(r.Placement.Misplaced), len(r.Placement.Miscounted), r.Placement.MovedChecked))
	for _, n := range r.Notes {
		if n != "" {
			row("note", n)
		}
	}
	row("wall time: setup / load / drain / total", fmt.Sprintf("%s / %s / %s / %s",
		r.Setup.Round(time.Second), r.Load.Round(time.Second), r.Drain.Round(time.Second), r.Wall.Round(time.Second)))
	return b.String()
}

func placed(m map[string]int) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	// default first, then cell-1, cell-2, … cell-10 in number order
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) && names[i] != DefaultCell && names[j] != DefaultCell {
			return len(names[i]) < len(names[j])
		}
		return names[i] == DefaultCell || (names[j] != DefaultCell && names[i] < names[j])
	})
	var ns []string
	for _, n := range names {
		ns = append(ns, fmt.Sprintf("%s %d", n, m[n]))
	}
	return strings.Join(ns, ", ")
}

func maxOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Max(ds)
}

func pair(a, b time.Duration) string {
	if a == 0 && b == 0 {
		return "—"
	}
	return ms(a) + " / " + ms(b)
}

// ms renders d in milliseconds with three significant digits.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f ms", f)
	case f >= 10:
		return fmt.Sprintf("%.1f ms", f)
	}
	return fmt.Sprintf("%.2f ms", f)
}
