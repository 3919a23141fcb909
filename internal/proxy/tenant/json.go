package tenant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// strictMerge decodes raw over v, refusing unknown fields. A field whose value is
// null takes its value in defaults (same type as v) instead of keeping v's: null is
// the default, field by field as for the whole object. A value of the wrong type is
// a ValidationError under field.
func strictMerge(raw json.RawMessage, v, defaults any, field string) error {
	raw, err := nullsToDefaults(raw, defaults)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if ve, ok := JSONTypeError(err, field); ok {
		return ve
	}
	if rest, ok := strings.CutPrefix(fmt.Sprint(err), `json: unknown field "`); ok {
		if name, ok := strings.CutSuffix(rest, `"`); ok {
			return invalid(field+"."+name, "unknown field")
		}
	}
	if err != nil {
		return invalid(field, err.Error())
	}
	return nil
}

// nullsToDefaults replaces, in the JSON object raw, each null member with the value
// defaults has for it (matching names as encoding/json does, in any case). raw that
// is not an object comes back as it is, for the decoder to refuse.
func nullsToDefaults(raw json.RawMessage, defaults any) (json.RawMessage, error) {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil || members == nil {
		return raw, nil
	}
	encoded, err := json.Marshal(defaults)
	if err != nil {
		return nil, err
	}
	var defs map[string]json.RawMessage
	if err := json.Unmarshal(encoded, &defs); err != nil {
		return nil, err
	}
	changed := false
	for name, v := range members {
		if !isNull(v) {
			continue
		}
		for dn, dv := range defs {
			if strings.EqualFold(name, dn) {
				members[name], changed = dv, true
			}
		}
	}
	if !changed {
		return raw, nil
	}
	return json.Marshal(members)
}

// JSONTypeError reports whether err holds a JSON value of the wrong type (a
// *json.UnmarshalTypeError) and returns it as the ValidationError of its JSON path
// under prefix ("limits.requestsPerSecond"; prefix itself, or "body", for the whole
// value) saying the JSON type expected: never a Go type.
func JSONTypeError(err error, prefix string) (*ValidationError, bool) {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return nil, false
	}
	field := strings.Trim(prefix+"."+te.Field, ".")
	if field == "" {
		field = "body"
	}
	return &ValidationError{Field: field, Msg: "must be " + jsonKind(te.Type) + ", not " + te.Value}, true
}

// jsonKind names the JSON type that decodes into t.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another type"
}
