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

// Config holds the broker's tunables (taken from config.Config by the daemon).
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
	// QueueCacheTTL bounds how long a queue's encryption flag is cached (default 5 s).
	QueueCacheTTL time.Duration
	// Instance names this broker in the analytics tables (worker_id); default the
	// hostname.
	Instance string
	// Spool takes pushes while PostgreSQL is unreachable or push maintenance mode is
	// on (nil: such pushes fail with 503). SpoolFlushInterval is the drain period
	// (default 100 ms) and SpoolMaxBatch the records replayed per insert (default 100).
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
}

// Broker runs queen's use cases against one store.
type Broker struct {
	cfg     Config
	store   *store.Store
	ids     *queue.IDGenerator
	waiters *waiters
	wakeup  *wakeup
	// queueFlags caches per-queue settings the push path needs before SQL.
	queueFlags *queueFlags
	logger     *slog.Logger
	// analytics counts every request for the analytics tables; maint caches the
	// maintenance flags.
	analytics *analytics.Service
	maint     maintenance
	spooler   *spooler
	pushes    *pushCombiner
	// streams counts stream cycles and state reads for the metrics.
	streams streamStats

	closeOnce sync.Once
	closing   chan struct{}
}

// New returns a broker over st. Zero config values take upstream defaults.
func New(cfg Config, st *store.Store, logger *slog.Logger) *Broker {
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = 30 * time.Second
	}
	if cfg.MaxPopTimeout <= 0 {
		cfg.MaxPopTimeout = 120 * time.Second
	}
	if cfg.DefaultBatchSize <= 0 {
		cfg.DefaultBatchSize = 1
	}
	if cfg.MaxPopBatch <= 0 {
		cfg.MaxPopBatch = 10000
	}
	if cfg.MaxPushItems <= 0 {
		cfg.MaxPushItems = 10000
	}
	if cfg.MaxAckItems <= 0 {
		cfg.MaxAckItems = 10000
	}
	if cfg.PopWaitInitialInterval <= 0 {
		cfg.PopWaitInitialInterval = 100 * time.Millisecond
	}
	if cfg.PopWaitBackoffThreshold <= 0 {
		cfg.PopWaitBackoffThreshold = 3
	}
	if cfg.PopWaitBackoffMultiple <= 0 {
		cfg.PopWaitBackoffMultiple = 2
	}
	if cfg.PopWaitMaxInterval <= 0 {
		cfg.PopWaitMaxInterval = time.Second
	}
	if cfg.QueueCacheTTL <= 0 {
		cfg.QueueCacheTTL = 5 * time.Second
	}
	if cfg.SpoolFlushInterval <= 0 {
		cfg.SpoolFlushInterval = 100 * time.Millisecond
	}
	if cfg.SpoolMaxBatch <= 0 {
		cfg.SpoolMaxBatch = 100
	}
	hostname, _ := os.Hostname()
	if cfg.Instance == "" {
		cfg.Instance = hostname
	}
	b := &Broker{
		cfg:        cfg,
		store:      st,
		ids:        queue.NewIDGenerator(),
		waiters:    newWaiters(),
		wakeup:     newWakeup(),
		queueFlags: newQueueFlags(cfg.QueueCacheTTL),
		logger:     logger,
		closing:    make(chan struct{}),
		spooler:    newSpooler(cfg),
	}
	b.pushes = newPushCombiner(cfg.Push, b.store.MessageInsertBatch)
	b.analytics = analytics.New(analytics.Config{
		Hostname: hostname, WorkerID: cfg.Instance, PID: os.Getpid(), ParkedFunc: b.waiters.parked,
		FlushInterval: cfg.AnalyticsFlushInterval, Bucket: cfg.AnalyticsBucket,
	}, st, logger)
	return b
}

// PushCombining reports how pushes shared insert statements (QUEEN_PUSH_*).
func (b *Broker) PushCombining() PushCombining { return b.pushes.stats() }

// Analytics returns the service that records this broker's requests. The daemon
// runs it ([analytics.Service.Run]) to sample and flush; the HTTP layer reads its
// reports.
func (b *Broker) Analytics() *analytics.Service { return b.analytics }

// Config returns the effective broker configuration.
func (b *Broker) Config() Config { return b.cfg }

// Close answers every parked long-poll at once (empty) and makes new long-polls
// return after their first attempt. Used when the daemon drains on shutdown.
func (b *Broker) Close() {
	b.closeOnce.Do(func() { close(b.closing) })
}

// ParkedPolls returns the number of long-polls currently parked.
func (b *Broker) ParkedPolls() int { return b.waiters.count() }

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
