package schema

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// buildLockID is the session advisory lock (two-key form, with applyLockNamespace) that
// the replica building indexes holds, so that one replica builds at a time.
const buildLockID = 2

// Defaults of IndexBuilder.
const (
	defaultProgressInterval = 10 * time.Second
	defaultRetryInterval    = 30 * time.Second
	closeTimeout            = 10 * time.Second
)

// managedIndex is an index queen keeps on a table that may have existed before this
// boot (created by upstream or by an earlier queen), and so may be large. The boot
// transaction creates these only together with a new, empty table (001_tables.sql,
// 080_activity.sql); on an existing table IndexBuilder builds them CONCURRENTLY.
type managedIndex struct {
	Table  string // schema-qualified
	Name   string
	Unique bool
	// Def is the definition as pg_get_indexdef prints it after "ON <table> ", which is
	// also valid in CREATE INDEX; two indexes with equal Unique and Def are equivalent.
	Def string
	// Renames are names under which queen created an equivalent index earlier: when
	// Name is missing, such an index is renamed to Name (a catalog change that blocks no
	// reads or writes) instead of building a second one.
	Renames []string
	// Drops are indexes only queen ever created that this one makes redundant: dropped
	// CONCURRENTLY once this one is valid.
	Drops []string
	// Accepts are other definitions that also satisfy Name: an index under Name with
	// one of them is left as it is, and one under a name in Renames is renamed.
	Accepts []string
}

// cDedupDef is queen's dedup and lookup index on messages: transaction ids compared
// byte for byte.
const cDedupDef = `USING btree (partition_id, transaction_id COLLATE "C")`

// managedIndexes are built in this order: first the index queen's hot lookups need.
// Every name upstream's boot creates by name is here, so that an upstream broker booted
// on the database finds them all and builds none inside its own boot transaction.
//
// messages needs one unique index on (partition_id, transaction_id), under upstream's
// name messages_partition_transaction_unique (upstream's boot checks only the name, and
// its ON CONFLICT accepts either collation). queen's own lookups say COLLATE "C", so on
// a database queen creates that index is byte-wise, an earlier queen's byte-wise
// idx_messages_partition_transaction_c is renamed to it, and a missing one is built
// byte-wise. On a database upstream created the name holds upstream's index in the
// database collation, and queen's byte-wise one is built beside it as
// idx_messages_partition_transaction_c: the only case with two (each unique index
// costs every push an insert; a push of 100 was 15 % slower with both).
var managedIndexes = []managedIndex{
	{Table: "queen.messages", Name: "messages_partition_transaction_unique", Unique: true,
		Def: cDedupDef, Accepts: []string{`USING btree (partition_id, transaction_id)`},
		Renames: []string{"idx_messages_partition_transaction_c", "idx_messages_partition_transaction"},
		Drops:   []string{"idx_messages_partition_transaction"}},
	{Table: "queen.messages", Name: "idx_messages_partition_transaction_c", Unique: true, Def: cDedupDef},
	{Table: "queen.messages", Name: "idx_messages_partition_created",
		Def: `USING btree (partition_id, created_at, id)`, Renames: []string{"idx_messages_partition_created_id"}},
	{Table: "queen.partition_consumers", Name: "idx_partition_consumers_worker_id_active",
		Def:     `USING btree (worker_id) WHERE (worker_id IS NOT NULL)`,
		Renames: []string{"idx_partition_consumers_worker_id"}},
	{Table: "queen.partition_lookup", Name: "idx_partition_lookup_partition_id", Def: `USING btree (partition_id)`},
	{Table: "queen.consumer_groups_metadata", Name: "idx_consumer_groups_metadata_lookup",
		Def: `USING btree (consumer_group, queue_name, namespace, task)`},
	{Table: "queen.dead_letter_queue", Name: "idx_dlq_partition", Def: `USING btree (partition_id)`},
	{Table: "queen.dead_letter_queue", Name: "idx_dlq_consumer_group", Def: `USING btree (consumer_group)`},
	{Table: "queen.dead_letter_queue", Name: "idx_dlq_failed_at", Def: `USING btree (failed_at DESC)`},
	{Table: "queen.dead_letter_queue", Name: "idx_dlq_message_consumer",
		Def: `USING btree (message_id, consumer_group)`, Renames: []string{"idx_dlq_message_group"}},
	{Table: "queen.message_traces", Name: "idx_message_traces_message_id", Def: `USING btree (message_id)`},
	{Table: "queen.message_traces", Name: "idx_message_traces_transaction_partition",
		Def: `USING btree (transaction_id, partition_id)`, Drops: []string{"idx_message_traces_message"}},
	{Table: "queen.message_traces", Name: "idx_message_traces_created_at", Def: `USING btree (created_at DESC)`},
	{Table: "queen.message_traces", Name: "idx_message_traces_partition_id", Def: `USING btree (partition_id)`},
	{Table: "queen.message_trace_names", Name: "idx_message_trace_names_name", Def: `USING btree (trace_name)`},
	{Table: "queen.message_trace_names", Name: "idx_message_trace_names_trace_id", Def: `USING btree (trace_id)`},
	{Table: "queen.queues", Name: "idx_queues_name", Def: `USING btree (name)`},
	{Table: "queen.system_state", Name: "idx_system_state_key", Def: `USING btree (key)`},
	{Table: "queen.retention_history", Name: "idx_retention_history_partition", Def: `USING btree (partition_id)`},
	{Table: "queen.retention_history", Name: "idx_retention_history_executed",
		Def: `USING btree (executed_at)`, Renames: []string{"idx_retention_history_executed_at"}},
}

