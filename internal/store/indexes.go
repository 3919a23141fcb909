package store

import (
	"context"
	"log/slog"

	"github.com/queenmq/queen/internal/schema"
)

// StartIndexBuild runs schema.IndexBuilder in the background, on a session of its own
// (never one of the pool's), and returns stop, which cancels it and waits for it to
// end. Call it once the broker serves: every query works while an index is missing,
// and the builder takes no lock that blocks reads or writes. A build cancelled by stop
// leaves an invalid index, which the next start drops and builds again. A failure is
// logged here and retried by the next start.
func (s *Store) StartIndexBuild(ctx context.Context, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	b := &schema.IndexBuilder{ConnConfig: s.pool.Config().ConnConfig, Logger: logger}
	go func() {
		defer close(done)
		if _, err := b.Run(ctx); err != nil && ctx.Err() == nil {
			logger.Error("index build failed; the next start tries again", "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
