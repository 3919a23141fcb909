package checker

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Config sizes a checker run. Zero fields take the values of [DefaultConfig].
type Config struct {
	// Queue is the queue the run uses (created by the run; it must not exist).
	Queue string
	// Producers push Messages messages in total, spread over Duration, in requests of
	// 1..PushBatch items, to Partitions partitions.
	Producers  int
	Messages   int
	Partitions int
	PushBatch  int
	Duration   time.Duration
	// Groups named consumer groups, plus queue mode unless NoQueueMode, each with
	// ConsumersPerGroup consumers spread over the brokers.
	Groups            int
	NoQueueMode       bool
	ConsumersPerGroup int
	// MaxBatch bounds a pop's batch, MaxPartitions its partitions (some pops ask for
	// more than one partition when it is above 1).
	MaxBatch      int
	MaxPartitions int
	// FailProbability is the chance that a consumer acks a message failed, and
	// AbandonProbability the chance it leaves a pop's lease to expire (half of it again
	// to stop acking in the middle of a batch).
	FailProbability    float64
	AbandonProbability float64
	// PoisonEvery: two consecutive messages in every PoisonEvery of each producer are
	// always acked failed by every other group, so they must end dead-lettered
	// (negative: none).
	PoisonEvery int
	// RetryLimit, RetryDelay (whole milliseconds; negative: 0) and LeaseTime (whole
	// seconds) configure the queue.
	RetryLimit int
	RetryDelay time.Duration
	LeaseTime  time.Duration
	// PopWait is the long-poll timeout of each pop.
	PopWait time.Duration
	// Restarts is how many times a broker is restarted while the producers run, one at
	// a time, spread evenly over Duration. By default each is abrupt
	// ([Cluster.Restart]) and they alternate between the brokers, starting with the
	// second.
	Restarts int
	// Rolling makes the restarts a rolling restart, as an upgrade does it: brokers 0,
	// 1, ..., N-1, 0, ... in turn, each stopped gracefully ([Cluster.RestartGraceful]),
	// except every KillEvery-th restart (counting from 1; 0: none), which is abrupt.
	// The restarts then leave the last Duration/(Restarts+2) free, and the producers
	// hold the messages of that last share until the restarts are over, so that every
	// restarted broker serves traffic again before the producers are done.
	Rolling   bool
	KillEvery int
	// Faults are database faults injected while the run goes on (a primary killed, a
	// switchover, a database cut off...), one at a time in order of At: a fault whose
	// At has passed when the previous one's Do returns starts at once. Each is logged
	// with the disruption pushes saw and the time until they were queued again
	// ([Report.FaultLog]); the drain does not end before the last one's Do returned.
	// Only pushes measure recovery: while a fault runs, the producers push the last
	// share of their messages (one in len(Faults)+1), and any message a producer
	// behind its pace sends past Duration, one at a time at a quarter of the pace, so
	// that faults running late are measured too.
	Faults []Fault
	// AllowBuffered accepts a push item answered "buffered" (written to a broker's
	// spool while the database was away) as pushed: it must then be delivered like a
	// queued one. Without it such an answer is a violation.
	AllowBuffered bool
	// Only503 makes every answer with a 5xx status other than 503 a violation of kind
	// "status" (503 says "retry later"; a 500 is a fault of the broker). Without it
	// such answers are retried and only counted ([Report.ServerErrors]).
	Only503 bool
	// TransactionProbability is the chance that a consumer acking one message at a
	// time completes it with POST /api/v1/transaction instead: the ack of the message
	// under its lease and the push of a follow-up message to the queue Queue+"-tx",
	// atomically (see [FollowUpID]). The follow-ups are read back after the drain and
	// checked against the transactions' answers.
	TransactionProbability float64
	// Quiet ends the drain when no group received anything for that long while the
	// pops were answered (a pop error or the end of a fault starts it over): that is
	// how a stuck group is found. DrainTimeout bounds a drain that goes on delivering,
	// which on a loaded machine (the race detector, other tests on two cores) can take
	// minutes; the messages a group still lacks then are reported lost.
	Quiet        time.Duration
	DrainTimeout time.Duration
	// Seed makes the consumers' and producers' choices repeatable (not their timing).
	Seed uint64
	// Logf receives progress lines (nil: none).
	Logf func(format string, args ...any)
}

// DefaultConfig is a small run: a few seconds of traffic, well under a minute with
// the race detector on two cores.
func DefaultConfig() Config {
	return Config{
		Queue:                  "checker",
		Producers:              4,
		Messages:               1000,
		Partitions:             8,
		PushBatch:              4,
		Duration:               5 * time.Second,
		Groups:                 2,
		ConsumersPerGroup:      3,
		MaxBatch:               5,
		MaxPartitions:          3,
		FailProbability:        0.05,
		AbandonProbability:     0.02,
		PoisonEvery:            100,
		TransactionProbability: 0.05,
		RetryLimit:             2,
		RetryDelay:             100 * time.Millisecond,
		LeaseTime:              time.Second,
		PopWait:                time.Second,
		Restarts:               2,
		DrainTimeout:           3 * time.Minute,
		Seed:                   1,
	}
}

