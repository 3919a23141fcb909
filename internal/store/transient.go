package store

import (
	"errors"
	"regexp"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queenmq/queen/internal/queue"
)

// IsTransient reports whether err is a database failure that says nothing about
// the statement itself: an unreachable database or a timeout (queue.ErrUnavailable,
// queue.ErrTimeout), a serialization failure or deadlock (class 40), a lack of
// resources (53), a cancelled statement such as statement_timeout or an operator
// intervention (57), lock_timeout (55P03), or a connection problem (08). Retrying
// later may succeed; a background job uses it to tell "try again" from "this input
// is refused". Requests answered to clients never depend on it.
func IsTransient(err error) bool {
	if errors.Is(err, queue.ErrUnavailable) || errors.Is(err, queue.ErrTimeout) {
		return true
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) < 2 {
		return false
	}
	if pgErr.Code == "55P03" || serverAwaySQLState(pgErr.Code) {
		return true
	}
	switch pgErr.Code[:2] {
	case "40", "53", "57", "08":
		return true
	}
	return false
}

// IsDataFault reports whether err is PostgreSQL refusing the data a statement carries,
// so that the same input fails on any server at any time: a data exception (class 22:
// malformed JSON, a value out of range, an invalid byte sequence), a program limit
// (class 54: a row or an index entry too large), or a NOT NULL or CHECK violation
// (23502, 23514). The spool drainer quarantines a record refused for such a reason;
// every other database error is waited out.
func IsDataFault(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && dataFaultSQLState(pgErr.Code)
}

func dataFaultSQLState(code string) bool {
	if len(code) != 5 {
		return false
	}
	switch code[:2] {
	case "22", "54":
		return true
	}
	return code == "23502" || code == "23514"
}

// sqlStateInText finds the SQLSTATE at the end of a PostgreSQL error's text as pgx
// renders it ("ERROR: ... (SQLSTATE 25006)").
var sqlStateInText = regexp.MustCompile(`\(SQLSTATE ([0-9A-Z]{5})\)`)

// IsServerFaultReason reports whether reason, the text a quarantined spool record was
// stored with, names a fault of the database server rather than of the record: a
// PostgreSQL error (it carries a SQLSTATE) that is not a data fault. Earlier releases
// quarantined records for such reasons (a standby answering "read-only
// transaction" during a failover, a missing privilege); the text is all that was kept,
// so this reads the SQLSTATE out of it.
func IsServerFaultReason(reason string) bool {
	m := sqlStateInText.FindAllStringSubmatch(reason, -1)
	return len(m) > 0 && !dataFaultSQLState(m[len(m)-1][1])
}
