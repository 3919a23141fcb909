package config

import (
	"math"
	"time"

	"github.com/queenmq/queen/internal/envvalue"
)

// popSettings: defaults and pacing of pops and long-polls.
func popSettings() []setting {
	return []setting{
		{
			name: "DEFAULT_TIMEOUT", def: "30000", group: groupPop,
			doc: "Long-poll timeout in milliseconds of a pop that gives no `timeout`; 0 makes such a pop " +
				"look once and answer, like `wait=false`. Must not exceed `QUEEN_MAX_POP_TIMEOUT_MS`.",
			bind: func(c *Config) value { return ms(&c.DefaultTimeout, 0) },
		},
		{
			name: "DEFAULT_BATCH_SIZE", def: "1", group: groupPop,
			doc:  "Batch size of a pop that gives no `batch`. Must not exceed `QUEEN_MAX_POP_BATCH`.",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.DefaultBatchSize, Min: 1, Max: envvalue.NoMax} },
		},
		{
			name: "QUEEN_POP_AUTOPILOT_BATCH", def: "100", group: groupPop,
			doc: "Batch size the pop autopilot gives a pop that sends `autopilot=true` without `batch`, " +
				"names a `consumerGroup` and pops the queue route (`/api/v1/pop/queue/{queue}`), capped at " +
				"`QUEEN_MAX_POP_BATCH`. Any other `autopilot=true` pop without `batch` takes " +
				"200 messages, a pop without `autopilot` `DEFAULT_BATCH_SIZE` (docs/api.md, Pop autopilot). " +
				"As the Queen 1.x brokers.",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.PopAutopilotBatch, Min: 1, Max: 10000} },
		},
		{
			name: "DEFAULT_SUBSCRIPTION_MODE", def: "", defDoc: "empty: all", group: groupPop,
			doc: "Subscription mode of a pop that names a consumer group but no `subscriptionMode`, used " +
				"when the group first reads a partition. Empty or `all`: a new consumer group starts at the " +
				"oldest message (queen's and Queen 0.15's default); `new`: at messages pushed from now on. " +
				"`new-only`, `new_only` and `newonly` are read as `new`, as the Queen 1.x brokers do. The " +
				"Queen 1.x brokers default to `new`: a 1.x deployment that relied on that default sets " +
				"`DEFAULT_SUBSCRIPTION_MODE=new` (queen warns at boot when an environment looks like a 1.x " +
				"one and leaves it unset). Unlike 1.x, which reads any other word as `all`, queen refuses it.",
			bind: func(c *Config) value {
				return envvalue.Enum{P: &c.DefaultSubscriptionMode, Options: []string{"", "all", "new"},
					Aliases: [][2]string{{"new-only", "new"}, {"new_only", "new"}, {"newonly", "new"}}}
			},
		},
		{
			name: "POP_WAIT_INITIAL_INTERVAL_MS", def: "100", group: groupPop,
			doc: "First re-check interval of a parked long-poll, in milliseconds (pushes wake long-polls at " +
				"once; the re-check is the safety net). Must not exceed `POP_WAIT_MAX_INTERVAL_MS`.",
			bind: func(c *Config) value { return ms(&c.PopWaitInitialInterval, 1) },
		},
		{
			name: "POP_WAIT_BACKOFF_THRESHOLD", def: "3", group: groupPop,
			doc: "Number of empty re-checks that use the initial interval before backing off (0: back off " +
				"from the first).",
			bind: func(c *Config) value {
				return envvalue.Int[int]{P: &c.PopWaitBackoffThreshold, Min: 0, Max: envvalue.NoMax}
			},
		},
		{
			name: "POP_WAIT_BACKOFF_MULTIPLIER", def: "2.0", group: groupPop,
			doc: "After the threshold the interval is initial × k × multiplier (k = empty re-checks so far), " +
				"capped by `POP_WAIT_MAX_INTERVAL_MS`: linear in k, as upstream.",
			bind: func(c *Config) value { return envvalue.Float{P: &c.PopWaitBackoffMultiplier, Min: 1} },
		},
		{
			name: "POP_WAIT_MAX_INTERVAL_MS", def: "1000", group: groupPop,
			doc:  "Longest re-check interval of a parked long-poll, in milliseconds.",
			bind: func(c *Config) value { return ms(&c.PopWaitMaxInterval, 1) },
		},
		{
			name: "QUEEN_MAX_POP_TIMEOUT_MS", def: "120000", group: groupPop,
			doc: "Longest long-poll a client may ask for, in milliseconds; longer `timeout` values are capped " +
				"to it. Upstream caps them implicitly at about 120 s. Queen-only.",
			bind: func(c *Config) value { return ms(&c.MaxPopTimeout, 1) },
		},
		{
			name: "QUEEN_POP_SYNCHRONOUS_COMMIT", def: "true", group: groupPop,
			doc: "Whether a pop waits for its commit to be durable (flushed to disk, and on the synchronous " +
				"standby when there is one) before it answers, as every push and ack does. `false` lets a pop " +
				"that writes only its leases answer at once (PostgreSQL's `synchronous_commit = off` for " +
				"that transaction; it is flushed within three `wal_writer_delay`s, or by the next durable " +
				"commit): a crash of PostgreSQL or its machine, or a failover, in that moment undoes the pop, and its messages are " +
				"delivered again before its lease would have ended, possibly while the first consumer still " +
				"works on them. Nothing acknowledged is lost and order is kept. A pop that registers its " +
				"consumer group or starts a subscription, and an `autoAck` pop, stay durable " +
				"(docs/high-availability.md, Pops that do not wait for the flush). On a durable 2-core " +
				"machine, pop+ack of 10 delivered a quarter to two fifths more, producers and consumers " +
				"at once 7–18 % more (docs/benchmarks.md). Queen-only.",
			bind: func(c *Config) value { return envvalue.Bool{P: &c.PopSynchronousCommit} },
		},
		{
			name: "QUEEN_POP_CLAIM_AHEAD_MS", def: "20", group: groupPop,
			doc: "How long, in milliseconds from when its ack was sent, a batch claimed ahead waits for its " +
				"consumer's next pop (an ack slower than that holds nothing); `0` claims nothing ahead. A consumer that pops a queue without naming a partition, one partition " +
				"at a time, takes full batches under a lease, acks them whole and pops again within this time " +
				"after its ack is in a loop: while no pop of its group is parked on the broker, the ack that " +
				"releases its lease also claims its next batch, in the ack's transaction (one commit and WAL " +
				"flush instead of two), and its next pop with the same parameters takes the batch at once. A " +
				"batch no such pop takes in time is given back (its lease cleared), as is every batch held for " +
				"a queue and group when any other pop of them arrives, and on a seek or a delete of the group " +
				"or queue; the lease of a held batch starts at the ack (docs/api.md, Semantics worth knowing). " +
				"Queen-only.",
			bind: func(c *Config) value { return ms(&c.PopClaimAhead, 0) },
		},
	}
}

