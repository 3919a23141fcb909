package manpage

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoffEscapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"Hyphens", "-check-config", `\-check\-config`},
		{"Backslash", `a\b`, `a\eb`},
		{"Code", "set `PORT` here", `set \fBPORT\fR here`},
		{"UnclosedCode", "`PORT", `\fBPORT\fR`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, roffText(tc.in))
		})
	}
	require.Equal(t, `\&.hidden`, roffLine(".hidden"), "a leading dot is not a request")
	require.Equal(t, `\&'quoted`, roffLine("'quoted"))
}

func TestPageRendering(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Bool("check", false, "validate the configuration")
	fs.String("out", "", "write to `FILE`")
	fs.Bool("hidden", false, "not shown")
	items := FlagItems(fs, func(n string) bool { return n != "hidden" }, func(n string) []string {
		if n == "check" {
			return []string{"Validate it."}
		}
		return nil
	})
	require.Equal(t, []Item{{Tag: "-check", Text: []string{"Validate it."}}, {Tag: "-out FILE", Text: []string{"Write to FILE."}}}, items)

	p := &Page{Name: "x", Section: "8", Manual: "System Manager's Manual", Source: "queen 1.0", Date: "2026-01-02",
		Summary: "a test page", Synopsis: []string{"x [-check]"},
		Sections: []Section{{Title: "Options", Text: []string{"Intro."}, Items: items},
			{Title: "Examples", Text: []string{" x -check\n x -out f"}}}}
	require.Equal(t, `.TH "X" 8 "2026-01-02" "queen 1.0" "System Manager's Manual"
.SH NAME
x \- a test page
.SH SYNOPSIS
.nf
x [\-check]
.fi
.SH "OPTIONS"
Intro.
.TP
.B "\-check"
Validate it.
.TP
.B "\-out FILE"
Write to FILE.
.SH "EXAMPLES"
.RS 4
.nf
x \-check
x \-out f
.fi
.RE
`, p.Roff())
	require.Equal(t, `X(8)                       System Manager's Manual                        X(8)

NAME
       x - a test page

SYNOPSIS
       x [-check]

OPTIONS
       Intro.

       -check Validate it.

       -out FILE
              Write to FILE.

EXAMPLES
          x -check
          x -out f
`, p.Text())
}
