package store

import (
	"context"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// KVNamespaces lists tenant's namespaces in byte order with their row counts
// (expired-but-unswept rows included).
func (s *Store) KVNamespaces(ctx context.Context, tenant string) ([]queue.KVNamespace, error) {
	rows, err := s.pool.Query(ctx, `SELECT ns, count(*) FROM queen.kv_entries
		WHERE tenant = $1 GROUP BY ns ORDER BY ns`, tenant)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []queue.KVNamespace{}
	for rows.Next() {
		var n queue.KVNamespace
		if err := rows.Scan(&n.Name, &n.Keys); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, n)
	}
	return out, interpretError(rows.Err())
}

// KVList returns a console page of one of tenant's namespaces at now: keys starting
// with req.Prefix (literally; "" = all) after req.After, in byte order, at most
// req.Limit rows and queue.KVReadBudget value bytes (the row crossing it included).
// Expired rows are left out unless req.IncludeExpired; each row says whether it is.
func (s *Store) KVList(ctx context.Context, tenant string, now time.Time, req queue.KVListRequest) (queue.KVListPage, error) {
	// The prefix and the cursor are free text, and keys hold no NUL and at most
	// queue.KVMaxKeyBytes bytes: a prefix holding a NUL or longer than that starts no
	// key (an empty page, no query), and a cursor ends at its first NUL (a key after
	// "a\x00…" in byte order is a key after "a"; PostgreSQL's text holds no NUL).
	if strings.IndexByte(req.Prefix, 0) >= 0 || len(req.Prefix) > queue.KVMaxKeyBytes {
		return queue.KVListPage{}, nil
	}
	if i := strings.IndexByte(req.After, 0); i >= 0 {
		req.After = req.After[:i]
	}
	rows, err := s.pool.Query(ctx, `SELECT key, value::text, version, expires_at, updated_at FROM queen.kv_entries
		WHERE tenant = $1 AND ns = $2 AND key >= $3 AND starts_with(key, $3) AND key > $5
		  AND ($7 OR expires_at IS NULL OR expires_at > $4)
		ORDER BY key LIMIT $6`,
		tenant, req.NS, req.Prefix, now, req.After, req.Limit+1, req.IncludeExpired)
	if err != nil {
		return queue.KVListPage{}, interpretError(err)
	}
	found, err := kvScanRows(rows)
	if err != nil {
		return queue.KVListPage{}, err
	}
	budget := queue.KVReadBudget
	var page queue.KVListPage
	page.Rows, page.Truncated, page.NextAfter = kvPage(found, req.Limit, req.KeysOnly, &budget)
	for i := range page.Rows {
		r := &page.Rows[i]
		r.Expired = r.ExpiresAt != nil && !r.ExpiresAt.After(now)
		if !req.KeysOnly {
			page.Bytes += r.Bytes
		}
	}
	return page, nil
}

// KVSweepBatch deletes at most limit rows expired at now and returns how many.
func (s *Store) KVSweepBatch(ctx context.Context, now time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM queen.kv_entries e USING (
			SELECT tenant, ns, key FROM queen.kv_entries
			 WHERE expires_at IS NOT NULL AND expires_at <= $1
			 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) d
		WHERE e.tenant = d.tenant AND e.ns = d.ns AND e.key = d.key AND e.expires_at <= $1`, now, limit)
	if err != nil {
		return 0, interpretError(err)
	}
	return tag.RowsAffected(), nil
}
