package api

// LeaseExtendRequest is the body of POST /api/v1/lease/{leaseId}/extend. All fields are
// optional: the server treats an empty body as {}.
type LeaseExtendRequest struct {
	// Seconds extends the lease to at least now+Seconds; 0 (absent) means 60.
	Seconds int `json:"seconds,omitempty"`
}

// LeaseExtendResult is the only element of the one-element array answered by lease
// extend, always with HTTP 200. Every key is always rendered.
type LeaseExtendResult struct {
	// Index is always 0.
	Index int `json:"index"`
	// LeaseID echoes the lease id.
	LeaseID string `json:"leaseId"`
	// Success reports whether the lease was extended.
	Success bool `json:"success"`
	// Error is null on success, else "Lease not found", "Lease already expired" or
	// "Lease not active".
	Error *string `json:"error"`
	// ExpiresAt is the new expiry with three fractional digits ([FormatMillis]); null on
	// failure.
	ExpiresAt *string `json:"expiresAt"`
}
