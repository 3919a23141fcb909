package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Output formats of --output.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

// show writes a command's result: with -o json or -o yaml the value v (a wire type,
// or a json.RawMessage passed through), otherwise the human rendering of human.
func (a *app) show(v any, human func(t *tw)) error {
	switch a.g.output {
	case formatJSON, formatYAML:
		return a.emit(v)
	}
	human(a.tw())
	return nil
}

// emit writes v as indented JSON or as YAML, followed by a newline.
func (a *app) emit(v any) error {
	doc, err := marshalJSON(v)
	if err != nil {
		return err
	}
	if a.g.output == formatYAML {
		if doc, err = jsonToYAML(doc); err != nil {
			return err
		}
		_, err = a.stdout.Write(doc)
		return err
	}
	_, err = a.stdout.Write(doc)
	return err
}

// marshalJSON encodes v indented by two spaces, without HTML escaping, with a
// trailing newline.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	return buf.Bytes(), nil
}

// compactJSON renders raw JSON on one line (for table cells and tail lines); invalid
// JSON is returned as it is.
func compactJSON(raw []byte) string {
	if len(raw) == 0 {
		return "null"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// indentJSON renders raw JSON indented by two spaces (message payloads in detail
// views).
func indentJSON(raw []byte, prefix string) string {
	if len(raw) == 0 {
		return "null"
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, prefix, "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && f != nil && isTTY(f)
}

// useColor reports whether output to w may carry ANSI colours: only on a terminal,
// never with --no-color, NO_COLOR set or TERM=dumb.
func (a *app) useColor(w io.Writer) bool {
	if a.g.noColor || a.env["NO_COLOR"] != "" || a.env["TERM"] == "dumb" {
		return false
	}
	return isTerminal(w)
}