// limitSettings: every request size limit, explicit. All are queen-only.
func limitSettings() []setting {
	return []setting{
		{
			name: "QUEEN_MAX_BODY_BYTES", def: "16777216", defDoc: "16777216 (16 MiB)", group: groupLimits,
			doc:  "Largest request body in bytes; larger bodies get 413 `payload_too_large`.",
			bind: func(c *Config) value { return envvalue.Int[int64]{P: &c.MaxBodyBytes, Min: 1, Max: math.MaxInt64} },
		},
		{
			name: "QUEEN_MAX_PUSH_ITEMS", def: "10000", group: groupLimits,
			doc:  "Most messages in one push request, and most operations in one transaction.",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.MaxPushItems, Min: 1, Max: envvalue.NoMax} },
		},
		{
			name: "QUEEN_MAX_POP_BATCH", def: "10000", group: groupLimits,
			doc:  "Largest `batch` a pop may ask for.",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.MaxPopBatch, Min: 1, Max: envvalue.NoMax} },
		},
		{
			name: "QUEEN_MAX_ACK_ITEMS", def: "10000", group: groupLimits,
			doc:  "Most acknowledgements in one batch-ack request.",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.MaxAckItems, Min: 1, Max: envvalue.NoMax} },
		},
	}
}

// loggingSettings: the one slog logger the daemon builds.
func loggingSettings() []setting {
	return []setting{
		{
			name: "LOG_LEVEL", def: "info", group: groupLogging,
			doc: "Lowest level logged. `trace`, upstream's most verbose level, is taken and logs what " +
				"`debug` does: queen writes nothing below debug. Any case is accepted; " +
				"upstream silently uses `info` for unknown words, queen refuses them. The boot record (the " +
				"`queen starting` line, the effective configuration, its warnings and unknown `QUEEN_*` " +
				"variables) is logged whatever the level.",
			bind: func(c *Config) value {
				return envvalue.Enum{P: &c.LogLevel, Options: []string{"trace", "debug", "info", "warn", "error"}}
			},
		},
		{
			name: "QUEEN_LOG_FORMAT", def: "json", group: groupLogging,
			doc:  "`json` (one object per line, for journald and collectors) or `text` (`key=value`). Queen-only.",
			bind: func(c *Config) value { return envvalue.Enum{P: &c.LogFormat, Options: []string{"json", "text"}} },
		},
		{
			name: "QUEEN_STATS_LOG_INTERVAL", def: "1m0s", group: groupLogging,
			doc: "Period of the Info line `rates and sizes` (push, pop and ack rates, parked long-polls, " +
				"pool use, deepest queues); `0` turns it off. Queen-only; a Go duration.",
			bind: func(c *Config) value {
				return envvalue.Limit{P: &c.StatsLogInterval, Min: 10 * time.Millisecond, Zero: "off"}
			},
		},
	}
}

