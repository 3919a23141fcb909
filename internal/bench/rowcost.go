package bench

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queenmq/queen/internal/queue"
)

// The -rowcost mode measures what each part of a pushed message's row costs
// PostgreSQL: the raw insert (sqlRawRowInsert) into copies of queen.messages that each
// leave one part out (the foreign key, one secondary index, everything but the primary
// key), and into the full copy plus the other writes of a push (dedup, partition head,
// ready rows, the advisory locks). No broker runs: the scratch database gets the
// schema from `queen schema`.

// rowVariant is one copy of queen.messages and what is written into it.
type rowVariant struct {
	name  string
	about string
	// indexes are the source indexes the copy has; fk: it has upstream's foreign key to
	// queen.partitions (upstreamPartitionKey).
	indexes []sourceIndex
	fk      bool
	// push: the statement is rowCostPushSQL (locks: with the advisory locks), not the
	// raw insert.
	push, locks bool
	// copy: the rows go in by COPY FROM STDIN in binary, not the raw insert.
	copy bool
}

func (v rowVariant) table() string { return rowCostSchema + "." + v.name }

// sourceIndex is an index of the table being copied.
type sourceIndex struct {
	name            string
	primary, unique bool
	// body is the definition from USING on ("USING btree (id)"), the same on the copy.
	body string
}

// rowCostCase is one load: batch rows per statement, statements cycling over
// partitions (its name; -quick creates Options.scaled of it).
type rowCostCase struct{ batch, partitions int }

func (c rowCostCase) name() string { return fmt.Sprintf("b%d_p%d", c.batch, c.partitions) }

// rowCostCases: b1, b10 and b100 over 100 partitions, and b10 over 10 000.
func rowCostCases() []rowCostCase {
	return []rowCostCase{{1, 100}, {10, 100}, {100, 100}, {10, 10_000}}
}

// rowCostResult is one variant measured in one case.
type rowCostResult struct {
	c       rowCostCase
	variant rowVariant
	m       measurement
	// counted is the rows the statements reported inserted over the whole run
	// (warm-up included); stored is the rows in the variant's table after it. The
	// two are equal: no statement is cut off by the window's end.
	counted, stored int64
}

// rowCostParams configures measureRowCost.
type rowCostParams struct {
	win     window
	workers int
	payload string
	cases   []rowCostCase
	// rounds: each case measures every variant this many times, in a rotated order
	// each round; the report takes the median.
	rounds int
	// scaled gives the partitions to create for a case's nominal count.
	scaled func(int) int
	logf   func(format string, args ...any)
}

// rowCost is the -rowcost mode: a scratch database with the broker's schema, the
// variants measured in every case, reported as msg/s with the full variant of the
// same case as the reference ("ceiling" column) and the ratio to it.
func (r *runner) rowCost(ctx context.Context) (*Report, error) {
	r.logf("creating a scratch database")
	db, err := createDatabase(ctx, r.opts.DSN, r.opts.Producers+2)
	if err != nil {
		return nil, err
	}
	r.db = db
	defer func() {
		if err := db.drop(ctx); err != nil {
			r.logf("warning: %v", err)
		}
	}()
	if err := applySchema(ctx, r.opts.Binary, db); err != nil {
		return nil, err
	}
	if r.rep.Profile, err = db.profile(ctx); err != nil {
		return nil, err
	}
	if r.rep.Env, err = r.environment(ctx); err != nil {
		return nil, err
	}
	r.logf("profile: %s", r.rep.Profile)
	rounds := 3
	if r.opts.Quick {
		rounds = 1
	}
	res, err := measureRowCost(ctx, db, rowCostParams{
		win: r.win, workers: r.opts.Producers, payload: r.payload, cases: rowCostCases(), rounds: rounds,
		scaled: r.opts.scaled, logf: r.logf,
	})
	if err != nil {
		return nil, err
	}
	r.add(rowCostReport(res, r.opts.Producers)...)
	return r.rep, nil
}

// applySchema applies the broker's schema, as `binary schema` prints it, to d.
func applySchema(ctx context.Context, binary string, d *database) error {
	script, err := exec.CommandContext(ctx, binary, "schema").Output()
	if err != nil {
		return fmt.Errorf("%s schema: %w", binary, err)
	}
	if _, err := d.pool.Exec(ctx, string(script)); err != nil {
		return fmt.Errorf("apply the schema: %w", err)
	}
	return nil
}

