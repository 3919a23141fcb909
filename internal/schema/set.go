package schema

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queenmq/queen/internal/answerguard"
)

// Set is one program's embedded DDL: the .sql files at the root of an fs.FS, applied
// in lexical order of their names under an advisory lock of its own and recorded by
// version in a table the files create. The broker's schema is one Set, queen-proxy's
// another.
type Set struct {
	files         fs.FS
	lockNamespace int32
	versionTable  string
	name          string
	level         int // 0: the version table has no level column
}

// NewSet returns the Set of the .sql files of fsys. lockNamespace is the first key of
// the two-key advisory lock held while applying (distinct per program, so a database
// shared by two programs never serialises their boots); versionTable is the
// schema-qualified table (version text primary key, applied_at) the files create; name
// prefixes errors.
func NewSet(fsys fs.FS, lockNamespace int32, versionTable, name string) Set {
	return Set{files: fsys, lockNamespace: lockNamespace, versionTable: versionTable, name: name}
}

// Leveled returns s numbered level: Apply and Script record the level beside the
// version (the version table has a level column), and Check accepts a database whose
// highest recorded level is at least level, not only this exact version.
func (s Set) Leveled(level int) Set {
	s.level = level
	return s
}

// Files returns the SQL files in apply order (lexical order of their names).
func (s Set) Files() []string {
	names, err := fs.Glob(s.files, "*.sql")
	if err != nil {
		panic(err) // the pattern is constant: cannot fail
	}
	sort.Strings(names)
	return names
}

// SQL returns the full DDL in apply order, each file headed by its name.
func (s Set) SQL() string {
	var b strings.Builder
	for _, name := range s.Files() {
		data, _ := fs.ReadFile(s.files, name)
		fmt.Fprintf(&b, "-- %s\n%s\n", name, data)
	}
	return b.String()
}

// createSchema finds the schemas the DDL creates.
var createSchema = regexp.MustCompile(`(?m)^CREATE SCHEMA IF NOT EXISTS ([a-z_][a-z0-9_]*);`)

// Schemas returns the names of the schemas the DDL creates, in apply order.
func (s Set) Schemas() []string {
	var names []string
	for _, m := range createSchema.FindAllStringSubmatch(s.SQL(), -1) {
		names = append(names, m[1])
	}
	return names
}

// Version is a short hash of the DDL. It names test template databases and is recorded
// in the version table at every apply.
func (s Set) Version() string {
	sum := sha256.Sum256([]byte(s.SQL()))
	return hex.EncodeToString(sum[:])[:16]
}

// Apply brings the database to the DDL. It holds a transaction-scoped advisory lock so
// concurrent boots apply one after another, and does nothing when this exact version
// is already recorded and every schema the DDL creates exists: DDL such as CREATE
// INDEX IF NOT EXISTS locks its table even when the index exists, so re-running it
// under live traffic from other replicas would stall or deadlock them. (A schema can be
// missing under a recorded version when a dump of only some of the schemas was
// restored; the DDL then runs again and creates it.) A deadlock or lock timeout while
// applying a new version is retried a few times.
func (s Set) Apply(ctx context.Context, conn *pgx.Conn) error {
	var err error
	for attempt := 1; attempt <= 5; attempt++ {
		if err = s.applyOnce(ctx, conn); err == nil || !isLockConflict(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
	return err
}

func (s Set) applyOnce(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", s.name, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", s.lockNamespace, int32(applyLockID)); err != nil {
		return fmt.Errorf("%s: lock: %w", s.name, err)
	}
	version := s.Version()
	var current bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.versionTable).Scan(&current); err != nil {
		return fmt.Errorf("%s: inspect: %w", s.name, err)
	}
	if current {
		// versionTable is a constant of the program, never input.
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.versionTable+` WHERE version = $1)`,
			version).Scan(&current); err != nil {
			return fmt.Errorf("%s: inspect: %w", s.name, err)
		}
	}
	if current {
		// The schemas the DDL creates, all present.
		if err := tx.QueryRow(ctx, `SELECT coalesce(bool_and(to_regnamespace(n) IS NOT NULL), true) FROM unnest($1::text[]) n`,
			s.Schemas()).Scan(&current); err != nil {
			return fmt.Errorf("%s: inspect: %w", s.name, err)
		}
	}
	if current {
		return tx.Commit(ctx)
	}
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '5s'"); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	for _, name := range s.Files() {
		data, err := fs.ReadFile(s.files, name)
		if err != nil {
			return fmt.Errorf("%s: read %s: %w", s.name, name, err)
		}
		// A file is many statements sent as one, which the answer guard would time as
		// one: statement_timeout bounds each of them instead.
		if _, err := tx.Exec(answerguard.Unguarded(ctx), string(data)); err != nil {
			return fmt.Errorf("%s: apply %s: %w", s.name, name, err)
		}
	}
	if _, err := tx.Exec(ctx, s.recordSQL()); err != nil {
		return fmt.Errorf("%s: record version: %w", s.name, err)
	}
	return tx.Commit(ctx)
}

// recordSQL is the statement that records this version (and level) as applied. The
// version is a hex hash and the level a number, so they are written as literals: the
// same statement ends Script.
func (s Set) recordSQL() string {
	if s.level > 0 {
		return fmt.Sprintf(`INSERT INTO %s (version, level, applied_at) VALUES ('%s', %d, now())
    ON CONFLICT (version) DO UPDATE SET level = EXCLUDED.level, applied_at = now()`, s.versionTable, s.Version(), s.level)
	}
	return fmt.Sprintf(`INSERT INTO %s (version, applied_at) VALUES ('%s', now())
    ON CONFLICT (version) DO UPDATE SET applied_at = now()`, s.versionTable, s.Version())
}

// isLockConflict reports a deadlock (40P01) or lock timeout (55P03).
func isLockConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "55P03")
}
