package schema_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/schema"
)

func TestCheck(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name  string
		setup string // run on a database holding this version's schema
		ok    bool
		want  schema.NotAppliedError // Name, VersionTable, Version and Level are filled in
		text  string
	}{
		{name: "ThisVersion", ok: true},
		{name: "NewerLevel", setup: `INSERT INTO queen.schema_version (version, level) VALUES ('newer', ` +
			`(SELECT max(level) + 1 FROM queen.schema_version)); DELETE FROM queen.schema_version WHERE version <> 'newer'`,
			ok: true},
		{name: "ThisVersionWithoutLevel", setup: `UPDATE queen.schema_version SET level = NULL`, ok: true},
		{name: "BeforeLevels", setup: `UPDATE queen.schema_version SET version = 'older', level = NULL`,
			want: schema.NotAppliedError{Recorded: 1}, text: "records 1 version(s) of an older release"},
		{name: "BeforeTheLevelColumn", setup: `ALTER TABLE queen.schema_version DROP COLUMN level;
			UPDATE queen.schema_version SET version = 'older'`,
			want: schema.NotAppliedError{Recorded: 1}, text: "of an older release"},
		{name: "NothingRecorded", setup: `DELETE FROM queen.schema_version`,
			want: schema.NotAppliedError{}, text: "records no applied version"},
		{name: "NoSchema", setup: `DROP SCHEMA queen CASCADE`,
			want: schema.NotAppliedError{Missing: true}, text: "queen.schema_version does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, pgtest.NewDBURL(t))
			require.NoError(t, err)
			defer conn.Close(ctx)
			if tc.setup != "" {
				_, err = conn.Exec(ctx, tc.setup)
				require.NoError(t, err)
			}
			err = schema.Check(ctx, conn)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			var got *schema.NotAppliedError
			require.ErrorAs(t, err, &got)
			want := tc.want
			want.Name, want.VersionTable, want.Version, want.Level = "schema", "queen.schema_version", schema.Version(), schema.Level
			require.Equal(t, want, *got)
			require.Contains(t, err.Error(), tc.text)
			require.Contains(t, err.Error(), schema.Version(), "the error names the version needed")
		})
	}
}

func TestApplyRecordsTheLevel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDBURL(t))
	require.NoError(t, err)
	defer conn.Close(ctx)

	var level int
	require.NoError(t, conn.QueryRow(ctx, `SELECT level FROM queen.schema_version WHERE version = $1`,
		schema.Version()).Scan(&level))
	require.Equal(t, schema.Level, level)
}

func TestScriptAppliesAndRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDBURL(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DROP SCHEMA queen CASCADE; DROP SCHEMA queen_streams CASCADE`)
	require.NoError(t, err)
	require.ErrorAs(t, schema.Check(ctx, conn), new(*schema.NotAppliedError))

	// The script as one simple-protocol batch, as psql sends each statement of it
	// (internal/daemon's least-privilege test runs it through psql itself).
	_, err = conn.Exec(ctx, schema.Script())
	require.NoError(t, err)
	require.NoError(t, schema.Check(ctx, conn))
	require.NoError(t, schema.Apply(ctx, conn), "a boot after the script finds its version and applies nothing")
}

func TestCheckComparesLevels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDBURL(t))
	require.NoError(t, err)
	defer conn.Close(ctx)

	files := fstest.MapFS{"000.sql": {Data: []byte(`CREATE SCHEMA IF NOT EXISTS lvl;
CREATE TABLE IF NOT EXISTS lvl.schema_version (version text PRIMARY KEY, applied_at timestamptz, level integer);`)}}
	set := func(level int) schema.Set {
		return schema.NewSet(files, 0x4c564c00, "lvl.schema_version", "lvl").Leveled(level)
	}
	require.NoError(t, set(3).Apply(ctx, conn))
	require.NoError(t, set(3).Check(ctx, conn))
	require.NoError(t, set(2).Check(ctx, conn), "a newer schema serves an older program")

	// Pretend level 3 holds other SQL than this Set's: a program that needs level 4
	// finds an older schema.
	_, err = conn.Exec(ctx, `UPDATE lvl.schema_version SET version = 'other'`)
	require.NoError(t, err)
	require.NoError(t, set(3).Check(ctx, conn), "the level suffices whatever the version")
	err = set(4).Check(ctx, conn)
	var got *schema.NotAppliedError
	require.ErrorAs(t, err, &got)
	require.Equal(t, schema.NotAppliedError{Name: "lvl", VersionTable: "lvl.schema_version",
		Version: set(4).Version(), Level: 4, Recorded: 1, FoundLevel: 3}, *got)
	require.EqualError(t, err, "lvl: the database holds schema level 3, older than the level 4 (version "+
		set(4).Version()+") this release needs")
}

func TestMissingIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.NewDBURL(t))
	require.NoError(t, err)
	defer conn.Close(ctx)

	missing, err := schema.MissingIndexes(ctx, conn)
	require.NoError(t, err)
	require.Empty(t, missing, "the schema creates every index with its table")

	// One index dropped, one renamed (an equivalent index under another name is
	// enough), and one left invalid as an interrupted concurrent build leaves it.
	_, err = conn.Exec(ctx, `DROP INDEX queen.idx_dlq_failed_at;
		ALTER INDEX queen.idx_queues_name RENAME TO my_queues_name;
		UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'queen.idx_dlq_partition'::regclass`)
	require.NoError(t, err)
	missing, err = schema.MissingIndexes(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, []schema.MissingIndex{
		{Table: "queen.dead_letter_queue", Index: "idx_dlq_partition", Invalid: true,
			SQL: `DROP INDEX CONCURRENTLY IF EXISTS queen."idx_dlq_partition"; ` +
				`CREATE INDEX CONCURRENTLY IF NOT EXISTS "idx_dlq_partition" ON queen.dead_letter_queue USING btree (partition_id)`},
		{Table: "queen.dead_letter_queue", Index: "idx_dlq_failed_at",
			SQL: `CREATE INDEX CONCURRENTLY IF NOT EXISTS "idx_dlq_failed_at" ON queen.dead_letter_queue USING btree (failed_at DESC)`},
	}, missing)
}
