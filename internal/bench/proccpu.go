package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU per message, by process. On a machine whose host takes a varying share of the
// CPU, a rate moves by a quarter between two windows of one build; the CPU time each
// process spent per message moves much less, and says where a message's cost goes.
// The bench reads it from /proc at the edges of every broker window: the broker (its
// child), PostgreSQL (every process of the server, when it runs on this machine) and
// queen-bench itself (the load generator).

// cpuSample is the CPU time (user + system) the three sides had used at one moment.
// hasBroker and hasPostgres are false where that side could not be read.
type cpuSample struct {
	broker, postgres, bench time.Duration
	hasBroker, hasPostgres  bool
}

// sub is the CPU time used between o and s.
func (s cpuSample) sub(o cpuSample) cpuSample {
	return cpuSample{broker: s.broker - o.broker, postgres: s.postgres - o.postgres, bench: s.bench - o.bench,
		hasBroker: s.hasBroker && o.hasBroker, hasPostgres: s.hasPostgres && o.hasPostgres}
}

// CPUPerMessage is the CPU time, in milliseconds, each side spent per message of a
// window; a side that could not be read is absent (nil).
type CPUPerMessage struct {
	Postgres *float64 `json:"postgres_ms"`
	Broker   *float64 `json:"broker_ms"`
	Bench    float64  `json:"bench_ms"`
}

// perMessage divides s over msgs messages; nil when there were none.
func (s cpuSample) perMessage(msgs int64) *CPUPerMessage {
	if msgs <= 0 {
		return nil
	}
	per := func(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond)/float64(msgs), 4) }
	c := &CPUPerMessage{Bench: per(s.bench)}
	if s.hasBroker {
		v := per(s.broker)
		c.Broker = &v
	}
	if s.hasPostgres {
		v := per(s.postgres)
		c.Postgres = &v
	}
	return c
}

// String renders c for the table's notes.
func (c *CPUPerMessage) String() string {
	part := func(name string, v *float64) string {
		if v == nil {
			return name + " -"
		}
		return fmt.Sprintf("%s %.3f", name, *v)
	}
	return fmt.Sprintf("CPU ms/msg: %s, %s, %s", part("PostgreSQL", c.Postgres), part("broker", c.Broker),
		part("queen-bench", &c.Bench))
}

// procTimes reads utime + stime of pid from /proc/<pid>/stat, and with children the
// time of its reaped children too (cutime + cstime); ok is false when there is no
// such process (or no /proc).
func procTimes(pid int, children bool) (d time.Duration, ppid int, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The fields after the parenthesised command name start at field 3 (state): ppid is
	// field 4, utime 14, stime 15, cutime 16, cstime 17.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 15 {
		return 0, 0, false
	}
	num := func(k int) int64 { v, _ := strconv.ParseInt(f[k], 10, 64); return v }
	ticks := num(11) + num(12)
	if children {
		ticks += num(13) + num(14)
	}
	return time.Duration(ticks) * time.Second / clockTicks, int(num(1)), true
}

// postgresProcs reads the CPU time of a PostgreSQL server on this machine: its
// postmaster's own and reaped children's, and that of every process it started and
// still runs (backends, autovacuum, the WAL writer …). A backend that exits between
// two samples moves from the second sum to the first when the postmaster reaps it.
type postgresProcs struct {
	postmaster int
}

// findPostgres finds the postmaster of the server db is connected to, through the
// parent of one of its backends; ok is false when that server is not on this machine
// (no such process, or not a postgres one).
func findPostgres(ctx context.Context, db *database) (postgresProcs, bool) {
	if db == nil {
		return postgresProcs{}, false
	}
	var backend int
	if err := db.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return postgresProcs{}, false
	}
	_, ppid, ok := procTimes(backend, false)
	if !ok || ppid <= 1 {
		return postgresProcs{}, false
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/comm")
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(comm)), "postgres") {
		return postgresProcs{}, false
	}
	return postgresProcs{postmaster: ppid}, true
}

// read sums the server's CPU time now.
func (p postgresProcs) read() (time.Duration, bool) {
	total, _, ok := procTimes(p.postmaster, true)
	if !ok {
		return 0, false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == p.postmaster {
			continue
		}
		if d, ppid, ok := procTimes(pid, false); ok && ppid == p.postmaster {
			total += d
		}
	}
	return total, true
}

// selfCPU is queen-bench's own CPU time.
func selfCPU() time.Duration {
	d, _, _ := procTimes(os.Getpid(), false)
	return d
}
