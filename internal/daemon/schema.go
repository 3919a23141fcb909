package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/queenmq/queen/internal/appliance"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/schema"
	"github.com/queenmq/queen/internal/store"
)

// waitForDatabase applies the schema, or with apply false (QUEEN_APPLY_SCHEMA=0) only
// checks that the database holds it, retrying with a capped backoff while PostgreSQL
// is unreachable, logging each attempt and reporting it to onWait. A schema that is
// missing or older than this release's, with apply false, is ErrUnsupportedConfig
// (exit 78): restarting cannot fix it, a DBA must apply the schema.
func waitForDatabase(ctx context.Context, st *store.Store, apply bool, logger *slog.Logger,
	onWait func(attempt int, retryIn time.Duration, err error)) error {
	attempt, err := appliance.WaitForDatabase(ctx, appliance.Backoff{First: 500 * time.Millisecond, Max: 5 * time.Second},
		func(ctx context.Context) error { return prepareSchema(ctx, st, apply) },
		func(err error) bool { return errors.Is(err, queue.ErrUnavailable) },
		func(attempt int, retryIn time.Duration, err error) {
			logger.Warn("waiting for PostgreSQL", waitingArgs(attempt, retryIn, err)...)
			onWait(attempt, retryIn, err)
		})
	switch {
	case err != nil:
		return err
	case apply:
		logger.Info("schema applied", "attempt", attempt)
	default:
		logger.Info("schema checked; QUEEN_APPLY_SCHEMA=0, so the broker runs no DDL",
			"attempt", attempt, "schema_level", schema.Level, "schema_version", schema.Version())
	}
	return nil
}

// prepareSchema makes sure the database holds the schema: it applies it, or with apply
// false only checks it.
func prepareSchema(ctx context.Context, st *store.Store, apply bool) error {
	if apply {
		if err := st.ApplySchema(ctx); err != nil {
			return fmt.Errorf("daemon: apply schema: %w", err)
		}
		return nil
	}
	err := st.CheckSchema(ctx)
	var notApplied *schema.NotAppliedError
	if errors.As(err, &notApplied) {
		return fmt.Errorf("%w: QUEEN_APPLY_SCHEMA=0 and %w; the broker applies no DDL with this setting: "+
			"a DBA must apply this release's schema as its owner (queen schema | psql -v ON_ERROR_STOP=1 …, "+
			"see docs/postgresql.md), or run queen once with QUEEN_APPLY_SCHEMA=1 as the schema's owner",
			ErrUnsupportedConfig, err)
	}
	if err != nil {
		return fmt.Errorf("daemon: check schema: %w", err)
	}
	return nil
}

// buildIndexes builds the indexes the schema creates concurrently, in the background,
// until ctx is done. With QUEEN_APPLY_SCHEMA=0 it builds nothing: it logs, once, each
// index the builder would build, with the statement its owner can run.
func (d *daemon) buildIndexes(ctx context.Context) error {
	logger := d.logger.With("component", "schema")
	if !d.cfg.ApplySchema {
		reportMissingIndexes(ctx, d.store, logger)
		return nil
	}
	stop := d.store.StartIndexBuild(ctx, logger)
	<-ctx.Done()
	stop()
	return nil
}

// reportMissingIndexes logs a warning for each index a broker that applies no DDL
// leaves unbuilt: every query works without them, more slowly.
func reportMissingIndexes(ctx context.Context, st *store.Store, logger *slog.Logger) {
	missing, err := st.MissingIndexes(ctx)
	if err != nil {
		if ctx.Err() == nil {
			logger.Warn("could not list the indexes to build", "err", err)
		}
		return
	}
	for _, ix := range missing {
		logger.Warn("index missing; QUEEN_APPLY_SCHEMA=0 builds none: have the schema's owner run the statement "+
			"(queries work without it, more slowly)", "table", ix.Table, "index", ix.Index, "invalid", ix.Invalid,
			"statement", ix.SQL)
	}
}
