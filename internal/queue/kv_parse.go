package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// kvNamespace is the rule of a namespace name.
var kvNamespace = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// kvOpNames maps a spelling folded by kvFold to the canonical op name.
var kvOpNames = map[string]string{
	"get": KVGet, "getmany": KVGetMany, "getprefix": KVGetPrefix, "put": KVPut,
	"putifabsent": KVPutIfAbsent, "delete": KVDelete, "incr": KVIncr,
}

// kvFold lowercases an op spelling and drops underscores ("put_if_absent").
func kvFold(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "") }

// KVBatchLimits bounds one batch: MaxOps ops, MaxKeys keys; NoPrefix refuses getPrefix
// (the transaction rider).
type KVBatchLimits struct {
	MaxOps, MaxKeys int
	NoPrefix        bool
}

// KVCallLimits are the limits of POST /api/v1/kv; KVTxLimits of a transaction's rider.
var (
	KVCallLimits = KVBatchLimits{MaxOps: KVMaxOps, MaxKeys: KVMaxKeys}
	KVTxLimits   = KVBatchLimits{MaxOps: KVMaxTxOps, MaxKeys: KVMaxTxKeys, NoPrefix: true}
)

// ParseKVOps validates every op of a batch before anything runs: the per-op rules,
// then the op and key counts and the one-write-per-key rule. field names the array
// in details ("operations", "kv").
func ParseKVOps(raw []json.RawMessage, field string, lim KVBatchLimits) ([]KVOp, error) {
	if len(raw) > lim.MaxOps {
		return nil, KVBad(field, "kv_too_many_ops", "%s: at most %d ops per call (got %d)", field, lim.MaxOps, len(raw))
	}
	ops := make([]KVOp, len(raw))
	keys := 0
	writes := make(map[[2]string]int)
	for i, r := range raw {
		f := fmt.Sprintf("%s[%d]", field, i)
		op, err := ParseKVOp(r, f)
		if err != nil {
			return nil, err
		}
		op.Index = i
		if lim.NoPrefix && op.Kind == KVGetPrefix {
			return nil, KVBad(f, "kv_bad_op", "%s: getPrefix is not allowed in a transaction", f)
		}
		switch op.Kind {
		case KVGetMany:
			keys += len(op.Keys)
		case KVGetPrefix:
			keys += op.Limit
		default:
			keys++
		}
		if op.IsWrite() {
			k := [2]string{op.NS, op.Key}
			if j, dup := writes[k]; dup {
				return nil, KVBad(f, "kv_duplicate_key_in_call", "%s: key %q of namespace %q is already written by %s[%d]", f, op.Key, op.NS, field, j)
			}
			writes[k] = i
		}
		ops[i] = op
	}
	if keys > lim.MaxKeys {
		return nil, KVBad(field, "kv_too_many_keys", "%s: at most %d keys per call (got %d)", field, lim.MaxKeys, keys)
	}
	return ops, nil
}

// ParseKVOp validates one op object at field. Index is left 0.
func ParseKVOp(raw json.RawMessage, field string) (KVOp, error) {
	var o map[string]json.RawMessage
	if err := json.Unmarshal(raw, &o); err != nil || o == nil {
		return KVOp{}, KVBad(field, "kv_bad_body", "%s must be an object", field)
	}
	for _, t := range []string{"tenant", "tenantId", "_tenant"} {
		if _, ok := o[t]; ok {
			return KVOp{}, KVBad(field+"."+t, "kv_bad_body", "%s.%s: the tenant comes from the request, never from an op", field, t)
		}
	}
	var op KVOp
	if err := kvString(o, "op", field, &op.Op); err != nil {
		return op, err
	}
	kind, ok := kvOpNames[kvFold(op.Op)]
	if !ok {
		return op, KVBad(field+".op", "kv_unknown_op", "%s.op: unknown op %q", field, op.Op)
	}
	op.Kind = kind
	if err := kvString(o, "ns", field, &op.NS); err != nil {
		return op, KVBad(field+".ns", "kv_bad_namespace", "%s.ns is required (a string)", field)
	}
	if !kvNamespace.MatchString(op.NS) {
		return op, KVBad(field+".ns", "kv_bad_namespace", "%s.ns must match ^[a-z0-9][a-z0-9._-]{0,63}$", field)
	}
	switch kind {
	case KVGetMany:
		return op, parseKVGetMany(o, field, &op)
	case KVGetPrefix:
		return op, parseKVGetPrefix(o, field, &op)
	}
	if err := kvString(o, "key", field, &op.Key); err != nil {
		return op, KVBad(field+".key", "kv_bad_key", "%s.key is required (a string)", field)
	}
	if err := CheckKVKey(op.Key, field+".key"); err != nil {
		return op, err
	}
	if kind == KVGet {
		return op, nil
	}
	if err := parseKVWrite(o, field, &op); err != nil {
		return op, err
	}
	return op, nil
}