// measureRowCost creates the variants and measures each in each case, the cases in
// order and every variant of a case back to back, p.rounds times (round k starts at
// variant k, so that no variant always follows the same one), each into an emptied
// table. Shared machines drift over minutes: measuring the variants of a case close
// together and in rotation keeps that drift out of their ratios, as far as it can be.
// d must hold the broker's schema.
func measureRowCost(ctx context.Context, d *database, p rowCostParams) ([]rowCostResult, error) {
	variants, err := createRowVariants(ctx, d)
	if err != nil {
		return nil, err
	}
	p.logf("rowcost: %d variants in %d cases, %d rounds: %s of windows", len(variants), len(p.cases), p.rounds,
		time.Duration(len(variants)*len(p.cases)*p.rounds)*(p.win.warmup+p.win.duration))
	queues := map[int]rowCostQueue{}
	var out []rowCostResult
	for _, c := range p.cases {
		q, ok := queues[c.partitions]
		if !ok {
			if q, err = newRowCostQueue(ctx, d, c.partitions, p.scaled(c.partitions)); err != nil {
				return nil, err
			}
			queues[c.partitions] = q
		}
		for round := range p.rounds {
			for i := range variants {
				v := variants[(i+round)%len(variants)]
				res, err := measureRowVariant(ctx, d, p, c, v, q)
				if err != nil {
					return nil, fmt.Errorf("rowcost %s %s: %w", c.name(), v.name, err)
				}
				p.logf("  %-44s %s: %.0f msg/s (%d rows)", v.name, c.name(), res.m.rate(), res.stored)
				out = append(out, res)
			}
		}
	}
	return out, nil
}

// rowCostQueue is a queue of queen.queues with its partitions, registered (in
// rowcost.consumers) for one consumer group.
type rowCostQueue struct {
	name, id string
	pids     []string
}

func newRowCostQueue(ctx context.Context, d *database, nominal, n int) (rowCostQueue, error) {
	q := rowCostQueue{name: fmt.Sprintf("bench-rowcost-p%d", nominal)}
	var err error
	if q.pids, err = d.rawQueue(ctx, q.name, n); err != nil {
		return q, err
	}
	if err := d.pool.QueryRow(ctx, `SELECT id::text FROM queen.queues WHERE name = $1`, q.name).Scan(&q.id); err != nil {
		return q, fmt.Errorf("rowcost queue: %w", err)
	}
	if _, err := d.pool.Exec(ctx, sqlRowCostRegister, q.id, queue.QueueModeGroup); err != nil {
		return q, fmt.Errorf("rowcost consumers: %w", err)
	}
	return q, nil
}

// measureRowVariant empties v's tables and runs case c into them for one window.
func measureRowVariant(ctx context.Context, d *database, p rowCostParams, c rowCostCase, v rowVariant, q rowCostQueue) (rowCostResult, error) {
	res := rowCostResult{c: c, variant: v}
	if _, err := d.pool.Exec(ctx, "TRUNCATE "+v.table()+", rowcost.lookup, rowcost.ready"); err != nil {
		return res, err
	}
	sql := rowCostInsertSQL(v.table())
	if v.push {
		sql = rowCostPushSQL(v.table(), v.locks)
	}
	ids := queue.NewIDGenerator()
	ins := make([]*rawInserter, p.workers)
	for w := range ins {
		ins[w] = newRawInserter(ids, p.payload, c.batch)
	}
	rr := newRoundRobin(len(q.pids))
	var counted atomic.Int64
	// A statement the window's end cancelled would have its connection closed under
	// it while the server runs it on, perhaps to a commit no one counts: each runs
	// to its end instead, and the worker stops after it.
	stmtCtx := context.WithoutCancel(ctx)
	op := func(_ context.Context, w int) (int, error) {
		pid := q.pids[rr.take()]
		args := ins[w].args(func(int) string { return pid })
		var n int64
		if v.copy {
			var err error
			if n, err = ins[w].copy(stmtCtx, d, v.table()); err != nil {
				return 0, err
			}
		} else if v.push {
			if err := d.pool.QueryRow(stmtCtx, sql, append(args, q.name, q.id)...).Scan(&n); err != nil {
				return 0, err
			}
		} else {
			tag, err := d.pool.Exec(stmtCtx, sql, args...)
			if err != nil {
				return 0, err
			}
			n = tag.RowsAffected()
		}
		counted.Add(n)
		return int(n), nil
	}
	var err error
	if res.m, err = p.win.run(ctx, p.workers, 0, nil, op); err != nil {
		return res, err
	}
	res.counted = counted.Load()
	if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM "+v.table()).Scan(&res.stored); err != nil {
		return res, err
	}
	if res.stored != res.counted {
		return res, fmt.Errorf("%d rows stored, %d reported inserted", res.stored, res.counted)
	}
	return res, nil
}

