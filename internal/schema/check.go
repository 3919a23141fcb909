package schema

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Script is SQL made into a script that a DBA applies with psql (`queen schema | psql
// -v ON_ERROR_STOP=1 …`) instead of letting the broker apply it: one transaction, under
// the advisory lock a boot takes (so a broker booting meanwhile waits), that ends by
// recording the version (and level) exactly as Apply does, so that a broker which
// applies no DDL itself finds it with Check. Without ON_ERROR_STOP psql goes on after
// an error, but the transaction is then aborted and its COMMIT rolls everything back.
func (s Set) Script() string {
	var b strings.Builder
	fmt.Fprintf(&b, "-- %s %s: apply as the role that owns the schema, e.g. with psql -v ON_ERROR_STOP=1.\n",
		s.name, s.Version())
	b.WriteString("BEGIN;\n")
	fmt.Fprintf(&b, "SELECT pg_advisory_xact_lock(%d, %d);\n\n", s.lockNamespace, applyLockID)
	b.WriteString(s.SQL())
	b.WriteString("-- Record the version applied: a broker run with QUEEN_APPLY_SCHEMA=0 checks it at boot.\n")
	b.WriteString(s.recordSQL())
	b.WriteString(";\nCOMMIT;\n")
	return b.String()
}

// NotAppliedError is Check's answer for a database that does not hold the schema a
// program needs: none at all, or only older versions.
type NotAppliedError struct {
	// Name is the Set's name ("schema" for the broker's).
	Name string
	// VersionTable is the schema-qualified table where applies are recorded.
	VersionTable string
	// Version and Level are what the program needs (Level 0: the Set is not leveled).
	Version string
	Level   int
	// Missing is set when VersionTable does not exist: nothing was ever applied.
	Missing bool
	// Recorded counts the versions recorded; FoundLevel is the highest recorded level
	// (0 when none has one).
	Recorded   int
	FoundLevel int
}

// Error says what is missing.
func (e *NotAppliedError) Error() string {
	switch {
	case e.Missing:
		return fmt.Sprintf("%s: the database holds no schema: %s does not exist (need version %s%s)",
			e.Name, e.VersionTable, e.Version, e.levelText())
	case e.Recorded == 0:
		return fmt.Sprintf("%s: %s records no applied version (need version %s%s)",
			e.Name, e.VersionTable, e.Version, e.levelText())
	case e.FoundLevel > 0:
		return fmt.Sprintf("%s: the database holds schema level %d, older than the level %d (version %s) this release needs",
			e.Name, e.FoundLevel, e.Level, e.Version)
	}
	return fmt.Sprintf("%s: %s records %d version(s) of an older release, not version %s%s",
		e.Name, e.VersionTable, e.Recorded, e.Version, e.levelText())
}

func (e *NotAppliedError) levelText() string {
	if e.Level == 0 {
		return ""
	}
	return fmt.Sprintf(", level %d", e.Level)
}

// Check reports whether the database holds this Set's schema, changing nothing and
// reading only the version table and the catalog, so a role without DDL rights can run
// it. It returns nil when this version is recorded, or, for a leveled Set, any level at
// least s's (changes only add, so a newer schema serves an older program); a
// *NotAppliedError when the schema is missing or older; any other error as it came.
func (s Set) Check(ctx context.Context, conn *pgx.Conn) error {
	var exists, hasLevel bool
	err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL,
       EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'level' AND NOT attisdropped)`,
		s.versionTable).Scan(&exists, &hasLevel)
	if err != nil {
		return fmt.Errorf("%s: check: %w", s.name, err)
	}
	e := &NotAppliedError{Name: s.name, VersionTable: s.versionTable, Version: s.Version(), Level: s.level}
	if !exists {
		e.Missing = true
		return e
	}
	level := "0"
	if hasLevel {
		level = "coalesce(max(level), 0)"
	}
	// versionTable is a constant of the program, never input.
	var current bool
	err = conn.QueryRow(ctx, `SELECT coalesce(bool_or(version = $1), false), count(*), `+level+` FROM `+s.versionTable,
		e.Version).Scan(&current, &e.Recorded, &e.FoundLevel)
	if err != nil {
		return fmt.Errorf("%s: check: %w", s.name, err)
	}
	if current || (s.level > 0 && e.FoundLevel >= s.level) {
		return nil
	}
	return e
}