// fileBufferSettings: the local spool that takes pushes while PostgreSQL is away.
func fileBufferSettings() []setting {
	return []setting{
		{
			name: "FILE_BUFFER_DIR", def: "/var/lib/queen/buffers", group: groupFileBuffer,
			doc: "Spool directory, created at startup if missing. Empty means the default. One directory " +
				"per process: replicas must not share one.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.FileBufferDir} },
		},
		{
			name: "FILE_BUFFER_FLUSH_MS", def: "100", group: groupFileBuffer,
			doc: "Period of the spool drain loop, in milliseconds (upstream crashes on 0).",
			bind: func(c *Config) value {
				return envvalue.Unit{P: &c.FileBufferFlushInterval, Unit: time.Millisecond, Min: 1}
			},
		},
		{
			name: "FILE_BUFFER_MAX_BATCH", def: "100", group: groupFileBuffer,
			doc:  "Spooled messages replayed per insert, at most `QUEEN_MAX_PUSH_ITEMS` (a larger value is used as that).",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.FileBufferMaxBatch, Min: 1, Max: envvalue.NoMax} },
		},
		{
			name: "FILE_BUFFER_EVENTS_PER_FILE", def: "10000", group: groupFileBuffer,
			doc: "Spooled messages per file before the spool starts a new file.",
			bind: func(c *Config) value {
				return envvalue.Int[int]{P: &c.FileBufferEventsPerFile, Min: 1, Max: envvalue.NoMax}
			},
		},
		{
			name: "QUEEN_SPOOL_MAX_BYTES", def: "0", group: groupFileBuffer,
			doc: "queen only: most bytes the spool files may hold; a push that would exceed it is refused " +
				"with 503, as on a full disk. 0 means limited by the disk only.",
			bind: func(c *Config) value { return envvalue.Int[int64]{P: &c.SpoolMaxBytes, Min: 0, Max: math.MaxInt64} },
		},
	}
}

