package queue

// UnavailableError is a refusal to serve a request for now that is not a database
// outage, e.g. a push while push maintenance mode is on and no spool exists. It
// matches ErrUnavailable (HTTP 503 + Retry-After); Message is safe to show clients.
type UnavailableError struct {
	Message string
}

func (e *UnavailableError) Error() string { return e.Message }

// Unwrap makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Unwrap() error { return ErrUnavailable }
