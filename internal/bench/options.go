package bench

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Options configures a run. Either URL is set (a broker someone else runs), or DSN
// and Binary are (the run starts its own broker on a scratch database).
type Options struct {
	// DSN reaches a database on the cluster to benchmark; the run creates and drops
	// its own scratch database there (the role needs CREATEDB).
	DSN string
	// Binary is the queen daemon to run as a child process (bin/queen).
	Binary string
	// URL, when set, is the base URL of a running broker that speaks the HTTP API
	// (queen, or the original broker): the run starts no broker and opens no
	// database, measures the HTTP cases only (no raw ceilings, no footprint), gives
	// every case a queue of its own and deletes those queues at the end.
	URL string
	// AuthToken, when set, is sent as "Authorization: Bearer <token>" on every request.
	AuthToken string
	// Environ is passed to the broker, minus the PG_*, HOST, PORT, LOG_LEVEL and
	// FILE_BUFFER_DIR variables that the run sets itself.
	Environ []string
	// Quick shrinks every window and data set to a smoke test of a few seconds: the
	// numbers mean nothing, the code paths all run.
	Quick bool
	// Warmup and Duration bound each throughput window (defaults 1 s and 5 s).
	Warmup, Duration time.Duration
	// Producers and Consumers are the concurrent HTTP clients (and raw connections)
	// of the push, pop+ack and mixed cases (defaults 4 and 4).
	Producers, Consumers int
	// PayloadBytes is the approximate size of each message's JSON payload (default 100).
	PayloadBytes int
	// LatencySamples is the number of long-poll wake-ups measured (default 200).
	LatencySamples int
	// PacedFraction is the share of the flat-out sustained rate at which the paced
	// mixed cases push (default 0.5).
	PacedFraction float64
	// Only, when not empty, limits the throughput cases to these names (e.g.
	// push_b100, popack_b100_p1, mixed_b10_p100), for profiling one case; latency and
	// footprint always run.
	Only []string
	// CPUProfileDir, when set, makes the broker serve its profiling endpoints
	// (QUEEN_PPROF_ADDR on a free loopback port) and records a CPU profile of it
	// during each measured broker window (not the warm-up, not the raw ceilings) into
	// CPUProfileDir/<case>.pprof. A profile that cannot be fetched is a warning.
	CPUProfileDir string
	// RowCost, instead of the broker's cases, measures what each part of a message's
	// row costs PostgreSQL: the raw insert into copies of queen.messages without the
	// foreign key, without each secondary index, with the primary key only, and with
	// the other writes of a push (rowcost.go). No broker runs; Binary prints the schema.
	RowCost bool
	// Segments runs the segment prototype instead of the broker cases
	// (segment_cases.go): raw SQL only, today's raw ceilings beside a layout that
	// stores many messages per row. The broker is started (it applies the schema) but
	// takes no load; Only then names seg_… cases.
	Segments bool
	// Log receives progress lines (nil: discarded).
	Log io.Writer
}

func (o *Options) wants(name string) bool {
	return len(o.Only) == 0 || slices.Contains(o.Only, name)
}

// remote reports whether the run measures a broker at URL instead of its own.
func (o *Options) remote() bool { return o.URL != "" }

func (o *Options) validate() error {
	switch {
	case o.remote() && o.CPUProfileDir != "":
		return errors.New("bench: a CPU profile needs the broker the run starts itself (not -url)")
	case !o.remote() && (o.DSN == "" || o.Binary == ""):
		return errors.New("bench: DSN and Binary are required (or URL)")
	case o.remote() && o.RowCost:
		return errors.New("bench: -rowcost needs a database of the run's own (not -url)")
	case o.PacedFraction < 0 || o.PacedFraction > 1:
		return errors.New("bench: the paced fraction must be between 0 and 1")
	case o.Segments && o.remote():
		return errors.New("bench: the segment prototype needs a database of its own (not -url)")
	}
	known := o.caseNames()
	if o.Segments {
		known = o.segmentCaseNames()
	}
	for _, name := range o.Only {
		if !slices.Contains(known, name) {
			return fmt.Errorf("bench: no case %q (cases: %s)", name, strings.Join(known, " "))
		}
		if o.remote() && strings.HasPrefix(name, "http_raw_") {
			return fmt.Errorf("bench: %s needs a database of the run's own (not -url)", name)
		}
	}
	return nil
}

// caseNames lists the names Only accepts, in run order.
func (o *Options) caseNames() []string {
	var names []string
	for _, b := range pushBatches() {
		names = append(names, fmt.Sprintf("push_b%d", b))
		if slices.Contains(httpRawBatches(), b) {
			names = append(names, httpRawName(b))
		}
	}
	names = append(names, "push_b100_p1")
	for _, b := range manyProducerBatches() {
		names = append(names, fmt.Sprintf("push_b%d_c%d", b, manyProducers))
	}
	for _, n := range axisPartitions() {
		names = append(names, fmt.Sprintf("push_b10_p%d", n))
	}
	for _, c := range o.popCaseList() {
		names = append(names, c.name)
	}
	names = append(names, "raw_claim1_b100")
	for _, c := range o.mixedCaseList() {
		names = append(names, c.name)
	}
	return names
}

func (o *Options) defaults() {
	if o.Quick {
		o.Warmup = cmp.Or(o.Warmup, 50*time.Millisecond)
		o.Duration = cmp.Or(o.Duration, 200*time.Millisecond)
		o.LatencySamples = cmp.Or(o.LatencySamples, 5)
	}
	o.Warmup = cmp.Or(o.Warmup, time.Second)
	o.Duration = cmp.Or(o.Duration, 5*time.Second)
	o.Producers = cmp.Or(o.Producers, 4)
	o.Consumers = cmp.Or(o.Consumers, 4)
	o.PayloadBytes = cmp.Or(o.PayloadBytes, 100)
	o.LatencySamples = cmp.Or(o.LatencySamples, 200)
	o.PacedFraction = cmp.Or(o.PacedFraction, 0.5)
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// scaled returns the partition count of an axis case: n itself, or with -quick a
// shrunken one (100 stays, 10 000 becomes 1 000, 100 000 becomes 2 000), so that
// the whole -quick run stays within seconds; the case keeps its name.
func (o *Options) scaled(n int) int {
	if !o.Quick {
		return n
	}
	switch {
	case n <= 100:
		return n
	case n <= 10_000:
		return 1_000
	}
	return 2_000
}
