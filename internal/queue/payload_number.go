package queue

import (
	"bytes"
	"fmt"
)

// JSON number limits (docs/api.md, "JSON numbers"). PostgreSQL stores a JSON number
// as an exact decimal and renders it in full on every read: 1e300 comes back as a 1
// and 300 zeros. So that a few bytes sent cannot become megabytes read (or a value
// PostgreSQL refuses with an error), a document is refused when one of its numbers
//   - cannot be stored at all: more than 131072 digits before the decimal point or
//     16383 after it, PostgreSQL numeric's own limits;
//   - renders more than MaxNumberGrowth digits longer than it is written (1e1001,
//     1e-1001); every float64 (1.7976931348623157e308, 5e-324) passes, and so does
//     every storable number written without an exponent;
//
// or when its numbers together render more than NumberGrowthSlack plus
// NumberGrowthPerByte digits per byte of the document longer than written.
const (
	// MaxNumberGrowth is how many digits longer than written one number may render.
	MaxNumberGrowth = 1000
	// NumberGrowthSlack and NumberGrowthPerByte bound the growth of a whole document.
	NumberGrowthSlack   = 64 << 10
	NumberGrowthPerByte = 4

	// pgMaxIntDigits and pgMaxScale are PostgreSQL numeric's limits: a weight of at
	// most 32767 base-10000 digits, a display scale of at most 0x3FFF.
	pgMaxIntDigits = 131072
	pgMaxScale     = 16383
	// expSaturation caps a parsed exponent; anything beyond is refused anyway.
	expSaturation = 1 << 40
)

// checkNumbers applies the number limits to every number of the JSON document b
// (outside strings), and MaxPayloadDepth to its arrays and objects, naming field.
func checkNumbers(field string, b []byte) error {
	var growth int64
	depth := 0
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			i = stringEnd(b, i+1)
		case c == '[' || c == '{':
			if depth++; depth > MaxPayloadDepth {
				return Invalid(field, "%s nests arrays and objects more than %d levels deep", field, MaxPayloadDepth)
			}
			i++
		case c == ']' || c == '}':
			depth--
			i++
		case c == '-' || isDigit(c):
			j, exp := numberEnd(b, i)
			if !exp && j-i <= pgMaxScale {
				i = j // no exponent, too short to overflow: rendered as written
				continue
			}
			sh, err := checkNumber(field, b[i:j])
			if err != nil {
				return err
			}
			growth += sh.growth
			i = j
		default:
			i++
		}
	}
	if budget := NumberGrowthSlack + NumberGrowthPerByte*int64(len(b)); growth > budget {
		return Invalid(field, "%s: its numbers would be stored in full as %d digits more than written; "+
			"at most %d for %d bytes of JSON (%d plus %d per byte)", field, growth, budget, len(b),
			NumberGrowthSlack, NumberGrowthPerByte)
	}
	return nil
}

// checkNumber applies the limits of one number to lit, a JSON number literal.
func checkNumber(field string, lit []byte) (numberShape, error) {
	sh := shapeNumber(lit)
	switch {
	case sh.intDigits > pgMaxIntDigits || sh.scale > pgMaxScale:
		return sh, Invalid(field, "%s holds the number %s, which PostgreSQL cannot store (at most %d digits "+
			"before the decimal point and %d after)", field, shortLiteral(lit), pgMaxIntDigits, pgMaxScale)
	case sh.growth > MaxNumberGrowth:
		return sh, Invalid(field, "%s holds the number %s, which PostgreSQL would store in full as %d digits; "+
			"a number may have at most %d digits more than written", field, shortLiteral(lit),
			sh.intDigits+sh.scale, MaxNumberGrowth)
	}
	return sh, nil
}

// numberShape is what PostgreSQL makes of a JSON number: the digits of its full
// rendering before (intDigits) and after (scale) the decimal point, and how many
// more digits that rendering has than the literal (growth, never negative).
type numberShape struct {
	intDigits, scale, growth int64
}

// shapeNumber reads a JSON number literal (-?int(.frac)?([eE][+-]?exp)?) the way
// PostgreSQL's numeric input does: the scale is the fraction's digits minus the
// exponent (at least 0), leading zeros are dropped before the point, and a value of
// zero renders a single 0 before it.
func shapeNumber(lit []byte) numberShape {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	var nInt, nFrac, lead int64
	leading := true
	digits := func(n *int64) {
		for ; i < len(lit) && isDigit(lit[i]); i++ {
			*n++
			if leading && lit[i] == '0' {
				lead++
			} else {
				leading = false
			}
		}
	}
	digits(&nInt)
	if i < len(lit) && lit[i] == '.' {
		i++
		digits(&nFrac)
	}
	var exp int64
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		neg := i < len(lit) && lit[i] == '-'
		if i < len(lit) && (lit[i] == '-' || lit[i] == '+') {
			i++
		}
		for ; i < len(lit) && isDigit(lit[i]); i++ {
			if exp < expSaturation {
				exp = exp*10 + int64(lit[i]-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	n := nInt + nFrac
	sh := numberShape{intDigits: 1, scale: max(0, nFrac-exp)}
	if point := nInt + exp; lead < n && point > lead {
		sh.intDigits = point - lead
	}
	sh.growth = max(0, sh.intDigits+sh.scale-n)
	return sh
}

// stringEnd returns the index after the closing quote of the JSON string whose
// contents start at b[i] (len(b) if it is not closed). A quote is escaped when an odd
// number of backslashes precede it.
func stringEnd(b []byte, i int) int {
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b)
		}
		q += i
		k := q
		for k > i && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
}

// numberEnd returns the index after the number literal starting at b[i], and
// whether it has an exponent.
func numberEnd(b []byte, i int) (end int, exp bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case isDigit(c), c == '.', c == '+', c == '-':
		case c == 'e', c == 'E':
			exp = true
		default:
			return i, exp
		}
	}
	return i, exp
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// shortLiteral quotes lit for an error message, cut to 40 bytes.
func shortLiteral(lit []byte) string {
	if len(lit) > 40 {
		return fmt.Sprintf("%s… (%d characters)", lit[:32], len(lit))
	}
	return string(lit)
}
