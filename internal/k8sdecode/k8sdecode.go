// Package k8sdecode decodes Kubernetes YAML strictly, for the tests of the reference
// manifests (packaging/kubernetes) and of the Helm chart (packaging/helm): a field the
// API types do not have is an error, not a silently dropped typo. Test support only.
package k8sdecode

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
)

// NewDecoder returns a strict decoder for the kinds the adders register (the AddToScheme
// functions of the API groups).
func NewDecoder(adders ...func(*runtime.Scheme) error) (runtime.Decoder, error) {
	scheme := runtime.NewScheme()
	for _, add := range adders {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer(), nil
}

// All splits a YAML stream into documents and decodes each one with dec; a document of
// comments only is skipped. An error names the document (1-based) and shows it.
func All(dec runtime.Decoder, data []byte) ([]runtime.Object, error) {
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []runtime.Object
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if onlyComments(doc) {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w\n%s", i, err, doc)
		}
		out = append(out, obj)
	}
}

func onlyComments(doc []byte) bool {
	for line := range strings.SplitSeq(string(doc), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}
