package queue

import (
	"encoding/json"
	"fmt"
	"time"
)

// KV op names (the canonical spelling of [KVOp.Kind]).
const (
	KVGet         = "get"
	KVGetMany     = "getMany"
	KVGetPrefix   = "getPrefix"
	KVPut         = "put"
	KVPutIfAbsent = "putIfAbsent"
	KVDelete      = "delete"
	KVIncr        = "incr"
)

// KV verdicts: the reason of a write that was not applied.
const (
	KVReasonExists  = "exists"
	KVReasonAbsent  = "absent"
	KVReasonVersion = "version"
	KVReasonLimit   = "limit"
	KVReasonType    = "type"
)

// KV limits (docs/api.md "KV store").
const (
	// KVMaxKeyBytes is the longest key, in UTF-8 bytes.
	KVMaxKeyBytes = 512
	// KVMaxValueBytes is the largest value, serialized as compact JSON with its strings
	// in UTF-8 (kvSerializedLen).
	KVMaxValueBytes = 65536
	// KVMaxOps and KVMaxKeys bound one POST /api/v1/kv call; KVMaxTxOps and KVMaxTxKeys
	// the kv rider of a transaction. getMany counts its keys, getPrefix its clamped
	// limit, every other op one key.
	KVMaxOps    = 256
	KVMaxKeys   = 1024
	KVMaxTxOps  = 64
	KVMaxTxKeys = 256
	// KVReadBudget is the value bytes all reads of one call (or one console page)
	// return at most; past it reads stop and answer truncated.
	KVReadBudget = 4 << 20
	// KVDefaultLimit is getPrefix's and the console list's page size when none is
	// given; any limit is clamped to 1…KVMaxLimit.
	KVDefaultLimit = 100
	KVMaxLimit     = 1000
	// KVMaxTTLSeconds is the longest ttlSeconds (100 years).
	KVMaxTTLSeconds = 100 * 365 * 24 * 3600
)

// KVOp is one validated KV operation. Index is its position in the request; Op the
// op name as the client spelled it (echoed in the result), Kind the canonical name.
type KVOp struct {
	Index int
	Op    string
	Kind  string
	NS    string
	Key   string
	// Keys are getMany's keys, in request order.
	Keys []string
	// Prefix, After, Limit and KeysOnly shape a getPrefix page.
	Prefix   string
	After    string
	Limit    int
	KeysOnly bool
	// Value is the compact JSON of a put.
	Value json.RawMessage
	// TTL is the expiry of put, putIfAbsent and incr; zero means forever.
	TTL time.Duration
	// Expect is the version precondition (nil: none; putIfAbsent sets 0).
	Expect *int64
	// Required turns a lost precondition into a rollback of the whole call.
	Required bool
	// Delta, Min and Max are incr's JSON numbers (Min, Max "" when absent).
	Delta, Min, Max string
}

// IsWrite reports whether the op writes (put, putIfAbsent, delete, incr).
func (o KVOp) IsWrite() bool {
	switch o.Kind {
	case KVPut, KVPutIfAbsent, KVDelete, KVIncr:
		return true
	}
	return false
}

// KVRow is one live (or, in the console listing, possibly expired) entry.
type KVRow struct {
	Key       string
	Value     json.RawMessage
	Version   int64
	ExpiresAt *time.Time
	UpdatedAt time.Time
	// Bytes is the size of the value's JSON text.
	Bytes int
	// Expired is set by the console listing only.
	Expired bool
}

// KVResult is the outcome of one op, index-aligned with the request. Which fields
// matter depends on Kind: get uses Found and Row; writes use Applied, Reason, Value
// and Version; getMany uses Rows, Missing and Truncated; getPrefix Rows, Truncated
// and NextAfter.
type KVResult struct {
	Index   int
	Op      string
	Kind    string
	Key     string
	Found   bool
	Row     KVRow
	Applied bool
	Reason  string
	Value   json.RawMessage
	Version int64
	// KeysOnly drops values from a getPrefix answer.
	KeysOnly  bool
	Rows      []KVRow
	Missing   []string
	Truncated bool
	NextAfter *string
}

// KVPrecondition is a required op whose precondition failed: the whole call was
// rolled back. FailedIndex is the op's request index; Value and Version the winner's.
type KVPrecondition struct {
	FailedIndex int
	Reason      string
	Version     int64
	Value       json.RawMessage
}

// KVOutcome is what a batch of ops did: Results (one per op) when it committed, or
// Failed when a required op rolled everything back.
type KVOutcome struct {
	Results []KVResult
	Failed  *KVPrecondition
}

// KVRider is the kv rider of a transaction: Ops for Tenant ("" = global scope),
// applied at Now before the transaction's pushes and acks.
type KVRider struct {
	Tenant string
	Now    time.Time
	Ops    []KVOp
}

// KVListRequest asks for a console page of a namespace (POST /api/v1/resources/kv/list).
// Prefix and After are free text, not keys: any length, NUL included.
type KVListRequest struct {
	NS             string
	Prefix         string
	After          string
	Limit          int
	KeysOnly       bool
	IncludeExpired bool
}

// KVListPage is a console page: rows in key order, Bytes the value bytes charged.
type KVListPage struct {
	Rows      []KVRow
	Truncated bool
	NextAfter *string
	Bytes     int
}

// KVNamespace is one namespace with its row count (expired-but-unswept rows included).
type KVNamespace struct {
	Name string
	Keys int64
}

// KVError is a refused KV request: a size ceiling (TooLarge, HTTP 413) or a malformed
// request (400). Code is the envelope's "error" (kv_bad_request or payload_too_large),
// Reason the stable id, Field the offending request field and Detail the text naming it.
type KVError struct {
	TooLarge bool
	Field    string
	Code     string
	Reason   string
	Detail   string
}

func (e *KVError) Error() string { return e.Code + "/" + e.Reason + ": " + e.Detail }

// KV error codes (the envelope's "error").
const (
	KVCodeBadRequest = "kv_bad_request"
	KVCodeTooLarge   = "payload_too_large"
)

// KVBad returns a 400 kv_bad_request about field with reason and a formatted detail.
func KVBad(field, reason, format string, args ...any) *KVError {
	return &KVError{Field: field, Code: KVCodeBadRequest, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// KVTooLarge returns a 413 payload_too_large about field with reason and a formatted
// detail.
func KVTooLarge(field, reason, format string, args ...any) *KVError {
	return &KVError{Field: field, TooLarge: true, Code: KVCodeTooLarge, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}
