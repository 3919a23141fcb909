package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// database is the scratch database of one run: created on the cluster, used by the
// raw ceilings and the broker alike, dropped at the end.
type database struct {
	admin *pgx.ConnConfig // the cluster's maintenance database, for CREATE/DROP DATABASE
	name  string
	conn  *pgx.ConnConfig // the scratch database
	pool  *pgxpool.Pool
}

// createDatabase creates queen_bench_<random> on the cluster that dsn points at.
func createDatabase(ctx context.Context, dsn string, maxConns int) (*database, error) {
	admin, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse connection settings: %w", err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	d := &database{admin: admin, name: "queen_bench_" + hex.EncodeToString(b[:])}
	conn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("connect to %s:%d: %w", admin.Host, admin.Port, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{d.name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create database %s (the bench needs CREATEDB): %w", d.name, err)
	}
	d.conn = admin.Copy()
	d.conn.Database = d.name
	pcfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	pcfg.ConnConfig = d.conn.Copy()
	pcfg.MaxConns = int32(maxConns)
	if d.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return nil, errors.Join(fmt.Errorf("open pool: %w", err), d.drop(ctx))
	}
	return d, nil
}

// drop closes the pool and drops the scratch database (disconnecting anyone left).
func (d *database) drop(ctx context.Context) error {
	if d.pool != nil {
		d.pool.Close()
	}
	ctx = context.WithoutCancel(ctx)
	conn, err := pgx.ConnectConfig(ctx, d.admin)
	if err != nil {
		return fmt.Errorf("drop database %s: %w", d.name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", d.name, err)
	}
	return nil
}

// describe reports the server version and the settings that bound the numbers.
func (d *database) describe(ctx context.Context) (string, error) {
	var version string
	if err := d.pool.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return "", err
	}
	parts := []string{"PostgreSQL " + version}
	for _, name := range []string{"fsync", "synchronous_commit", "full_page_writes", "shared_buffers", "max_connections"} {
		var v string
		if err := d.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			return "", err
		}
		parts = append(parts, name+"="+v)
	}
	return strings.Join(parts, " "), nil
}

// reset empties every queue table, so each case starts from the same state whether
// the raw ceiling or the broker runs it. The broker takes no traffic, but its
// background loops (activity flush, maintenance jobs) still touch these tables, and
// TRUNCATE's exclusive locks can deadlock with them: such a conflict is retried.
func (d *database) reset(ctx context.Context) error {
	var err error
	for attempt := 1; attempt <= 10; attempt++ {
		if err = d.truncate(ctx); err == nil {
			break
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != "40P01" && pgErr.Code != "55P03") {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("reset tables: %w", err)
	}
	// TRUNCATE keeps the previous case's statistics; plans cached by the broker (and
	// chosen for the next case) would be made for data that is gone. Analyzing the
	// empty tables gives every case the statistics of a fresh deployment and
	// invalidates the cached plans.
	return d.analyze(ctx)
}

// analyze refreshes planner statistics (after a reset, and after a pre-fill), for the
// raw cycle and the broker alike.
func (d *database) analyze(ctx context.Context) error {
	_, err := d.pool.Exec(ctx, `ANALYZE queen.queues, queen.partitions, queen.messages, queen.partition_consumers,
		queen.partition_lookup, queen.partition_ready, queen.queue_consumers`)
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

// truncate empties the queue tables in one transaction with a short lock timeout.
func (d *database) truncate(ctx context.Context) error {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '2s'"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `TRUNCATE queen.queues, queen.partitions, queen.messages, queen.partition_consumers,
		queen.partition_lookup, queen.dead_letter_queue, queen.consumer_groups_metadata, queen.consumer_watermarks,
		queen.message_traces CASCADE`); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
