// Package store owns every runtime SQL statement of queen, the pgx connection pool
// and the translation of PostgreSQL errors into the queue package's sentinels
// (interpretError). Nothing above this package sees a pgx type or a SQLSTATE.
//
// The hot paths (push, pop, ack, transaction acks) are single calls of plpgsql
// functions defined in internal/schema, so each is one round trip and one
// transaction.
package store
