package store_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
)

// openStore opens a store on a new test database, and a plain pool on the same
// database for the test's own SQL (setting up races, reading state).
func openStore(t testing.TB, maxConns int) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	url := pgtest.NewDBURL(t)
	st, err := store.Open(store.Options{ConnString: url, MaxConns: maxConns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	db, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return st, db
}
