package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseEnvFile follows systemd's EnvironmentFile= parser (load_env_file), so that
// a reload reads a file the way systemd read it at start.
func TestParseEnvFile(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"Plain", "A=1\nB=two\n", []string{"A=1", "B=two"}},
		{"NoFinalNewline", "A=1", []string{"A=1"}},
		{"CRLF", "A=1\r\nB=2\r\n", []string{"A=1", "B=2"}},
		{"Empty", "", nil},
		{"EmptyValue", "A=\nB=", []string{"A=", "B="}},
		{"Comments", "# c\n; c\n  # indented\nA=1\n", []string{"A=1"}},
		{"InlineHashIsValue", "A=yes # note\n", []string{"A=yes # note"}},
		{"BlanksAroundNameAndValue", "  A \t=  1 2  \n", []string{"A=1 2"}},
		{"DoubleQuoted", `A="x y"` + "\n", []string{"A=x y"}},
		{"DoubleQuotedEscapes", `A="q\" b\\ d\$ k\` + "`" + ` n\n"`, []string{"A=q\" b\\ d$ k` n\\n"}},
		{"SingleQuotedIsLiteral", `A='x \" $y'`, []string{`A=x \" $y`}},
		{"QuotedSpansLines", "A=\"1\n2\"\nB=3", []string{"A=1\n2", "B=3"}},
		{"QuotesConcatenate", `A="a" 'b'c`, []string{"A=abc"}},
		{"UnquotedEscape", `A=a\ \#b\\`, []string{`A=a #b\`}},
		{"EscapedTrailingBlankKept", "A=a\\ \n", []string{"A=a "}},
		{"LineContinuation", "A=a\\\nb\nC=1", []string{"A=ab", "C=1"}},
		{"DoubleQuotedContinuation", "A=\"a\\\nb\"", []string{"A=ab"}},
		{"CommentContinuation", "# c \\\nA=1\nB=2", []string{"B=2"}},
		{"NoEquals", "JUNK\nA=1", []string{"A=1"}},
		{"ExportIsSkipped", "export A=1\nB=2", []string{"B=2"}},
		{"InvalidNames", "1A=1\nA-B=2\n_A1=3", []string{"_A1=3"}},
		{"ControlCharacterSkipsValue", "A=\"x\x01\"\nB=2", []string{"B=2"}},
		{"TabInValueKept", "A=\"a\tb\"", []string{"A=a\tb"}},
		{"LaterWinsIsTheCallersChoice", "A=1\nA=2", []string{"A=1", "A=2"}},
		{"NoExpansion", "A=$HOME", []string{"A=$HOME"}},
		{"UnterminatedQuoteAtEOF", `A="abc`, []string{"A=abc"}},
		{"EqualsInValue", "A=b=c", []string{"A=b=c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, parseEnvFile(tc.data))
		})
	}
}

// TestParseEnvFileReadsThePackagedFile: the shipped etc/queen.env sets nothing, and
// the same file with every line uncommented sets every setting to its default.
func TestParseEnvFileReadsThePackagedFile(t *testing.T) {
	t.Parallel()

	require.Empty(t, parseEnvFile(EnvFile()))
	var uncommented []byte
	for _, s := range table() {
		uncommented = append(uncommented, s.name+"="+envQuote(s.def)+"\n"...)
	}
	got := parseEnvFile(string(uncommented))
	require.Len(t, got, len(table()))
	for i, s := range table() {
		require.Equal(t, s.name+"="+s.def, got[i])
	}
}
