package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// rawQueue creates a queue with partitions named p0…p(n-1), the way push_q2 would,
// and returns the partition ids in name order.
func (d *database) rawQueue(ctx context.Context, name string, n int) ([]string, error) {
	var qid string
	if err := d.pool.QueryRow(ctx, sqlRawQueue, name).Scan(&qid); err != nil {
		return nil, fmt.Errorf("create raw queue: %w", err)
	}
	rows, err := d.pool.Query(ctx, sqlRawPartitions, qid, n)
	if err != nil {
		return nil, fmt.Errorf("create raw partitions: %w", err)
	}
	defer rows.Close()
	ids := make([]string, n)
	for rows.Next() {
		var id, pname string
		if err := rows.Scan(&id, &pname); err != nil {
			return nil, err
		}
		var i int
		if _, err := fmt.Sscanf(pname, "p%d", &i); err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("unexpected raw partition %q", pname)
		}
		ids[i] = id
	}
	return ids, rows.Err()
}

// rawInserter builds the arrays of one multi-row insert.
type rawInserter struct {
	ids    *queue.IDGenerator
	msgIDs []string
	txids  []string
	pids   []string
	bodies []string
}

func newRawInserter(ids *queue.IDGenerator, payload string, batch int) *rawInserter {
	ri := &rawInserter{ids: ids, msgIDs: make([]string, batch), txids: make([]string, batch),
		pids: make([]string, batch), bodies: make([]string, batch)}
	for i := range ri.bodies {
		ri.bodies[i] = payload
	}
	return ri
}

// args renders the parameters of sqlRawInsert for one batch; pid(i) gives the
// partition id of row i.
func (ri *rawInserter) args(pid func(i int) string) []any {
	for i := range ri.msgIDs {
		ri.msgIDs[i], ri.txids[i], ri.pids[i] = ri.ids.New(), ri.ids.New(), pid(i)
	}
	return []any{ri.msgIDs, ri.txids, ri.pids, ri.bodies}
}

// insert stores one batch; pid(i) gives the partition id of row i.
func (ri *rawInserter) insert(ctx context.Context, d *database, pid func(i int) string) error {
	_, err := d.pool.Exec(ctx, sqlRawInsert, ri.args(pid)...)
	return err
}

// rawInsertOp inserts batch rows per statement, all into one partition, statement
// after statement into the next partition of rr (whichever connection runs it).
func (d *database) rawInsertOp(pids []string, rr *roundRobin, payload string, batch, workers int) op {
	ids := queue.NewIDGenerator()
	ins := make([]*rawInserter, workers)
	for w := range ins {
		ins[w] = newRawInserter(ids, payload, batch)
	}
	return func(ctx context.Context, w int) (int, error) {
		pid := pids[rr.take()]
		return batch, ins[w].insert(ctx, d, func(int) string { return pid })
	}
}

// rawFill stores total messages in the partitions pids, as the broker fill does
// (fillPartition),
// in batches of 1000, then records the partition heads and a cursor per group (none
// for an empty groups), as the broker's push and first pop would. All in one
// transaction: messages without a head are what the broker's lookup reconcile job
// repairs, and it must not find any (the broker's pushes never leave one).
func (d *database) rawFill(ctx context.Context, queueName string, pids []string, total int, payload string, groups []string) error {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("raw fill: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	ids := queue.NewIDGenerator()
	const batch = 1000
	for off := 0; off < total; off += batch {
		ri := newRawInserter(ids, payload, min(batch, total-off))
		if _, err := tx.Exec(ctx, sqlRawInsert, ri.args(func(i int) string { return pids[fillPartition(off+i, total, len(pids))] })...); err != nil {
			return fmt.Errorf("raw fill: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, sqlRawFillHeads, queueName); err != nil {
		return fmt.Errorf("raw fill lookup: %w", err)
	}
	if len(groups) > 0 {
		if _, err := tx.Exec(ctx, sqlRawFillCursors, queueName, groups); err != nil {
			return fmt.Errorf("raw fill cursors: %w", err)
		}
		if _, err := tx.Exec(ctx, sqlRawFillReady, queueName, groups); err != nil {
			return fmt.Errorf("raw fill ready rows: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("raw fill: %w", err)
	}
	return d.analyze(ctx)
}

// rawClaim1Op returns the one-statement cycle (sqlRawClaim1) for worker w,
// consuming for groups[w % len(groups)].
func (d *database) rawClaim1Op(queueName string, groups []string, batch int) op {
	return func(ctx context.Context, w int) (int, error) {
		rows, err := d.pool.Query(ctx, sqlRawClaim1, queueName, groups[w%len(groups)], batch)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		n := 0
		var id, txid string
		var payload []byte
		for rows.Next() {
			if err := rows.Scan(&id, &txid, &payload); err != nil {
				return 0, err
			}
			n++
		}
		return n, rows.Err()
	}
}

// rawTwoCommitOp returns the two-commit cycle for worker w, consuming for
// groups[w % len(groups)]: sqlRawClaimLease (claim, lease, read, commit), then
// sqlRawAdvance (advance, clear the lease, commit). It is the ceiling of the pop+ack
// cases: the same two commits, without HTTP, JSON, plpgsql and the ack's checks.
func (d *database) rawTwoCommitOp(queueName string, groups []string, batch int) op {
	return func(ctx context.Context, w int) (int, error) {
		lease := "bench-raw-" + strconv.Itoa(w)
		r, err := d.rawClaimLease(ctx, queueName, groups[w%len(groups)], batch, lease)
		switch {
		case err != nil:
			return 0, err
		case r.cursor == "":
			return 0, nil // nothing to claim right now
		case r.n == 0:
			_, err := d.pool.Exec(ctx, sqlRawRelease, r.cursor, lease)
			return 0, err
		}
		_, err = d.pool.Exec(ctx, sqlRawAdvance, r.cursor, r.lastAt, r.lastID, r.n, lease)
		return r.n, err
	}
}

// rawRead is what transaction 1 of the two-commit cycle read: the claimed cursor row
// ("" when none was claimed), the last message and the number of messages.
type rawRead struct {
	cursor, lastID string
	lastAt         time.Time
	n              int
}

// rawClaimLease runs transaction 1 of the two-commit cycle for lease.
func (d *database) rawClaimLease(ctx context.Context, queueName, group string, batch int, lease string) (rawRead, error) {
	var r rawRead
	rows, err := d.pool.Query(ctx, sqlRawClaimLease, queueName, group, batch, lease)
	if err != nil {
		return r, err
	}
	defer rows.Close()
	var (
		cursor  string
		id      *string
		txid    *string
		payload []byte
		created *time.Time
	)
	for rows.Next() {
		if err := rows.Scan(&cursor, &id, &txid, &payload, &created); err != nil {
			return r, err
		}
		r.cursor = cursor
		if id != nil && created != nil {
			r.lastID, r.lastAt = *id, *created
			r.n++
		}
	}
	return r, rows.Err()
}
