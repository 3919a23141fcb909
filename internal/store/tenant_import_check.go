package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/queue"
)

// Checks of imported rows beyond what their columns' types take: values PostgreSQL
// stores but the broker's reads cannot answer, so that one imported row would turn
// every listing of queues or groups into a 500.

// tenantStamp is a timestamp column of a table an import writes; required when it has
// a default, which every row the broker writes takes (a row imported with NULL there
// would break the views that read it).
type tenantStamp struct {
	name     string
	required bool
}

// tenantCheckTimestamps refuses rows (a JSON array of to_jsonb rows of tt) holding a
// timestamp that is infinite or outside the years 0001–9999 in UTC, or NULL in a
// required one, naming the key and column: no client can parse it back, and the
// broker cannot scan or subtract it.
func tenantCheckTimestamps(ctx context.Context, tx pgx.Tx, tt tenantTable, stamps []tenantStamp, rows any) error {
	if len(stamps) == 0 {
		return nil
	}
	vals := make([]string, len(stamps))
	for i, c := range stamps {
		vals[i] = fmt.Sprintf("(%d, r.%s::timestamptz, %t)", i, pgx.Identifier{c.name}.Sanitize(), c.required)
	}
	sql := fmt.Sprintf(`SELECT x.i FROM jsonb_populate_recordset(NULL::%s, $1::jsonb) r
        CROSS JOIN LATERAL (VALUES %s) x(i, v, required)
        WHERE CASE WHEN x.v IS NULL THEN x.required
                   ELSE NOT (isfinite(x.v) AND x.v >= '0001-01-01 00:00:00+00' AND x.v < '10000-01-01 00:00:00+00') END
        LIMIT 1`, tt.table, strings.Join(vals, ", "))
	var i int
	err := tx.QueryRow(ctx, sql, rows).Scan(&i)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return tenantInputError("tenant import", tt.key, err)
	case i < 0 || i >= len(stamps):
		return fmt.Errorf("store: timestamp check answered column %d of %d", i, len(stamps))
	}
	field := tt.key + "." + stamps[i].name
	return queue.Invalid(field, "%s must be a finite time in the years 0001–9999", field)
}

// optionKinds are the JSON kinds of the options record's values, read from the record
// itself: "number" (a 32-bit integer, as the reads cast it), "boolean" or "string".
func optionKinds() map[string]string {
	kinds := make(map[string]string)
	for k, v := range optionsRecord(queue.Options{}) {
		switch v.(type) {
		case int:
			kinds[k] = "number"
		case bool:
			kinds[k] = "boolean"
		case string:
			kinds[k] = "string"
		}
	}
	return kinds
}

// checkOptionsRecords refuses imported queue rows whose queen_options holds a known
// option of the wrong kind (an integer outside 32 bits included), naming it: every
// read of the queue casts it. Keys the broker does not read pass.
func checkOptionsRecords(rows json.RawMessage) error {
	if len(rows) == 0 || string(rows) == "null" {
		return nil
	}
	var queues []struct {
		Options map[string]json.RawMessage `json:"queen_options"`
	}
	if err := json.Unmarshal(rows, &queues); err != nil {
		return queue.Invalid("queues", "queues must be an array of queue rows")
	}
	kinds := optionKinds()
	for i, q := range queues {
		for k, raw := range q.Options {
			kind, ok := kinds[k]
			if !ok || bytes.Equal(raw, []byte("null")) {
				continue
			}
			if !optionOfKind(raw, kind) {
				field := fmt.Sprintf("queues[%d].queen_options.%s", i, k)
				if kind == "number" {
					return queue.Invalid(field, "%s must be an integer of 32 bits", field)
				}
				return queue.Invalid(field, "%s must be a %s", field, kind)
			}
		}
	}
	return nil
}

// optionOfKind reports whether raw, one JSON value, is of kind.
func optionOfKind(raw json.RawMessage, kind string) bool {
	switch kind {
	case "boolean":
		return bytes.Equal(raw, []byte("true")) || bytes.Equal(raw, []byte("false"))
	case "string":
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && n >= math.MinInt32 && n <= math.MaxInt32
}