// CheckKVKey applies the key rules to a key (or prefix, or cursor) at field:
// non-empty, valid UTF-8 without NUL or U+FFFD, at most KVMaxKeyBytes bytes.
func CheckKVKey(key, field string) error {
	if key == "" {
		return KVBad(field, "kv_bad_key", "%s must be a non-empty string", field)
	}
	if !utf8.ValidString(key) || strings.IndexByte(key, 0) >= 0 {
		return KVBad(field, "kv_bad_key", "%s must be valid UTF-8 without NUL characters", field)
	}
	if err := CheckNoReplacement(field, key); err != nil {
		return KVBad(field, "kv_bad_key", "%s", err.Error())
	}
	if len(key) > KVMaxKeyBytes {
		return KVTooLarge(field, "kv_key_too_large", "%s is %d bytes; at most %d", field, len(key), KVMaxKeyBytes)
	}
	return nil
}

// CheckKVNamespace applies the namespace rule at field.
func CheckKVNamespace(ns, field string) error {
	if !kvNamespace.MatchString(ns) {
		return KVBad(field, "kv_bad_namespace", "%s must match ^[a-z0-9][a-z0-9._-]{0,63}$", field)
	}
	return nil
}

func parseKVGetMany(o map[string]json.RawMessage, field string, op *KVOp) error {
	raw, ok := o["keys"]
	if !ok || json.Unmarshal(raw, &op.Keys) != nil || op.Keys == nil {
		return KVBad(field+".keys", "kv_bad_key", "%s.keys must be an array of strings", field)
	}
	for j, k := range op.Keys {
		if err := CheckKVKey(k, fmt.Sprintf("%s.keys[%d]", field, j)); err != nil {
			return err
		}
	}
	return nil
}

func parseKVGetPrefix(o map[string]json.RawMessage, field string, op *KVOp) error {
	if err := kvString(o, "prefix", field, &op.Prefix); err != nil || op.Prefix == "" {
		return KVBad(field+".prefix", "kv_prefix_required", "%s.prefix is required (a non-empty string)", field)
	}
	if err := CheckKVKey(op.Prefix, field+".prefix"); err != nil {
		return err
	}
	if _, ok := o["after"]; ok && !isJSONNull(o["after"]) {
		if err := kvString(o, "after", field, &op.After); err != nil {
			return err
		}
		if op.After != "" {
			if err := CheckKVKey(op.After, field+".after"); err != nil {
				return err
			}
		}
	}
	op.Limit = KVLimit(o["limit"])
	return kvBool(o, "keysOnly", field, &op.KeysOnly)
}

// KVLimit reads a page limit, which is never refused (as on the 1.x brokers): a number
// is clamped to 1…KVMaxLimit, anything else (absent, null, a string) is
// KVDefaultLimit.
func KVLimit(raw json.RawMessage) int {
	var f float64
	if raw == nil || json.Unmarshal(raw, &f) != nil || isJSONNull(raw) {
		return KVDefaultLimit
	}
	return int(math.Max(1, math.Min(KVMaxLimit, math.Floor(f))))
}

func parseKVWrite(o map[string]json.RawMessage, field string, op *KVOp) error {
	if err := kvBool(o, "required", field, &op.Required); err != nil {
		return err
	}
	if raw, ok := o["expect"]; ok {
		if op.Kind == KVIncr {
			return KVBad(field+".expect", "kv_bad_expect", "%s.expect is not allowed on incr", field)
		}
		v, ok := kvWhole(raw)
		if !ok || v < 0 {
			return KVBad(field+".expect", "kv_bad_expect", "%s.expect must be a non-negative integer", field)
		}
		if op.Kind == KVPutIfAbsent && v != 0 {
			return KVBad(field+".expect", "kv_bad_expect", "%s.expect must be 0 on putIfAbsent (or absent)", field)
		}
		op.Expect = &v
	}
	if op.Kind == KVPutIfAbsent && op.Expect == nil {
		zero := int64(0)
		op.Expect = &zero
	}
	if op.Kind == KVDelete {
		return nil
	}
	if err := parseKVExpiry(o, field, op); err != nil {
		return err
	}
	if op.Kind == KVIncr {
		return parseKVIncr(o, field, op)
	}
	raw, ok := o["value"]
	if !ok {
		return KVBad(field+".value", "kv_bad_body", "%s.value is required (any JSON value, null included)", field)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return KVBad(field+".value", "kv_bad_body", "%s.value is not valid JSON", field)
	}
	if n := kvSerializedLen(buf.Bytes()); n > KVMaxValueBytes {
		return KVTooLarge(field+".value", "kv_value_too_large", "%s.value is %d bytes serialized; at most %d", field, n, KVMaxValueBytes)
	}
	if err := CheckPayload(field+".value", buf.Bytes()); err != nil {
		return kvBadBody(err)
	}
	op.Value = buf.Bytes()
	return nil
}