// pushSettings: how pushes share insert statements. The names are those of upstream's
// batching engine; queen reads only the PUSH ones.
func pushSettings() []setting {
	return []setting{
		{
			name: "QUEEN_PUSH_MAX_CONCURRENT", def: "2", group: groupPush,
			doc: "Most push statements this broker runs at once. Pushes arriving while all are busy wait, " +
				"and those waiting when one ends go into the next statement together, up to " +
				"`QUEEN_PUSH_MAX_BATCH_SIZE` pushes, 1000 messages and 4 MiB of payload: under load, many " +
				"small pushes share one statement and one commit. While a statement runs, another starts " +
				"only when the pushes waiting carry `QUEEN_PUSH_PARALLEL_MIN_MESSAGES` messages. Each push keeps its messages together " +
				"and in order and gets its own answer; if a shared statement fails, each push runs again " +
				"alone, so one push's failure is never another's. A push of 1000 messages or 4 MiB or " +
				"more always runs at once, alone, and so does a push that has waited " +
				"`QUEEN_PUSH_MAX_HOLD_MS` + 20 ms, so a statement stuck on a lock never holds up the " +
				"others for longer. Upstream's default is 24 per worker, with an adaptive limit " +
				"(`QUEEN_CONCURRENCY_MODE`); queen's limit is this number, per broker. To run every push " +
				"in its own statement, set `QUEEN_PUSH_MAX_BATCH_SIZE` to 1 and raise this to " +
				"`DB_POOL_SIZE`. 0 counts as 1, as upstream. See docs/benchmarks.md.",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.PushMaxConcurrent, Min: 0, Max: envvalue.NoMax} },
		},
		{
			name: "QUEEN_PUSH_MAX_BATCH_SIZE", def: "500", group: groupPush,
			doc:  "Most pushes (requests) combined into one statement. 0 counts as 1 (no combining), as upstream.",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.PushMaxBatchSize, Min: 0, Max: envvalue.NoMax} },
		},
		{
			name: "QUEEN_PUSH_PARALLEL_MIN_MESSAGES", def: "50", group: groupPush,
			doc: "While a push statement runs, another starts (up to `QUEEN_PUSH_MAX_CONCURRENT`) only " +
				"when the pushes waiting carry at least this many messages; smaller ones wait for the " +
				"running statement and go into the next one together, or, once the first has waited " +
				"`QUEEN_PUSH_MAX_HOLD_MS`, into one beside it. A statement costs PostgreSQL about " +
				"as much to start and commit as 10–15 of its rows, and one backend works on one core: " +
				"small pushes are cheaper combined, large ones faster side by side. 1 starts a statement " +
				"for any push while one is free: the lowest latency under load, at about a quarter more " +
				"CPU per message for small pushes (docs/benchmarks.md). Without combining " +
				"(`QUEEN_PUSH_MAX_BATCH_SIZE` 1) it does not apply. 0 counts as 1.",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.PushParallelMin, Min: 0, Max: envvalue.NoMax} },
		},
		{
			name: "QUEEN_PUSH_PREFERRED_BATCH_SIZE", def: "1", group: groupPush,
			doc: "A statement is started, when one is free, as soon as this many pushes wait, or once the " +
				"oldest has waited `QUEEN_PUSH_MAX_HOLD_MS`; larger values trade that much latency for " +
				"fuller statements even at low load. At 1 a push waits while a statement is free only for " +
				"the producers a statement has just answered: after a statement that ran alone, the next " +
				"waits until as many pushes are in line as it answered and found waiting (at most 8), at " +
				"most as long as that statement took (and `QUEEN_PUSH_MAX_HOLD_MS`), and only while most of the recent " +
				"such producers came back within that time. A single producer, or producers that pause " +
				"between pushes, are never held; four producers pushing flat out share each statement. " +
				"Upstream's default is 50 (so each push may wait 5 ms); 0 counts as 1.",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.PushPreferredBatch, Min: 0, Max: envvalue.NoMax} },
		},
		{
			name: "QUEEN_PUSH_MAX_HOLD_MS", def: "5", group: groupPush,
			doc: "How long, in milliseconds, pushes fewer than `QUEEN_PUSH_PREFERRED_BATCH_SIZE` wait for " +
				"more before a free statement takes them, and pushes carrying fewer messages than " +
				"`QUEEN_PUSH_PARALLEL_MIN_MESSAGES` wait for a running statement before a free one takes " +
				"them; also the longest a statement waits for the producers the one before it answered " +
				"(see `QUEEN_PUSH_PREFERRED_BATCH_SIZE`). 0 turns every wait off. Upstream falls back to " +
				"`SIDECAR_MICRO_BATCH_WAIT_MS` for it; queen reads only this name.",
			bind: func(c *Config) value { return envvalue.Unit{P: &c.PushMaxHold, Unit: time.Millisecond, Min: 0} },
		},
	}
}