// IndexBuilder brings the indexes of tables that existed before this boot to what
// queen expects, without blocking writes: CREATE INDEX CONCURRENTLY and DROP INDEX
// CONCURRENTLY run outside any transaction, one statement at a time, on a dedicated
// session that holds a session advisory lock, so one replica builds at a time. It is
// meant to run once the broker serves: every hot path works without these indexes
// (slower), and an index is built once, whatever the number of replicas.
//
// An index left INVALID by an interrupted concurrent build (a crash, a cancel, a
// shutdown of the replica building it) is dropped and built again on the next run. An
// index equivalent to a missing one (same table, uniqueness, columns, collation, order
// and predicate) is never built twice: an equivalent queen created under an earlier
// name is renamed, any other is left alone. DROP INDEX only names indexes queen
// created.
type IndexBuilder struct {
	// ConnConfig configures the dedicated session; the builder copies it, makes a
	// cancelled context cancel the running statement on the server, and lifts the
	// statement and lock timeouts for the session.
	ConnConfig *pgx.ConnConfig
	// Logger receives one line per action and progress lines of long builds.
	Logger *slog.Logger
	// ProgressInterval spaces the progress lines of a running build, read from
	// pg_stat_progress_create_index on a second session (0: 10 s; negative: none).
	ProgressInterval time.Duration
	// RetryInterval spaces attempts to take the lock while another replica holds it
	// (0: 30 s).
	RetryInterval time.Duration
}

// IndexAction is one change IndexBuilder made, or chose not to make.
type IndexAction struct {
	Table, Index string
	// Action is "built", "rebuilt" (an invalid leftover was dropped first), "renamed"
	// (from From), "dropped", "equivalent" (From is equivalent: nothing built) or
	// "conflict" (Index exists with another definition: left alone).
	Action   string
	From     string
	Duration time.Duration
}

// indexState is one index of a table, from the catalog.
type indexState struct {
	Valid, Unique bool
	Def           string
}

// Run takes the lock (retrying while another replica holds it) and makes every
// managed index valid, in order. It returns what it did; it stops at the first
// failure, dropping what a failed build left behind. Cancelling ctx cancels the
// running statement: a build interrupted this way leaves an invalid index that the
// next run rebuilds.
func (b *IndexBuilder) Run(ctx context.Context) ([]IndexAction, error) {
	logger := b.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	conn, err := b.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer closeConn(ctx, conn)
	if err := b.lock(ctx, conn, logger); err != nil {
		return nil, err
	}
	var actions []IndexAction
	for _, ix := range managedIndexes {
		done, err := b.ensure(ctx, conn, ix, logger)
		actions = append(actions, done...)
		if err != nil {
			return actions, err
		}
	}
	if len(actions) > 0 {
		logger.Info("indexes ready", "changes", len(actions))
	}
	return actions, nil
}

// connect opens a session for the builder's statements.
func (b *IndexBuilder) connect(ctx context.Context) (*pgx.Conn, error) {
	if b.ConnConfig == nil {
		return nil, errors.New("schema: index builder: no connection settings")
	}
	cfg := b.ConnConfig.Copy()
	// No statement of this session has a time limit (below), so no tracer may impose one.
	cfg.Tracer = nil
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 5 * time.Second}
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = "queen index builder"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("schema: index builder: connect: %w", err)
	}
	// A build may take longer than any statement timeout meant for requests, and its
	// waits for older transactions count as lock waits.
	if _, err := conn.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		closeConn(ctx, conn)
		return nil, fmt.Errorf("schema: index builder: %w", err)
	}
	if _, err := conn.Exec(ctx, "SET lock_timeout = 0"); err != nil {
		closeConn(ctx, conn)
		return nil, fmt.Errorf("schema: index builder: %w", err)
	}
	return conn, nil
}