// createRowVariants creates schema rowcost with the variant tables, copied from
// queen.messages, and the copies the push variants write besides (rowcost.lookup,
// rowcost.ready, rowcost.consumers, each with every index and foreign key of its
// source). The variants: full (every index and upstream's foreign key, the layout of
// upstream and of queen before it kept the partition rule with triggers),
// copy (full, written by binary COPY), no_fk, no_<index> for each secondary index,
// bare (primary key only), push and push_locked (full, plus the other writes of a push).
func createRowVariants(ctx context.Context, d *database) ([]rowVariant, error) {
	if _, err := d.pool.Exec(ctx, "CREATE SCHEMA "+rowCostSchema); err != nil {
		return nil, fmt.Errorf("rowcost schema: %w", err)
	}
	indexes, err := sourceIndexes(ctx, d, "queen.messages")
	if err != nil {
		return nil, err
	}
	var pk []sourceIndex
	for _, ix := range indexes {
		if ix.primary {
			pk = append(pk, ix)
		}
	}
	variants := []rowVariant{
		{name: "full", about: "every index and upstream's foreign key to queen.partitions", indexes: indexes, fk: true},
		{name: "copy", about: "full, the rows sent by binary COPY instead of the multi-row insert", indexes: indexes, fk: true, copy: true},
		{name: "no_fk", about: "every index, no foreign key to queen.partitions", indexes: indexes},
	}
	for _, ix := range indexes {
		if ix.primary {
			continue
		}
		variants = append(variants, rowVariant{name: "no_" + ix.name, about: "without index " + ix.name + " (" + ix.body + ")",
			indexes: without(indexes, ix.name), fk: true})
	}
	variants = append(variants,
		rowVariant{name: "bare", about: "primary key only: no secondary index, no foreign key", indexes: pk},
		rowVariant{name: "push", about: "full, plus push_q2's dedup (ON CONFLICT), partition head upsert and ready-row upsert",
			indexes: indexes, fk: true, push: true},
		rowVariant{name: "push_locked", about: "push, plus push_q2's two advisory locks and head read for created_at",
			indexes: indexes, fk: true, push: true, locks: true})
	for _, v := range variants {
		var keys []string
		if v.fk {
			keys = []string{upstreamPartitionKey}
		}
		if err := copyTable(ctx, d, "queen.messages", v.table(), v.indexes, keys); err != nil {
			return nil, err
		}
	}
	for src, dst := range map[string]string{"queen.partition_lookup": "rowcost.lookup", "queen.partition_ready": "rowcost.ready",
		"queen.queue_consumers": "rowcost.consumers"} {
		ixs, err := sourceIndexes(ctx, d, src)
		if err != nil {
			return nil, err
		}
		keys, err := sourceForeignKeys(ctx, d, src)
		if err != nil {
			return nil, err
		}
		if err := copyTable(ctx, d, src, dst, ixs, keys); err != nil {
			return nil, err
		}
	}
	return variants, nil
}

func without(indexes []sourceIndex, name string) []sourceIndex {
	var out []sourceIndex
	for _, ix := range indexes {
		if ix.name != name {
			out = append(out, ix)
		}
	}
	return out
}

// upstreamPartitionKey is the foreign key upstream declares from a message to its
// partition. queen keeps the rule with triggers instead (schema 001_tables.sql), and
// its direct push skips their check: the variants with fk measure the key itself.
const upstreamPartitionKey = "FOREIGN KEY (partition_id) REFERENCES queen.partitions(id) ON DELETE CASCADE"

// sourceForeignKeys reads the foreign keys of table from the catalog, as constraint
// definitions.
func sourceForeignKeys(ctx context.Context, d *database, table string) ([]string, error) {
	rows, err := d.pool.Query(ctx, sqlRowCostForeignKeys, table)
	if err != nil {
		return nil, fmt.Errorf("foreign keys of %s: %w", table, err)
	}
	defs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
		var name, def string
		err := row.Scan(&name, &def)
		return def, err
	})
	if err != nil {
		return nil, fmt.Errorf("foreign keys of %s: %w", table, err)
	}
	return defs, nil
}