// withDefaults fills zero fields from DefaultConfig and checks the result.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	def := func(v *int, dv int) {
		if *v == 0 {
			*v = dv
		}
	}
	defDur := func(v *time.Duration, dv time.Duration) {
		if *v == 0 {
			*v = dv
		}
	}
	if c.Queue == "" {
		c.Queue = d.Queue
	}
	def(&c.Producers, d.Producers)
	def(&c.Messages, d.Messages)
	def(&c.Partitions, d.Partitions)
	def(&c.PushBatch, d.PushBatch)
	def(&c.Groups, d.Groups)
	def(&c.ConsumersPerGroup, d.ConsumersPerGroup)
	def(&c.MaxBatch, d.MaxBatch)
	def(&c.MaxPartitions, d.MaxPartitions)
	def(&c.PoisonEvery, d.PoisonEvery)
	defDur(&c.Duration, d.Duration)
	defDur(&c.LeaseTime, d.LeaseTime)
	defDur(&c.PopWait, d.PopWait)
	defDur(&c.DrainTimeout, d.DrainTimeout)
	defDur(&c.RetryDelay, d.RetryDelay)
	c.RetryDelay = max(c.RetryDelay, 0)
	if c.Quiet == 0 {
		c.Quiet = 2*c.LeaseTime + 2*c.PopWait + time.Second
	}
	if c.Seed == 0 {
		c.Seed = d.Seed
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	var errs []error
	if c.Producers < 1 || c.Messages < c.Producers || c.Partitions < 1 || c.PushBatch < 1 {
		errs = append(errs, fmt.Errorf("need producers >= 1, messages >= producers, partitions >= 1, pushBatch >= 1"))
	}
	if c.Groups < 0 || (c.Groups == 0 && c.NoQueueMode) || c.ConsumersPerGroup < 1 {
		errs = append(errs, fmt.Errorf("need at least one group and one consumer per group"))
	}
	if c.LeaseTime < time.Second || c.LeaseTime%time.Second != 0 {
		errs = append(errs, fmt.Errorf("leaseTime must be whole seconds (got %s)", c.LeaseTime))
	}
	if c.Restarts < 0 || c.KillEvery < 0 {
		errs = append(errs, fmt.Errorf("need restarts >= 0 and killEvery >= 0"))
	}
	if c.RetryLimit < 0 || c.FailProbability < 0 || c.FailProbability >= 1 || c.AbandonProbability < 0 || c.AbandonProbability >= 1 ||
		c.TransactionProbability < 0 || c.TransactionProbability > 1 {
		errs = append(errs, fmt.Errorf("need retryLimit >= 0, fail and abandon probabilities in [0, 1), a transaction probability in [0, 1]"))
	}
	for i, f := range c.Faults {
		if f.Do == nil || f.Name == "" || f.At < 0 {
			errs = append(errs, fmt.Errorf("fault %d (%q): needs a name, a Do and At >= 0", i, f.Name))
		}
	}
	return c, errors.Join(errs...)
}

// followUpQueue is the queue of the transactions' follow-up messages.
func (c Config) followUpQueue() string { return c.Queue + "-tx" }

// groupNames returns the consumer groups of c: g1..gN, then queue mode.
func (c Config) groupNames() []string {
	var out []string
	for i := 1; i <= c.Groups; i++ {
		out = append(out, fmt.Sprintf("g%d", i))
	}
	if !c.NoQueueMode {
		out = append(out, queueModeGroup)
	}
	return out
}

// poison reports whether group g always fails the seq-th message of producer p:
// pairs of consecutive messages, at a different phase for each producer so that
// the pairs of all producers do not arrive at once.
func (c Config) poison(p, seq, g int) bool {
	return c.PoisonEvery > 0 && g%2 == 0 && (seq+37*p)%c.PoisonEvery <= 1
}

// Cluster is the set of brokers a run drives, all on one database.
type Cluster interface {
	// URLs returns each broker's base URL. A restarted broker keeps its URL.
	URLs() []string
	// Restart stops broker i abruptly (in-flight requests may fail or go unanswered),
	// keeps it down for a moment and starts a fresh broker on the same database and
	// URL, returning once it is ready.
	Restart(ctx context.Context, i int) error
	// RestartGraceful is Restart with the stop an operator's tools send (SIGTERM):
	// broker i stops accepting, answers its parked long-polls, finishes the requests
	// in flight and flushes its spool before it exits.
	RestartGraceful(ctx context.Context, i int) error
}