// lock takes the builder's session lock. It never waits inside PostgreSQL: a session
// blocked in pg_advisory_lock keeps a snapshot open, which a concurrent index build of
// the lock holder would wait for.
func (b *IndexBuilder) lock(ctx context.Context, conn *pgx.Conn, logger *slog.Logger) error {
	retry := b.RetryInterval
	if retry <= 0 {
		retry = defaultRetryInterval
	}
	for attempt := 0; ; attempt++ {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)",
			int32(applyLockNamespace), int32(buildLockID)).Scan(&ok); err != nil {
			return fmt.Errorf("schema: index builder: lock: %w", err)
		}
		if ok {
			return nil
		}
		if attempt == 0 {
			logger.Info("another replica is building indexes; checking again later", "retry_in", retry.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retry):
		}
	}
}

// ensure makes ix valid on its table (when the table exists).
func (b *IndexBuilder) ensure(ctx context.Context, conn *pgx.Conn, ix managedIndex, logger *slog.Logger) ([]IndexAction, error) {
	state, err := tableIndexes(ctx, conn, ix.Table)
	if err != nil || state == nil {
		return nil, err
	}
	log := logger.With("table", ix.Table, "index", ix.Name)
	var actions []IndexAction
	action := "built"
	cur, exists := state[ix.Name]
	switch {
	case exists && !cur.Valid:
		log.Warn("dropping an invalid index left by an interrupted concurrent build; building it again")
		if err := dropConcurrently(ctx, conn, ix.Name); err != nil {
			return nil, err
		}
		action = "rebuilt"
	case exists && (cur.Unique != ix.Unique || !ix.accepts(cur.Def)):
		log.Warn("index exists with another definition; left alone", "definition", cur.Def, "expected", ix.Def)
		return []IndexAction{{Table: ix.Table, Index: ix.Name, Action: "conflict"}}, nil
	case exists:
		return b.dropRedundant(ctx, conn, ix, state, log)
	default:
		var taken bool
		if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", "queen."+ix.Name).Scan(&taken); err != nil {
			return nil, fmt.Errorf("schema: index builder: look up %s: %w", ix.Name, err)
		}
		if taken {
			log.Warn("the index name is taken by another relation; not building it")
			return []IndexAction{{Table: ix.Table, Index: ix.Name, Action: "conflict"}}, nil
		}
		if from, ok := equivalentAmong(ix, state, ix.Renames); ok {
			start := time.Now()
			if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER INDEX queen.%s RENAME TO %s",
				pgx.Identifier{from}.Sanitize(), pgx.Identifier{ix.Name}.Sanitize())); err != nil {
				return nil, fmt.Errorf("schema: index builder: rename %s to %s: %w", from, ix.Name, err)
			}
			log.Info("renamed an equivalent index", "from", from)
			st := state[from]
			delete(state, from)
			state[ix.Name] = st
			actions = append(actions, IndexAction{Table: ix.Table, Index: ix.Name, Action: "renamed", From: from,
				Duration: time.Since(start)})
			more, err := b.dropRedundant(ctx, conn, ix, state, log)
			return append(actions, more...), err
		}
		if from, ok := equivalentAmong(ix, state, slices.Sorted(maps.Keys(state))); ok {
			if isManaged(ix.Table, from) {
				// Another of queen's own indexes serves: the layout queen creates.
				log.Debug("served by an equivalent index of queen's", "equivalent", from)
				return nil, nil
			}
			log.Info("an equivalent index exists; not building another", "equivalent", from)
			return []IndexAction{{Table: ix.Table, Index: ix.Name, Action: "equivalent", From: from}}, nil
		}
	}
	d, err := b.build(ctx, conn, ix, log)
	if err != nil {
		return actions, err
	}
	actions = append(actions, IndexAction{Table: ix.Table, Index: ix.Name, Action: action, Duration: d})
	more, err := b.dropRedundant(ctx, conn, ix, state, log)
	return append(actions, more...), err
}

// build runs CREATE INDEX CONCURRENTLY for ix, logging its progress. A failed build
// leaves an invalid index, which would cost every write and serve no read: it is
// dropped before the error is returned.
func (b *IndexBuilder) build(ctx context.Context, conn *pgx.Conn, ix managedIndex, log *slog.Logger) (time.Duration, error) {
	var rows float64
	_ = conn.QueryRow(ctx, "SELECT greatest(reltuples, 0)::float8 FROM pg_class WHERE oid = to_regclass($1)",
		ix.Table).Scan(&rows)
	log.Info("building index concurrently", "rows_estimate", int64(rows))
	unique := ""
	if ix.Unique {
		unique = "UNIQUE "
	}
	sql := fmt.Sprintf("CREATE %sINDEX CONCURRENTLY IF NOT EXISTS %s ON %s %s",
		unique, pgx.Identifier{ix.Name}.Sanitize(), ix.Table, ix.Def)
	stopProgress := b.watchProgress(ctx, conn.PgConn().PID(), log)
	start := time.Now()
	_, err := conn.Exec(ctx, sql)
	stopProgress()
	d := time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			return d, fmt.Errorf("schema: index builder: build %s interrupted: %w: %w", ix.Name, ctx.Err(), err)
		}
		if derr := dropConcurrently(ctx, conn, ix.Name); derr != nil {
			err = errors.Join(err, derr)
		}
		return d, fmt.Errorf("schema: index builder: build %s: %w", ix.Name, err)
	}
	log.Info("index built", "duration", d.Round(time.Millisecond).String())
	return d, nil
}

