package store

import (
	"context"
	"fmt"
	"time"
)

// LookupReconcile is one batch of the partition lookup repair (queen.lookup_reconcile_q1).
type LookupReconcile struct {
	// Scanned partitions were examined, Repaired rows written: partition lookup rows,
	// and the ready rows of wildcard consumers that had work there but no row.
	Scanned, Repaired int
	// Last is the last partition id of a full-pass batch: the next batch starts after it.
	Last string
}

// LookupReconcileBatch repairs missing and stale partition lookup rows. With full it
// examines up to limit partitions in id order after after ("" = from the first);
// otherwise the partitions with messages but no lookup row, and rows updated since
// since.
func (s *Store) LookupReconcileBatch(ctx context.Context, full bool, after string, limit int, since time.Time) (LookupReconcile, error) {
	var r LookupReconcile
	var afterID, last *string
	if after != "" {
		afterID = &after
	}
	err := s.pool.QueryRow(ctx, `SELECT o_scanned, o_repaired, o_last::text FROM queen.lookup_reconcile_q1($1, $2::uuid, $3, $4)`,
		full, afterID, limit, since).Scan(&r.Scanned, &r.Repaired, &last)
	if err != nil {
		return r, fmt.Errorf("store: lookup reconcile: %w", interpretError(err))
	}
	if last != nil {
		r.Last = *last
	}
	return r, nil
}
