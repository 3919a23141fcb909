package broker

import (
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/analytics"
	"github.com/queenmq/queen/internal/encryption"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/spool"
	"github.com/queenmq/queen/internal/store"
)

// Config holds the broker's tunables. SettingsConfig maps the settings to it (the
// defaults live in the settings table only); every field but Sealer, Spool,
// DefaultSubscriptionMode, the analytics periods and Push.Preferred/Hold is required.
type Config struct {
	DefaultTimeout          time.Duration
	MaxPopTimeout           time.Duration
	DefaultBatchSize        int
	MaxPopBatch             int
	MaxPushItems            int
	MaxAckItems             int
	DefaultSubscriptionMode string
	PopWaitInitialInterval  time.Duration
	PopWaitBackoffThreshold int
	PopWaitBackoffMultiple  float64
	PopWaitMaxInterval      time.Duration
	// Sealer encrypts payloads of queues with encryptionEnabled and decrypts
	// envelopes on reads; nil means no QUEEN_ENCRYPTION_KEY is configured.
	Sealer *encryption.Sealer
	// Instance names this broker in the analytics tables (worker_id) and the
	// replica list; SettingsConfig gives QUEEN_INSTANCE, or the hostname when unset.
	Instance string
	// Spool takes pushes while PostgreSQL is unreachable or pushes are paused (nil:
	// such pushes fail with 503). SpoolFlushInterval is the drain period and
	// SpoolMaxBatch the records replayed per insert.
	Spool              *spool.Spool
	SpoolFlushInterval time.Duration
	SpoolMaxBatch      int
	// AnalyticsFlushInterval is the activity recorder's flush period
	// (analytics.Config.FlushInterval; 0 = a minute).
	AnalyticsFlushInterval time.Duration
	// AnalyticsBucket is the width of the analytics buckets (analytics.Config.Bucket;
	// 0 = a minute).
	AnalyticsBucket time.Duration
	// Push sets how pushes share insert statements (see pushCombiner).
	Push PushBatching
	// PopAutopilotBatch is the batch the autopilot controller gives a pop that left
	// batch to it (QUEEN_POP_AUTOPILOT_BATCH; 0 = 100).
	PopAutopilotBatch int
	// ClaimAhead is how long a batch an ack claimed ahead waits for its consumer's
	// next pop (QUEEN_POP_CLAIM_AHEAD_MS; 0: acks claim nothing ahead). See claimahead.go.
	ClaimAhead time.Duration
}

// Broker runs queen's use cases against one store.
type Broker struct {
	cfg     Config
	store   *store.Store
	ids     *queue.IDGenerator
	waiters *waiters
	// ahead holds the batches acks claimed ahead for their consumers' next pops.
	ahead  *claimAhead
	wakeup *wakeup
	// autopilot sizes the claim width of pops that leave partitions to the broker.
	autopilot *autopilot
	// queueFlags caches per-queue settings the push path needs before SQL.
	queueFlags *queueFlags
	logger     *slog.Logger
	// analytics counts every request for the analytics tables; pause caches the
	// push/pop pause flags.
	analytics *analytics.Service
	pause     pause
	spooler   *spooler
	pushes    *pushCombiner
	// streams counts stream cycles and state reads for the metrics.
	streams streamStats
	// timers is the timer firing loop's state (timers_fire.go).
	timers timerLoop

	closeOnce sync.Once
	closing   chan struct{}
}

// New returns a broker over st with cfg as given: build cfg with SettingsConfig (the
// daemon) or DefaultConfig (tests), never from a zero Config. A required field left
// zero or negative is a programming error, and New panics naming it.
func New(cfg Config, st *store.Store, logger *slog.Logger) *Broker {
	cfg.mustValidate()
	b := &Broker{
		cfg:        cfg,
		store:      st,
		ids:        queue.NewIDGenerator(),
		waiters:    newWaiters(),
		ahead:      newClaimAhead(cfg.ClaimAhead),
		wakeup:     newWakeup(),
		autopilot:  newAutopilot(),
		queueFlags: newQueueFlags(queueCacheTTL),
		logger:     logger,
		closing:    make(chan struct{}),
		spooler:    newSpooler(cfg),
	}
	b.pushes = newPushCombiner(cfg.Push, b.store.MessageInsertBatch)
	b.analytics = analytics.New(analytics.Config{
		Hostname: hostname(), WorkerID: cfg.Instance, PID: os.Getpid(), ParkedFunc: b.waiters.parked,
		FlushInterval: cfg.AnalyticsFlushInterval, Bucket: cfg.AnalyticsBucket,
	}, st, logger)
	return b
}

// PushCombining reports how pushes shared insert statements (QUEEN_PUSH_*).
func (b *Broker) PushCombining() PushCombining { return b.pushes.stats() }

// PushPaths counts the push statements stored by the direct path and by the general
// one (see store.PushPaths).
func (b *Broker) PushPaths() (direct, general uint64) { return b.store.PushPaths() }

// AckPaths counts the ack batches applied by the direct path and by the general one
// (see store.AckPaths).
func (b *Broker) AckPaths() (direct, general uint64) { return b.store.AckPaths() }

// Analytics returns the service that records this broker's requests. The daemon
// runs it ([analytics.Service.Run]) to sample and flush; the HTTP layer reads its
// reports.
func (b *Broker) Analytics() *analytics.Service { return b.analytics }

// Config returns the effective broker configuration.
func (b *Broker) Config() Config { return b.cfg }

// Close answers every parked long-poll at once (empty), makes new long-polls
// return after their first attempt and gives back the batches acks claimed ahead.
// Used when the daemon drains on shutdown.
func (b *Broker) Close() {
	b.closeOnce.Do(func() { close(b.closing) })
	b.giveBackAllHeld()
}

// ParkedPolls returns the number of long-polls currently parked.
func (b *Broker) ParkedPolls() int { return b.waiters.count() }

// LongPollRechecks counts the claims parked long-polls ran: after a wake-up (a push, a
// notification) or after their re-check interval, and whether each found messages.
type LongPollRechecks struct {
	WokenFound, WokenEmpty, TimedFound, TimedEmpty uint64
}

// LongPollRechecks reports the claims this broker's parked long-polls ran.
func (b *Broker) LongPollRechecks() LongPollRechecks {
	ws := b.waiters
	return LongPollRechecks{WokenFound: ws.wokenFound.Load(), WokenEmpty: ws.wokenEmpty.Load(),
		TimedFound: ws.timedFound.Load(), TimedEmpty: ws.timedEmpty.Load()}
}

// OpenPayload returns the plaintext of an encrypted payload envelope, or p unchanged
// (no key configured, not an envelope, or not decryptable with this key).
func (b *Broker) OpenPayload(p []byte) []byte {
	if b.cfg.Sealer == nil || !encryption.LooksSealed(p) {
		return p
	}
	return b.cfg.Sealer.Open(p)
}

// Notify wakes the long-polls parked on queueName (after a commit elsewhere).
func (b *Broker) Notify(queueName string) { b.waiters.notify(queueName) }
