package store

import (
	"errors"

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
	if pgErr.Code == "55P03" {
		return true
	}
	switch pgErr.Code[:2] {
	case "40", "53", "57", "08":
		return true
	}
	return false
}