// dropRedundant drops ix.Drops once ix is valid.
func (b *IndexBuilder) dropRedundant(ctx context.Context, conn *pgx.Conn, ix managedIndex, state map[string]indexState,
	log *slog.Logger) ([]IndexAction, error) {
	var actions []IndexAction
	for _, name := range ix.Drops {
		if _, ok := state[name]; !ok || name == ix.Name {
			continue
		}
		start := time.Now()
		if err := dropConcurrently(ctx, conn, name); err != nil {
			return actions, err
		}
		log.Info("dropped a redundant index queen created earlier", "dropped", name)
		actions = append(actions, IndexAction{Table: ix.Table, Index: name, Action: "dropped", Duration: time.Since(start)})
	}
	return actions, nil
}

// watchProgress logs the phase of the build running on backend pid every
// ProgressInterval, from a second session, until the returned func is called.
func (b *IndexBuilder) watchProgress(ctx context.Context, pid uint32, log *slog.Logger) (stop func()) {
	every := b.ProgressInterval
	if every == 0 {
		every = defaultProgressInterval
	}
	if every < 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				closeConn(ctx, conn)
			}
		}()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if conn == nil {
				var err error
				if conn, err = pgx.ConnectConfig(ctx, b.ConnConfig); err != nil {
					log.Debug("index build progress unavailable", "err", err)
					return
				}
			}
			var phase string
			var blocksDone, blocksTotal, tuplesDone, tuplesTotal int64
			err := conn.QueryRow(ctx, `SELECT phase, blocks_done, blocks_total, tuples_done, tuples_total
				FROM pg_stat_progress_create_index WHERE pid = $1`, int32(pid)).
				Scan(&phase, &blocksDone, &blocksTotal, &tuplesDone, &tuplesTotal)
			if errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				if ctx.Err() == nil {
					log.Debug("index build progress unavailable", "err", err)
				}
				return
			}
			log.Info("index build in progress", "phase", phase, "blocks_done", blocksDone, "blocks_total", blocksTotal,
				"tuples_done", tuplesDone, "tuples_total", tuplesTotal)
		}
	}()
	return func() { cancel(); <-done }
}

// tableIndexes returns the indexes of table by name; nil when the table does not exist.
func tableIndexes(ctx context.Context, conn *pgx.Conn, table string) (map[string]indexState, error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil {
		return nil, fmt.Errorf("schema: index builder: look up %s: %w", table, err)
	}
	if !exists {
		return nil, nil
	}
	rows, err := conn.Query(ctx, `
SELECT c.relname::text, i.indisvalid, i.indisunique,
       coalesce(substring(pg_get_indexdef(i.indexrelid) from ' (USING .*)$'), '')
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = to_regclass($1)`, table)
	if err != nil {
		return nil, fmt.Errorf("schema: index builder: indexes of %s: %w", table, err)
	}
	state := make(map[string]indexState)
	var name string
	var st indexState
	_, err = pgx.ForEachRow(rows, []any{&name, &st.Valid, &st.Unique, &st.Def}, func() error {
		state[name] = st
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("schema: index builder: indexes of %s: %w", table, err)
	}
	return state, nil
}

// equivalentAmong returns the first of names that is a valid index of state
// equivalent to ix (other than ix itself).
func equivalentAmong(ix managedIndex, state map[string]indexState, names []string) (string, bool) {
	for _, name := range names {
		if st, ok := state[name]; ok && name != ix.Name && st.Valid && st.Unique == ix.Unique && ix.accepts(st.Def) {
			return name, true
		}
	}
	return "", false
}

// isManaged reports whether name is one of managedIndexes on table.
func isManaged(table, name string) bool {
	return slices.ContainsFunc(managedIndexes, func(ix managedIndex) bool { return ix.Table == table && ix.Name == name })
}

// accepts reports whether an index defined as def satisfies ix.
func (ix managedIndex) accepts(def string) bool {
	return def == ix.Def || slices.Contains(ix.Accepts, def)
}

func dropConcurrently(ctx context.Context, conn *pgx.Conn, name string) error {
	if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS queen."+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("schema: index builder: drop %s: %w", name, err)
	}
	return nil
}

// closeConn closes conn even when ctx is done (closing ends the session, and with it
// the session lock).
func closeConn(ctx context.Context, conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	_ = conn.Close(ctx)
}
