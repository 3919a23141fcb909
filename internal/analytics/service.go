package analytics

import (
	"log/slog"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/progress"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// Config names this process in the analytics tables and tells the sampler where the
// parked long-polls are.
type Config struct {
	// Hostname, WorkerID and PID name this process (the hostname, worker_id and pid
	// columns). WorkerID is the broker's instance name.
	Hostname string
	WorkerID string
	PID      int
	// ParkedFunc returns the long-polls parked right now, in total and per queue
	// name. It is called once a second and must not call back into the Service. nil
	// counts none.
	ParkedFunc func() (total int, byQueue map[string]int)
	// FlushInterval is how often Run writes what it recorded. The bucket width (the
	// default, also for 0 or more) writes each bucket once it has closed; shorter
	// also writes the open bucket's counts so far every FlushInterval and counts the
	// rest of that bucket afresh (the tables add the parts up), so tests and demos see
	// activity within seconds.
	FlushInterval time.Duration
	// Bucket is the width of the recorder's buckets and the finest bucket of the
	// series views (windows up to an hour). It must be positive and divide a minute
	// (QUEEN_ANALYTICS_BUCKET validates it); New panics otherwise.
	Bucket time.Duration
}

// Service records this process's activity, flushes it to the analytics tables and
// builds the status and analytics reports. The Record methods are safe for
// concurrent use and never block on I/O; the reports each run a few bounded queries.
type Service struct {
	store      *store.Store
	logger     *slog.Logger
	parkedFunc func() (int, map[string]int)
	rec        *recorder
	// flushEvery is Config.FlushInterval, at most the bucket width.
	flushEvery time.Duration
	// flushes counts the successful flushes, for Flushes.
	flushes progress.Signal

	// sampleMu serialises gauge sampling (Run and Flush) and guards the previous CPU
	// reading. Lock order: sampleMu, then whatever ParkedFunc locks, then the
	// recorder's mu; never the reverse.
	sampleMu sync.Mutex
	prevProc procState
	prevAt   time.Time
}

// New returns a service over st; totals count from now. logger must not be nil.
func New(cfg Config, st *store.Store, logger *slog.Logger) *Service {
	rec := newRecorder(cfg.Hostname, cfg.WorkerID, cfg.PID, time.Now(), cfg.Bucket)
	flushEvery := cfg.FlushInterval
	if flushEvery <= 0 || flushEvery > rec.width {
		flushEvery = rec.width
	}
	return &Service{
		store:      st,
		logger:     logger,
		parkedFunc: cfg.ParkedFunc,
		rec:        rec,
		flushEvery: flushEvery,
	}
}

// Flushes counts the flushes that succeeded, by Run's loop or by [Service.Flush],
// including those that found nothing to write; a failed one does not count. Each is
// advanced once the rows are in the tables, so a test waits on it for "the activity
// was written" and then reads the reports, instead of polling them. Only the service
// advances it.
func (s *Service) Flushes() *progress.Signal { return &s.flushes }

// parked returns the parked long-polls (0 and nil without a ParkedFunc).
func (s *Service) parked() (int, map[string]int) {
	if s.parkedFunc == nil {
		return 0, nil
	}
	return s.parkedFunc()
}

// RecordPush counts one /push request and the items it stored as new messages.
func (s *Service) RecordPush(now time.Time, results []queue.PushResult) {
	s.rec.recordPush(now, results)
}

// RecordPop counts one pop request and what it delivered: the lag of each message is
// now minus its createdAt. A failure other than the client leaving is a database
// error.
func (s *Service) RecordPop(now time.Time, req queue.PopRequest, res queue.PopResult, err error) {
	s.rec.recordPop(now, req, res, err)
}

// RecordAck counts one ack request: acks[i] was answered results[i]. Items that
// completed their message are successes; all others (negative acks, refused items)
// are failures.
func (s *Service) RecordAck(now time.Time, acks []queue.Ack, results []queue.AckResult) {
	s.rec.recordAck(now, acks, results)
}

// RecordTransaction counts one /transaction request; when it committed, its pushed
// messages and acks count too (without counting as push or ack requests).
func (s *Service) RecordTransaction(now time.Time, ops []queue.TxOp, res queue.TxResult, err error) {
	s.rec.recordTransaction(now, ops, res, err)
}

// RecordCycle counts a committed stream cycle: its stored sink messages as pushed
// messages of their queues and its ack as acks of the source queue.
func (s *Service) RecordCycle(now time.Time, c queue.StreamCycle, res queue.StreamCycleResult) {
	s.rec.recordCycle(now, c, res)
}

// RecordDBError counts a request that failed in the database; any other error
// (invalid input, client gone, not found, a refusal by the broker) is not counted.
func (s *Service) RecordDBError(now time.Time, err error) { s.rec.recordDBError(now, err) }
