package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tw writes human output: aligned tables, key-value blocks and lines, coloured
// only when color is set (a terminal).
type tw struct {
	w     io.Writer
	color bool
}

// tw returns the human writer of stdout.
func (a *app) tw() *tw { return &tw{w: a.stdout, color: a.useColor(a.stdout)} }

// ANSI styles.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
)

// style wraps s in an ANSI style when colour is on.
func (t *tw) style(code, s string) string {
	if !t.color || s == "" {
		return s
	}
	return code + s + ansiReset
}

// bold styles headers and keys.
func (t *tw) bold(s string) string { return t.style(ansiBold, s) }

// dim styles secondary text (timestamps in tail).
func (t *tw) dim(s string) string { return t.style(ansiDim, s) }

// green marks good states.
func (t *tw) green(s string) string { return t.style(ansiGreen, s) }

// red marks failures.
func (t *tw) red(s string) string { return t.style(ansiRed, s) }

// yellow marks states that need attention.
func (t *tw) yellow(s string) string { return t.style(ansiYellow, s) }

// cyan marks identifiers worth copying (lease ids, queue/partition in tail).
func (t *tw) cyan(s string) string { return t.style(ansiCyan, s) }

// state colours a status word: good ones green, bad ones red, in-between yellow.
func (t *tw) state(s string) string {
	switch strings.ToLower(s) {
	case "healthy", "connected", "queued", "completed", "stable", "ok", "on", "true", "success", "deleted", "committed":
		return t.green(s)
	case "unhealthy", "disconnected", "failed", "dead_letter", "dead", "error", "rolled back":
		return t.red(s)
	case "pending", "processing", "duplicate", "buffered", "lagging":
		return t.yellow(s)
	}
	return s
}

// line prints one line.
func (t *tw) line(format string, args ...any) {
	fmt.Fprintf(t.w, format+"\n", args...)
}

// table prints rows under a bold header, columns padded to their widest cell. Cells
// may carry colour; the last column is not padded. An empty table prints only
// empty (when non-empty), e.g. "No queues.".
func (t *tw) table(header []string, rows [][]string, empty string) {
	if len(rows) == 0 && empty != "" {
		t.line("%s", empty)
		return
	}
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = visibleWidth(h)
	}
	for _, r := range rows {
		for i := 0; i < len(r) && i < len(widths); i++ {
			widths[i] = max(widths[i], visibleWidth(r[i]))
		}
	}
	bold := make([]string, len(header))
	for i, h := range header {
		bold[i] = t.bold(h)
	}
	t.row(bold, widths)
	for _, r := range rows {
		t.row(r, widths)
	}
}

// row prints one padded table row.
func (t *tw) row(cells []string, widths []int) {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteString("  ")
		}
		b.WriteString(c)
		if i < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", max(widths[i]-visibleWidth(c), 0)))
		}
	}
	t.line("%s", strings.TrimRight(b.String(), " "))
}

// kv prints key-value pairs with the keys aligned ("Name:       orders").
func (t *tw) kv(pairs [][2]string) {
	width := 0
	for _, p := range pairs {
		width = max(width, len(p[0]))
	}
	for _, p := range pairs {
		t.line("%s%s %s", t.bold(p[0]+":"), strings.Repeat(" ", width-len(p[0])), p[1])
	}
}

// visibleWidth counts the runes of s that are not ANSI escape sequences.
func visibleWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j + 1
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return n
}

// truncate shortens s to at most n runes, ending with "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// orDash returns s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// deref returns *s, or "-" when s is nil or empty.
func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return orDash(*s)
}

// itoa formats an integer.
func itoa[T ~int | ~int64](v T) string { return strconv.FormatInt(int64(v), 10) }

// yesNo renders a boolean for a table.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ago renders seconds as a short duration ("0s", "4m12s", "3h5m", "2d4h").
func ago(seconds int64) string {
	switch {
	case seconds < 60:
		return fmt.Sprintf("%ds", seconds)
	case seconds < 3600:
		return fmt.Sprintf("%dm%02ds", seconds/60, seconds%60)
	case seconds < 86400:
		return fmt.Sprintf("%dh%02dm", seconds/3600, seconds%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", seconds/86400, seconds%86400/3600)
}
