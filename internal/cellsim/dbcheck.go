package cellsim

import (
	"context"
	"fmt"
	"sort"
)

// rowCounts are a tenant's rows in one cell's database.
type rowCounts struct {
	queues, partitions, cursors int
	// loadMessages and loadDistinct are the messages of its load queue and their
	// distinct transaction ids.
	loadMessages, loadDistinct int
}

func (r rowCounts) empty() bool {
	return r == rowCounts{}
}

// tenantRowsSQL counts, per tenant (the prefix of a stored queue name), its queues,
// partitions, consumer cursors and load-queue messages.
var tenantRowsSQL = []struct {
	sql string
	set func(*rowCounts, int, int)
}{
	{`SELECT split_part(q.name, ':', 1), count(*), 0 FROM queen.queues q
		WHERE position(':' IN q.name) > 0 GROUP BY 1`,
		func(r *rowCounts, n, _ int) { r.queues = n }},
	{`SELECT split_part(q.name, ':', 1), count(*), 0 FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
		WHERE position(':' IN q.name) > 0 GROUP BY 1`,
		func(r *rowCounts, n, _ int) { r.partitions = n }},
	{`SELECT split_part(q.name, ':', 1), count(*), 0 FROM queen.partition_consumers c
		JOIN queen.partitions p ON p.id = c.partition_id JOIN queen.queues q ON q.id = p.queue_id
		WHERE position(':' IN q.name) > 0 GROUP BY 1`,
		func(r *rowCounts, n, _ int) { r.cursors = n }},
	{`SELECT split_part(q.name, ':', 1), count(*), count(DISTINCT m.transaction_id) FROM queen.messages m
		JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name LIKE '%:` + loadQueue + `' GROUP BY 1`,
		func(r *rowCounts, n, d int) { r.loadMessages, r.loadDistinct = n, d }},
}

// cellRows reads every tenant's rows in cell c's database.
func cellRows(ctx context.Context, c *Cell) (map[string]rowCounts, error) {
	out := map[string]rowCounts{}
	for _, q := range tenantRowsSQL {
		rows, err := c.DB.Query(ctx, q.sql)
		if err != nil {
			return nil, fmt.Errorf("cell %s: %w", c.Name, err)
		}
		for rows.Next() {
			var (
				tenant string
				n, d   int
			)
			if err := rows.Scan(&tenant, &n, &d); err != nil {
				rows.Close()
				return nil, fmt.Errorf("cell %s: %w", c.Name, err)
			}
			r := out[tenant]
			q.set(&r, n, d)
			out[tenant] = r
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("cell %s: %w", c.Name, err)
		}
	}
	return out, nil
}

// Placement is what the databases say about where tenants live.
type Placement struct {
	// TenantsPerCell is how many tenants each cell holds rows of.
	TenantsPerCell map[string]int
	// Misplaced lists tenants with rows in a cell other than their own, or none in
	// their own; Miscounted tenants whose load queue does not hold each pushed
	// message exactly once; MovedChecked how many moved tenants were checked.
	Misplaced, Miscounted []string
	MovedChecked          int
}

// checkPlacement queries every cell's database: each tenant's rows must be in its
// cell alone, and its load queue there must hold each message it pushed once.
func (s *sim) checkPlacement(ctx context.Context, moved map[string]bool) (Placement, error) {
	p := Placement{TenantsPerCell: map[string]int{}}
	rows := make([]map[string]rowCounts, len(s.cells))
	for i, c := range s.cells {
		r, err := cellRows(ctx, c)
		if err != nil {
			return p, err
		}
		rows[i] = r
		p.TenantsPerCell[c.Name] = len(r)
	}
	for _, t := range s.tenants {
		home := s.cellIndex(t.Cell)
		if moved[t.ID] {
			p.MovedChecked++
		}
		for i, c := range s.cells {
			r := rows[i][t.ID]
			switch {
			case i != home && !r.empty():
				p.Misplaced = append(p.Misplaced, fmt.Sprintf("%s (lives in %s) has rows in %s: %+v", t.ID, t.Cell, c.Name, r))
			case i == home && r.queues == 0:
				p.Misplaced = append(p.Misplaced, fmt.Sprintf("%s has no queue in its cell %s", t.ID, t.Cell))
			case i == home:
				if want := s.history.PushedOf(t.ID); r.loadMessages != want || r.loadDistinct != want {
					p.Miscounted = append(p.Miscounted, fmt.Sprintf("%s in %s: %d messages (%d distinct), %d pushed",
						t.ID, c.Name, r.loadMessages, r.loadDistinct, want))
				}
			}
		}
	}
	sort.Strings(p.Misplaced)
	sort.Strings(p.Miscounted)
	return p, nil
}

// TenantsPerCellTotal is the sum of TenantsPerCell: the number of tenants when each
// has rows in exactly one cell.
func (p Placement) TenantsPerCellTotal() int {
	n := 0
	for _, v := range p.TenantsPerCell {
		n += v
	}
	return n
}
