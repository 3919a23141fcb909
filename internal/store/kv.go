package store

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// KVApply runs a validated batch of KV ops for tenant ("" = global scope) in one
// database transaction at now. When a required op loses its precondition the
// transaction is rolled back and the outcome carries Failed instead of Results.
func (s *Store) KVApply(ctx context.Context, tenant string, now time.Time, ops []queue.KVOp) (queue.KVOutcome, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return queue.KVOutcome{}, interpretError(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	out, err := KVApplyTx(ctx, tx, tenant, now, ops)
	if err != nil || out.Failed != nil {
		return out, err
	}
	return out, interpretError(tx.Commit(ctx))
}

// KVApplyTx runs a validated batch of KV ops inside the caller's transaction, with one
// "now" for every op: the single-key ops (get, put, putIfAbsent, delete, incr) first, in
// ascending (ns, key) byte order, ops on one key in input order; then getMany and
// getPrefix in input order, so they see this batch's writes. Every read counts its value
// bytes against queue.KVReadBudget. On a required op's lost precondition it stops and
// returns Failed; the caller must then roll back (nothing of the batch may commit).
func KVApplyTx(ctx context.Context, tx pgx.Tx, tenant string, now time.Time, ops []queue.KVOp) (queue.KVOutcome, error) {
	results := make([]queue.KVResult, len(ops))
	order := make([]int, 0, len(ops))
	var multi []int
	for i, op := range ops {
		results[i] = queue.KVResult{Index: op.Index, Op: op.Op, Kind: op.Kind, Key: op.Key}
		if op.Kind == queue.KVGetMany || op.Kind == queue.KVGetPrefix {
			multi = append(multi, i)
		} else {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(ops[a].NS, ops[b].NS), cmp.Compare(ops[a].Key, ops[b].Key))
	})
	budget := queue.KVReadBudget
	for _, i := range order {
		op, r := ops[i], &results[i]
		if op.Kind == queue.KVGet {
			row, found, err := kvGet(ctx, tx, tenant, op.NS, op.Key, now)
			if err != nil {
				return queue.KVOutcome{}, err
			}
			r.Found, r.Row = found, row
			budget -= row.Bytes
			continue
		}
		if err := kvWrite(ctx, tx, tenant, now, op, r); err != nil {
			return queue.KVOutcome{}, err
		}
		if !r.Applied && op.Required {
			return queue.KVOutcome{Failed: &queue.KVPrecondition{
				FailedIndex: op.Index, Reason: r.Reason, Version: r.Version, Value: r.Value,
			}}, nil
		}
	}
	for _, i := range multi {
		var err error
		if ops[i].Kind == queue.KVGetMany {
			err = kvGetMany(ctx, tx, tenant, now, ops[i], &results[i], &budget)
		} else {
			err = kvGetPrefix(ctx, tx, tenant, now, ops[i], &results[i], &budget)
		}
		if err != nil {
			return queue.KVOutcome{}, err
		}
	}
	return queue.KVOutcome{Results: results}, nil
}

// kvLive is the predicate of a live row at $now (expired rows are absent).
const kvLive = `(expires_at IS NULL OR expires_at > $4)`

func kvGet(ctx context.Context, tx pgx.Tx, tenant, ns, key string, now time.Time) (queue.KVRow, bool, error) {
	row := queue.KVRow{Key: key}
	var value string
	err := tx.QueryRow(ctx, `SELECT value::text, version, expires_at, updated_at FROM queen.kv_entries
		WHERE tenant = $1 AND ns = $2 AND key = $3 AND `+kvLive, tenant, ns, key, now).
		Scan(&value, &row.Version, &row.ExpiresAt, &row.UpdatedAt)
	if err == pgx.ErrNoRows {
		return row, false, nil
	}
	if err != nil {
		return row, false, interpretError(err)
	}
	row.Value, row.Bytes = json.RawMessage(value), len(value)
	return row, true, nil
}

