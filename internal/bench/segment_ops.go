package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// segStore runs the segment prototype's statements (segment.go) on the run's database
// with one packing.
type segStore struct {
	db      *database
	packing segPacking
	claimQ  string
}

func newSegStore(d *database, p segPacking) *segStore {
	return &segStore{db: d, packing: p, claimQ: sqlSegClaim(p)}
}

// create (re)creates the prototype's tables with n partitions and a cursor per group,
// and returns the partition ids.
func (s *segStore) create(ctx context.Context, n int, groups []string) ([]string, error) {
	if err := s.db.dropSegments(ctx); err != nil {
		return nil, err
	}
	if _, err := s.db.pool.Exec(ctx, sqlSegSchema); err != nil {
		return nil, fmt.Errorf("create the segment tables: %w", err)
	}
	rows, err := s.db.pool.Query(ctx, sqlSegPartitions, n)
	if err != nil {
		return nil, fmt.Errorf("create segment partitions: %w", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("create segment partitions: %w", err)
	}
	if _, err := s.db.pool.Exec(ctx, sqlSegCursors, groups); err != nil {
		return nil, fmt.Errorf("create segment cursors: %w", err)
	}
	return pids, s.analyze(ctx)
}

func (s *segStore) analyze(ctx context.Context) error {
	if _, err := s.db.pool.Exec(ctx, sqlSegAnalyze); err != nil {
		return fmt.Errorf("analyze the segment tables: %w", err)
	}
	return nil
}

// dropSegments removes the prototype's schema.
func (d *database) dropSegments(ctx context.Context) error {
	if _, err := d.pool.Exec(ctx, sqlSegDrop); err != nil {
		return fmt.Errorf("drop the segment tables: %w", err)
	}
	return nil
}

// segBatch builds the parameters of one push of the packing.
type segBatch struct {
	ids      *queue.IDGenerator
	packing  segPacking
	msgIDs   []string
	txids    []string
	payloads []string
	doc      []byte
}

func newSegBatch(ids *queue.IDGenerator, p segPacking) *segBatch {
	return &segBatch{ids: ids, packing: p}
}

// args returns the parameters of the packing's push of payloads into partition pid.
// Every message gets a fresh id and transaction id, as a push without transaction ids.
func (b *segBatch) args(pid string, payloads []string) []any {
	n := len(payloads)
	b.msgIDs, b.txids = b.msgIDs[:0], b.txids[:0]
	for range n {
		b.msgIDs, b.txids = append(b.msgIDs, b.ids.New()), append(b.txids, b.ids.New())
	}
	if b.packing == segArrays {
		b.payloads = append(b.payloads[:0], payloads...)
		return []any{pid, n, b.msgIDs, b.txids, b.payloads}
	}
	d := append(b.doc[:0], '[')
	for i, p := range payloads {
		if i > 0 {
			d = append(d, ',')
		}
		d = append(d, `{"i":"`...)
		d = append(d, b.msgIDs[i]...)
		d = append(d, `","t":"`...)
		d = append(d, b.txids[i]...)
		d = append(d, `","p":`...)
		d = append(d, p...)
		d = append(d, '}')
	}
	b.doc = append(d, ']')
	return []any{pid, n, string(b.doc)}
}

// pushSQL is the packing's push statement.
func (s *segStore) pushSQL() string {
	if s.packing == segJSONB {
		return sqlSegPushJSONB
	}
	return sqlSegPushArrays
}

// push appends one segment of payloads to partition pid and returns its first offset.
func (s *segStore) push(ctx context.Context, b *segBatch, pid string, payloads []string) (int64, error) {
	var first int64
	err := s.db.pool.QueryRow(ctx, s.pushSQL(), b.args(pid, payloads)...).Scan(&first)
	return first, err
}

// fill stores total messages in pids as the raw fill does (consecutive runs per
// partition, fillPartition), in segments of at most segment messages, pipelined in
// one transaction: the same push statement, unmeasured.
func (s *segStore) fill(ctx context.Context, pids []string, total, segment int, payload string) error {
	counts := make([]int, len(pids))
	for i := range total {
		counts[fillPartition(i, total, len(pids))]++
	}
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("segment fill: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	ids := queue.NewIDGenerator()
	var batch pgx.Batch
	flush := func() error {
		if batch.Len() == 0 {
			return nil
		}
		err := tx.SendBatch(ctx, &batch).Close()
		batch = pgx.Batch{}
		return err
	}
	payloads := make([]string, segment)
	for i := range payloads {
		payloads[i] = payload
	}
	for i, pid := range pids {
		for left := counts[i]; left > 0; left -= segment {
			b := newSegBatch(ids, s.packing)
			batch.Queue(s.pushSQL(), b.args(pid, payloads[:min(segment, left)])...)
			if batch.Len() == 500 {
				if err := flush(); err != nil {
					return fmt.Errorf("segment fill: %w", err)
				}
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("segment fill: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("segment fill: %w", err)
	}
	return s.analyze(ctx)
}

// pushOp pushes batch messages per statement into one partition, statement after
// statement into the next partition of rr.
func (s *segStore) pushOp(pids []string, rr *roundRobin, payload string, batch, workers int) op {
	ids := queue.NewIDGenerator()
	bs := make([]*segBatch, workers)
	for w := range bs {
		bs[w] = newSegBatch(ids, s.packing)
	}
	payloads := make([]string, batch)
	for i := range payloads {
		payloads[i] = payload
	}
	return func(ctx context.Context, w int) (int, error) {
		_, err := s.push(ctx, bs[w], pids[rr.take()], payloads)
		return batch, err
	}
}

// segMsg is one message a claim read.
type segMsg struct {
	offset  int64
	id      string
	payload string
}

// segRead is what transaction 1 of the cycle read: the claimed partition ("" when
// none was due) and its messages in offset order.
type segRead struct {
	partition string
	msgs      []segMsg
}

// next is the offset the ack moves the cursor to.
func (r segRead) next() int64 { return r.msgs[len(r.msgs)-1].offset + 1 }

// claim runs transaction 1 of the cycle for worker: choose, lease, read up to batch
// messages of group.
func (s *segStore) claim(ctx context.Context, group string, batch int, worker string) (segRead, error) {
	var r segRead
	rows, err := s.db.pool.Query(ctx, s.claimQ, group, batch, worker)
	if err != nil {
		return r, err
	}
	defer rows.Close()
	var (
		off         *int64
		id, payload *string
		txid        *string
	)
	for rows.Next() {
		if err := rows.Scan(&r.partition, &off, &id, &txid, &payload); err != nil {
			return r, err
		}
		if off != nil && id != nil && payload != nil {
			r.msgs = append(r.msgs, segMsg{offset: *off, id: *id, payload: *payload})
		}
	}
	return r, rows.Err()
}

// ack runs transaction 2: move the cursor past what r read and clear worker's lease
// (or, when r read nothing, only clear the lease). It reports whether worker still
// held the lease.
func (s *segStore) ack(ctx context.Context, r segRead, group, worker string) (bool, error) {
	var rows pgx.Rows
	var err error
	if len(r.msgs) == 0 {
		rows, err = s.db.pool.Query(ctx, sqlSegRelease, r.partition, group, worker)
	} else {
		rows, err = s.db.pool.Query(ctx, sqlSegAck, r.partition, group, r.next(), worker)
	}
	if err != nil {
		return false, err
	}
	n, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return len(n) == 1, err
}

// cycleOp returns the prototype's two-commit cycle (claim, then ack) for worker w of
// group; seen, when not nil, is called with each claim's read before its ack (while
// the partition is still leased to w).
func (s *segStore) cycleOp(group string, batch int, seen func(segRead)) op {
	return func(ctx context.Context, w int) (int, error) {
		worker := "bench-seg-" + strconv.Itoa(w)
		r, err := s.claim(ctx, group, batch, worker)
		if err != nil || r.partition == "" {
			return 0, err
		}
		if seen != nil {
			seen(r)
		}
		if _, err := s.ack(ctx, r, group, worker); err != nil {
			return 0, err
		}
		return len(r.msgs), nil
	}
}

// mixedOp runs producers (workers 0…producers-1, push, counted in pushed) and
// consumers (the others, consume) at once. A consumer that finds nothing waits
// idle before it looks again, as a long-poll would, so that idle consumers do not
// take the CPU the producers need. Only consumed messages count.
func mixedOp(producers int, push, consume op, idle time.Duration, pushed *atomic.Int64) op {
	return func(ctx context.Context, w int) (int, error) {
		if w < producers {
			n, err := push(ctx, w)
			pushed.Add(int64(n))
			return 0, err
		}
		n, err := consume(ctx, w)
		if err != nil || n > 0 {
			return n, err
		}
		t := time.NewTimer(idle)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		return 0, nil
	}
}
