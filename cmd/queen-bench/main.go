// Command queen-bench measures queen's throughput, latency and footprint as ratios of
// what the same PostgreSQL allows (docs/benchmarks.md). It needs a cluster (PG_* as for
// the daemon, or QUEEN_TEST_DATABASE_URL; `make bench` starts a throwaway one) and the
// daemon binary (bin/queen, `make build`). With -url it measures a broker that is
// already running instead, through HTTP only, and needs neither.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/queenmq/queen/internal/bench"
	"github.com/queenmq/queen/internal/config"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("queen-bench", flag.ContinueOnError)
	output := fs.String("o", "table", "output: table, or json (one JSON object on the last line of stdout)")
	binary := fs.String("queen", "bin/queen", "the queen daemon binary to benchmark")
	quick := fs.Bool("quick", false, "smoke test: tiny windows and data sets, meaningless numbers")
	duration := fs.Duration("duration", 0, "measured window of each throughput case (default 5s; 200ms with -quick)")
	warmup := fs.Duration("warmup", 0, "unmeasured warm-up before each window (default 1s; 50ms with -quick)")
	producers := fs.Int("producers", 0, "concurrent producers (push) and raw insert connections (default 4)")
	consumers := fs.Int("consumers", 0, "concurrent consumers (pop+ack) and raw claim connections (default 4)")
	payload := fs.Int("payload", 0, "approximate payload size in bytes (default 100)")
	samples := fs.Int("latency-samples", 0, "long-poll wake-ups to measure (default 200; 5 with -quick)")
	only := fs.String("only", "", "comma-separated throughput cases to run (e.g. push_b100,popack_b100); default all")
	paced := fs.Float64("paced", 0, "share of the flat-out sustained rate that the paced mixed cases offer (default 0.5)")
	brokerURL := fs.String("url", "", "measure the broker at this base `URL` (e.g. http://127.0.0.1:6632) through HTTP only:\n"+
		"no broker started, no database, no raw ceilings, no footprint; every case gets its own queue,\n"+
		"deleted at the end when the broker supports DELETE /api/v1/resources/queues/{name}")
	token := fs.String("auth-token", "", "send `TOKEN` as Authorization: Bearer on every request (a broker with JWT_ENABLED)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the broker, taken during each measured broker window,\n"+
		"to `DIR`/<case>.pprof (e.g. push_b100.pprof); the broker serves it on QUEEN_PPROF_ADDR")
	rowCost := fs.Bool("rowcost", false, "instead of the broker's cases, measure what each part of a message's row costs\n"+
		"PostgreSQL (copies of queen.messages without the foreign key, without each index, ...); no broker runs")
	segments := fs.Bool("segments", false, "measure the segment prototype (many messages per row, raw SQL) beside today's raw\n"+
		"ceilings instead of the broker's cases; -only then takes seg_... cases")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if *output != "table" && *output != "json" {
		fmt.Fprintf(os.Stderr, "queen-bench: -o must be table or json, not %q\n", *output)
		return 2
	}
	var dsn string
	if *brokerURL == "" {
		var err error
		if dsn, err = clusterDSN(os.Environ()); err != nil {
			fmt.Fprintf(os.Stderr, "queen-bench: %v\n", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	rep, err := bench.Run(ctx, bench.Options{
		DSN: dsn, Binary: *binary, Environ: os.Environ(), Quick: *quick,
		Warmup: *warmup, Duration: *duration, Producers: *producers, Consumers: *consumers,
		PayloadBytes: *payload, LatencySamples: *samples, Log: os.Stderr, Only: splitList(*only),
		CPUProfileDir: *cpuProfile, URL: *brokerURL, AuthToken: *token, PacedFraction: *paced,
		RowCost: *rowCost, Segments: *segments,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "queen-bench: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "queen-bench: %s profile done in %s\n", rep.Profile, time.Since(start).Round(time.Second))
	if *output == "json" {
		_ = rep.WriteTable(os.Stderr)
		err = rep.WriteJSON(os.Stdout)
	} else {
		err = rep.WriteTable(os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "queen-bench: %v\n", err)
		return 1
	}
	return 0
}

// clusterDSN picks the cluster: PG_* variables, read exactly as the daemon reads them,
// when any is set; otherwise QUEEN_TEST_DATABASE_URL (scripts/pgtest.sh sets both).
func clusterDSN(environ []string) (string, error) {
	var pg []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, "PG_") {
			pg = append(pg, kv)
		}
	}
	if len(pg) > 0 {
		cfg, err := config.Load(pg)
		if err != nil {
			return "", err
		}
		return cfg.PGConnString(), nil
	}
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "QUEEN_TEST_DATABASE_URL="); ok && v != "" {
			return v, nil
		}
	}
	return "", errors.New("no database: set PG_HOST etc. (as for queen) or QUEEN_TEST_DATABASE_URL, or run `make bench`")
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