// kvBadBody turns a *ValidationError (a value or number PostgreSQL cannot store, or
// would store far larger than sent) into a 400 kv_bad_body naming its field.
func kvBadBody(err error) error {
	var ve *ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	return KVBad(ve.Field, "kv_bad_body", "%s", ve.Message)
}

// kvWhole reads a JSON number that is a whole number, also when written with a
// fraction or an exponent (5.0, 1e3, as some JSON encoders write integers held as
// floating point); a fraction, a value beyond 2^53 written that way, or another JSON
// type is not.
func kvWhole(raw json.RawMessage) (int64, bool) {
	text := string(bytes.TrimSpace(raw))
	if v, err := strconv.ParseInt(text, 10, 64); err == nil {
		return v, true
	}
	if text == "" || (text[0] != '-' && (text[0] < '0' || text[0] > '9')) {
		return 0, false // not a JSON number (strings, NaN, Inf)
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// parseKVExpiry reads exactly one of ttlSeconds (integer > 0) and forever:true.
func parseKVExpiry(o map[string]json.RawMessage, field string, op *KVOp) error {
	var forever bool
	if err := kvBool(o, "forever", field, &forever); err != nil {
		return err
	}
	rawTTL, hasTTL := o["ttlSeconds"]
	if hasTTL && isJSONNull(rawTTL) {
		hasTTL = false
	}
	if hasTTL == forever {
		return KVBad(field, "kv_expiry_not_specified", "%s: exactly one of ttlSeconds and forever:true is required", field)
	}
	if forever {
		return nil
	}
	ttl, ok := kvWhole(rawTTL)
	if !ok || ttl <= 0 || ttl > KVMaxTTLSeconds {
		return KVBad(field+".ttlSeconds", "kv_bad_ttl", "%s.ttlSeconds must be an integer from 1 to %d", field, KVMaxTTLSeconds)
	}
	op.TTL = time.Duration(ttl) * time.Second
	return nil
}

func parseKVIncr(o map[string]json.RawMessage, field string, op *KVOp) error {
	var err error
	if op.Delta, err = kvNumber(o["delta"], field+".delta"); err != nil {
		return err
	}
	if op.Delta == "" {
		return KVBad(field+".delta", "kv_bad_body", "%s.delta is required (a number)", field)
	}
	if op.Min, err = kvNumber(o["min"], field+".min"); err != nil {
		return err
	}
	op.Max, err = kvNumber(o["max"], field+".max")
	return err
}

// kvNumber returns the JSON number text of raw, "" when absent or null.
func kvNumber(raw json.RawMessage, field string) (string, error) {
	if raw == nil || isJSONNull(raw) {
		return "", nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil || len(raw) == 0 || raw[0] == '"' {
		return "", KVBad(field, "kv_bad_body", "%s must be a number", field)
	}
	if _, err := checkNumber(field, []byte(n)); err != nil {
		return "", kvBadBody(err)
	}
	return n.String(), nil
}

// kvString reads a required string member.
func kvString(o map[string]json.RawMessage, key, field string, dst *string) error {
	raw, ok := o[key]
	if !ok || json.Unmarshal(raw, dst) != nil || isJSONNull(raw) {
		return KVBad(field+"."+key, "kv_bad_body", "%s.%s must be a string", field, key)
	}
	return nil
}

// kvBool reads an optional boolean member (absent: false).
func kvBool(o map[string]json.RawMessage, key, field string, dst *bool) error {
	raw, ok := o[key]
	if !ok || isJSONNull(raw) { // null is absent, as everywhere in a body
		return nil
	}
	if json.Unmarshal(raw, dst) != nil {
		return KVBad(field+"."+key, "kv_bad_body", "%s.%s must be a boolean", field, key)
	}
	return nil
}

func isJSONNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }
