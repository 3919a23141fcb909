package api

import (
	"strconv"
	"strings"
)

// ParseQueryInt reads an integer query parameter as the broker takes it: surrounding
// spaces ignored, and an integer written with a zero fraction ("30000.0", as a client
// that formats its numbers as floats sends it) is that integer. Anything else is the
// strconv error.
func ParseQueryInt(v string) (int64, error) {
	v = strings.TrimSpace(v)
	if whole, frac, found := strings.Cut(v, "."); found && frac != "" && strings.Trim(frac, "0") == "" {
		v = whole
	}
	return strconv.ParseInt(v, 10, 64)
}