func kvWrite(ctx context.Context, tx pgx.Tx, tenant string, now time.Time, op queue.KVOp, r *queue.KVResult) error {
	kind := op.Kind
	if kind == queue.KVPutIfAbsent {
		kind = queue.KVPut
	}
	var expires *time.Time
	if op.TTL > 0 {
		t := now.Add(op.TTL)
		expires = &t
	}
	var value *string
	if op.Value != nil {
		v := string(op.Value)
		value = &v
	}
	var reason *string
	var out string
	err := tx.QueryRow(ctx, `SELECT o_applied, o_reason, o_value::text, o_version
		FROM queen.kv_write_q1($1, $2, $3, $4, $5::jsonb, $6, $7, $8::numeric, $9::numeric, $10::numeric, $11)`,
		tenant, op.NS, op.Key, kind, value, op.Expect, expires, nullText(op.Delta), nullText(op.Min), nullText(op.Max), now,
	).Scan(&r.Applied, &reason, &out, &r.Version)
	if err != nil {
		return interpretError(err)
	}
	if reason != nil {
		r.Reason = *reason
	}
	r.Value = json.RawMessage(out)
	return nil
}

func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func kvGetMany(ctx context.Context, tx pgx.Tx, tenant string, now time.Time, op queue.KVOp, r *queue.KVResult, budget *int) error {
	rows, err := tx.Query(ctx, `SELECT key, value::text, version, expires_at, updated_at FROM queen.kv_entries
		WHERE tenant = $1 AND ns = $2 AND key = ANY($3::text[]) AND `+kvLive+` ORDER BY key`,
		tenant, op.NS, op.Keys, now)
	if err != nil {
		return interpretError(err)
	}
	found, err := kvScanRows(rows)
	if err != nil {
		return err
	}
	r.Rows = []queue.KVRow{}
	cut := "" // the first key not answered, when the budget ran out
	for _, row := range found {
		if *budget <= 0 {
			r.Truncated, cut = true, row.Key
			break
		}
		*budget -= row.Bytes
		r.Rows = append(r.Rows, row)
	}
	have := make(map[string]bool, len(r.Rows))
	for _, row := range found {
		have[row.Key] = true
	}
	r.Missing = []string{}
	seen := make(map[string]bool, len(op.Keys))
	for _, k := range op.Keys {
		if have[k] || seen[k] || (r.Truncated && k >= cut) {
			continue
		}
		seen[k] = true
		r.Missing = append(r.Missing, k)
	}
	return nil
}

func kvGetPrefix(ctx context.Context, tx pgx.Tx, tenant string, now time.Time, op queue.KVOp, r *queue.KVResult, budget *int) error {
	rows, err := tx.Query(ctx, `SELECT key, value::text, version, expires_at, updated_at FROM queen.kv_entries
		WHERE tenant = $1 AND ns = $2 AND key >= $3 AND starts_with(key, $3) AND key > $5 AND `+kvLive+`
		ORDER BY key LIMIT $6`,
		tenant, op.NS, op.Prefix, now, op.After, op.Limit+1)
	if err != nil {
		return interpretError(err)
	}
	found, err := kvScanRows(rows)
	if err != nil {
		return err
	}
	r.KeysOnly = op.KeysOnly
	r.Rows, r.Truncated, r.NextAfter = kvPage(found, op.Limit, op.KeysOnly, budget)
	return nil
}

// kvPage cuts a page from found (up to limit+1 rows in key order): at most limit
// rows, stopping after the row that exhausts budget (which is included). truncated
// says more rows exist or the budget stopped the page; nextAfter is then the last key.
func kvPage(found []queue.KVRow, limit int, keysOnly bool, budget *int) (page []queue.KVRow, truncated bool, nextAfter *string) {
	page = []queue.KVRow{}
	for i, row := range found {
		if i == limit {
			truncated = true
			break
		}
		page = append(page, row)
		if !keysOnly {
			*budget -= row.Bytes
			if *budget <= 0 && i+1 < len(found) {
				truncated = true
				break
			}
		}
	}
	if truncated && len(page) > 0 {
		k := page[len(page)-1].Key
		nextAfter = &k
	}
	return page, truncated, nextAfter
}

func kvScanRows(rows pgx.Rows) ([]queue.KVRow, error) {
	var out []queue.KVRow
	for rows.Next() {
		var row queue.KVRow
		var value string
		if err := rows.Scan(&row.Key, &value, &row.Version, &row.ExpiresAt, &row.UpdatedAt); err != nil {
			rows.Close()
			return nil, interpretError(err)
		}
		row.Value, row.Bytes = json.RawMessage(value), len(value)
		out = append(out, row)
	}
	return out, interpretError(rows.Err())
}