// sourceIndexes reads the indexes of table from the catalog.
func sourceIndexes(ctx context.Context, d *database, table string) ([]sourceIndex, error) {
	rows, err := d.pool.Query(ctx, sqlRowCostIndexes, table)
	if err != nil {
		return nil, fmt.Errorf("indexes of %s: %w", table, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (sourceIndex, error) {
		var ix sourceIndex
		var def string
		if err := row.Scan(&ix.name, &ix.primary, &ix.unique, &def); err != nil {
			return ix, err
		}
		at := strings.Index(def, " USING ")
		if at < 0 {
			return ix, fmt.Errorf("index %s: unexpected definition %q", ix.name, def)
		}
		ix.body = def[at+1:]
		return ix, nil
	})
	if err != nil {
		return nil, fmt.Errorf("indexes of %s: %w", table, err)
	}
	return out, nil
}

// copyTable creates dst as src's columns, defaults, checks and storage parameters
// (LIKE … INCLUDING ALL EXCLUDING INDEXES), with indexes (the primary key made a
// primary key again) and the foreign keys keys (constraint definitions).
func copyTable(ctx context.Context, d *database, src, dst string, indexes []sourceIndex, keys []string) error {
	short := dst[strings.LastIndexByte(dst, '.')+1:]
	stmts := []string{fmt.Sprintf("CREATE TABLE %s (LIKE %s INCLUDING ALL EXCLUDING INDEXES)", dst, src)}
	var relopts string
	if err := d.pool.QueryRow(ctx, sqlRowCostRelOptions, src).Scan(&relopts); err != nil {
		return fmt.Errorf("storage parameters of %s: %w", src, err)
	}
	if relopts != "" {
		stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s SET (%s)", dst, relopts))
	}
	for i, ix := range indexes {
		name := fmt.Sprintf("%s_i%d", short, i)
		unique := ""
		if ix.unique {
			unique = "UNIQUE "
		}
		stmts = append(stmts, fmt.Sprintf("CREATE %sINDEX %s ON %s %s", unique, name, dst, ix.body))
		if ix.primary {
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s_pkey PRIMARY KEY USING INDEX %s", dst, short, name))
		}
	}
	for i, def := range keys {
		stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s_fk%d %s", dst, short, i, def))
	}
	for _, s := range stmts {
		if _, err := d.pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("copy %s to %s: %s: %w", src, dst, s, err)
		}
	}
	return nil
}

// rowCostReport renders the results: rowcost_b<batch>_p<partitions>_<variant> in
// msg/s (batch rows per statement, all into one partition, statements round robin
// over the partitions), the median of the variant's rounds in the case, with the
// full variant's median in the same case as the ceiling. In the order of first
// appearance.
func rowCostReport(res []rowCostResult, workers int) []Result {
	type key struct {
		c       rowCostCase
		variant string
	}
	rates := map[key][]float64{}
	var order []rowCostResult
	for _, r := range res {
		k := key{r.c, r.variant.name}
		if _, seen := rates[k]; !seen {
			order = append(order, r)
		}
		rates[k] = append(rates[k], r.m.rate())
	}
	out := make([]Result, 0, len(order))
	for _, r := range order {
		rs := rates[key{r.c, r.variant.name}]
		note := fmt.Sprintf("%s; %d conns, median of %d (ceiling: full)", r.variant.about, workers, len(rs))
		out = append(out, throughput("rowcost_"+r.c.name()+"_"+r.variant.name, median(rs), median(rates[key{r.c, "full"}]), note))
	}
	return out
}

// median returns the middle value of vs (the mean of the two middle ones for an even
// count), 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// copy stores the batch the last args call rendered into table by binary COPY FROM
// STDIN and returns the rows copied. It writes the raw insert's columns; created_at is
// left to its default (now(), the statement's time in an autocommitted COPY, as the raw
// insert's statement_timestamp()).
func (ri *rawInserter) copy(ctx context.Context, d *database, table string) (int64, error) {
	schema, name, _ := strings.Cut(table, ".")
	columns := []string{"id", "transaction_id", "partition_id", "payload", "trace_id", "is_encrypted", "producer_sub"}
	return d.pool.CopyFrom(ctx, pgx.Identifier{schema, name}, columns,
		pgx.CopyFromSlice(len(ri.msgIDs), func(i int) ([]any, error) {
			var id, pid pgtype.UUID
			if err := id.Scan(ri.msgIDs[i]); err != nil {
				return nil, err
			}
			if err := pid.Scan(ri.pids[i]); err != nil {
				return nil, err
			}
			return []any{id, ri.txids[i], pid, ri.bodies[i], nil, false, nil}, nil
		}))
}
