package config

import (
	"strings"
	"unicode/utf8"
)

// parseEnvFile reads data the way systemd reads an EnvironmentFile= (its
// load_env_file): one NAME=value per line; lines whose first non-blank character is
// '#' or ';' are comments; blanks around the name and the value are dropped; a value
// may be single-quoted (taken literally) or double-quoted (where \", \\, \` and \$
// are escapes and any other backslash stays); outside quotes a backslash takes the
// next character literally; a backslash before a newline joins the lines, also in a
// comment; quoted values may span lines. Lines without '=' and assignments whose name
// is not a valid variable name ("export NAME=value"), or whose value holds control
// characters other than tab and newline, are skipped, as systemd skips them. $VARIABLES are not expanded. It returns NAME=value strings in file order.
func parseEnvFile(data string) []string {
	const (
		preKey = iota
		key
		preValue
		unquoted
		unquotedEscape
		singleQuoted
		doubleQuoted
		doubleQuotedEscape
		comment
		commentEscape
	)
	var (
		out   []string
		name  strings.Builder
		value strings.Builder
		// trailing counts the unescaped blanks at the end of name or value so far.
		trailing int
	)
	push := func() {
		n := name.String()
		n = n[:len(n)-trailingBlanks(n)]
		if v := value.String(); isEnvName(n) && isEnvValue(v) {
			out = append(out, n+"="+v)
		}
		name.Reset()
		value.Reset()
	}
	state := preKey
	for i := 0; i < len(data); i++ {
		c := data[i]
		newline := c == '\n' || c == '\r'
		blank := c == ' ' || c == '\t'
		switch state {
		case preKey:
			switch {
			case c == '#' || c == ';':
				state = comment
			case newline || blank:
			default:
				state = key
				name.WriteByte(c)
			}
		case key:
			switch {
			case newline: // no '=': not an assignment
				name.Reset()
				state = preKey
			case c == '=':
				state = preValue
			default:
				name.WriteByte(c)
			}
		case preValue:
			switch {
			case newline:
				push()
				state = preKey
			case c == '\'':
				state = singleQuoted
			case c == '"':
				state = doubleQuoted
			case c == '\\':
				state = unquotedEscape
			case !blank:
				value.WriteByte(c)
				trailing = 0
				state = unquoted
			}
		case unquoted:
			switch {
			case newline:
				v := value.String()
				value.Reset()
				value.WriteString(v[:len(v)-trailing])
				push()
				state = preKey
			case c == '\\':
				trailing = 0
				state = unquotedEscape
			default:
				value.WriteByte(c)
				if blank {
					trailing++
				} else {
					trailing = 0
				}
			}
		case unquotedEscape:
			if !newline {
				value.WriteByte(c)
			}
			trailing = 0
			state = unquoted
		case singleQuoted:
			if c == '\'' {
				state = preValue
			} else {
				value.WriteByte(c)
			}
		case doubleQuoted:
			switch c {
			case '"':
				state = preValue
			case '\\':
				state = doubleQuotedEscape
			default:
				value.WriteByte(c)
			}
		case doubleQuotedEscape:
			switch {
			case strings.IndexByte("\"\\`$", c) >= 0:
				value.WriteByte(c)
			case c == '\n':
			default:
				value.WriteByte('\\')
				value.WriteByte(c)
			}
			state = doubleQuoted
		case comment:
			if c == '\\' {
				state = commentEscape
			} else if newline {
				state = preKey
			}
		case commentEscape:
			state = comment
		}
	}
	switch state {
	case unquoted:
		v := value.String()
		value.Reset()
		value.WriteString(v[:len(v)-trailing])
		push()
	case preValue, unquotedEscape, singleQuoted, doubleQuoted, doubleQuotedEscape:
		push()
	}
	return out
}

// trailingBlanks counts the spaces and tabs at the end of s.
func trailingBlanks(s string) int {
	return len(s) - len(strings.TrimRight(s, " \t"))
}

// isEnvName reports whether s is a valid environment variable name for systemd:
// letters, digits and '_', not starting with a digit.
func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// isEnvValue reports whether systemd accepts v as a value: valid UTF-8 without control
// characters other than tab and newline.
func isEnvValue(v string) bool {
	return utf8.ValidString(v) && !strings.ContainsFunc(v, func(r rune) bool {
		return (r < ' ' && r != '\t' && r != '\n') || r == 0x7f
	})
}
