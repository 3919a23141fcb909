package store

import (
	"context"

	"github.com/queenmq/queen/internal/schema"
)

// CheckSchema checks, on one pooled connection and changing nothing, that the database
// holds the embedded schema or a newer one (see schema.Check): for a broker whose role
// may not run DDL. A missing or older schema is a *schema.NotAppliedError; an
// unreachable database is queue.ErrUnavailable.
func (s *Store) CheckSchema(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return interpretError(err)
	}
	defer conn.Release()
	return interpretError(schema.Check(ctx, conn.Conn()))
}

// MissingIndexes lists the indexes the index builder would build, changing nothing
// (see schema.MissingIndexes): what a broker that applies no DDL reports instead of
// building them.
func (s *Store) MissingIndexes(ctx context.Context) ([]schema.MissingIndex, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	defer conn.Release()
	missing, err := schema.MissingIndexes(ctx, conn.Conn())
	return missing, interpretError(err)
}
