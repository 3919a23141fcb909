package cli

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// jsonToYAML renders a JSON document as block-style YAML, keeping the key order of
// the JSON. It parses the JSON as YAML (JSON is YAML's flow style), then clears the
// flow and quoting styles so that the encoder picks the block form and quotes only
// the strings that need it ("true", "123", "a: b", ...) to stay strings.
func jsonToYAML(doc []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(doc, &n); err != nil {
		return nil, fmt.Errorf("convert to YAML: %w", err)
	}
	blockStyle(&n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, fmt.Errorf("convert to YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("convert to YAML: %w", err)
	}
	return buf.Bytes(), nil
}

// blockStyle clears the style of n and everything below it, except that empty
// mappings and sequences stay {} and [], and that strings a YAML 1.1 reader would
// take for a boolean or null (yes, off, ~ ...) stay quoted.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	switch {
	case (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && len(n.Content) == 0:
		n.Style = yaml.FlowStyle
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str" && yaml11Word(n.Value):
		n.Style = yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// yaml11Word reports the plain words YAML 1.1 reads as booleans or null, which
// YAML 1.2 encoders leave unquoted.
func yaml11Word(s string) bool {
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "on", "off", "~":
		return true
	}
	return false
}
