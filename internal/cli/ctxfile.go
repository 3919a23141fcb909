package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"
)

// ctxFile is queenctl's config file: named contexts, each a broker and its token,
// and the one in use. On disk it is YAML:
//
//	current-context: prod
//	contexts:
//	  - name: local
//	    server: http://localhost:6632
//	  - name: prod
//	    server: https://queen.example.com
//	    token: eyJhbGciOi...
type ctxFile struct {
	CurrentContext string     `yaml:"current-context,omitempty" json:"current-context,omitempty"`
	Contexts       []ctxEntry `yaml:"contexts" json:"contexts"`

	// path is where the file was read from and is written to.
	path string
}

// ctxEntry is one named context of a [ctxFile].
type ctxEntry struct {
	Name   string `yaml:"name" json:"name"`
	Server string `yaml:"server,omitempty" json:"server,omitempty"`
	Token  string `yaml:"token,omitempty" json:"token,omitempty"`
}

// configPath picks the config file: the --config flag, else $QUEENCTL_CONFIG, else
// $XDG_CONFIG_HOME/queenctl/config.yaml, else $HOME/.config/queenctl/config.yaml. It
// returns "" when none can be derived (no HOME).
func configPath(flagValue string, env map[string]string) string {
	switch {
	case flagValue != "":
		return flagValue
	case env["QUEENCTL_CONFIG"] != "":
		return env["QUEENCTL_CONFIG"]
	case env["XDG_CONFIG_HOME"] != "":
		return filepath.Join(env["XDG_CONFIG_HOME"], "queenctl", "config.yaml")
	case env["HOME"] != "":
		return filepath.Join(env["HOME"], ".config", "queenctl", "config.yaml")
	}
	return ""
}

// loadCtxFile reads the config file at path. A missing file is an empty config, not
// an error; a malformed one is a usage error naming the file.
func loadCtxFile(path string) (*ctxFile, error) {
	f := &ctxFile{path: path}
	if path == "" {
		return f, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, usagef("config file %s: %v", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil && !errors.Is(err, io.EOF) {
		return nil, usagef("config file %s: %v", path, err)
	}
	for i, c := range f.Contexts {
		if c.Name == "" {
			return nil, usagef("config file %s: context #%d has no name", path, i+1)
		}
	}
	return f, nil
}

// find returns the named context, or nil.
func (f *ctxFile) find(name string) *ctxEntry {
	for i := range f.Contexts {
		if f.Contexts[i].Name == name {
			return &f.Contexts[i]
		}
	}
	return nil
}

// set adds or updates a context; empty fields of c leave the stored ones alone.
func (f *ctxFile) set(c ctxEntry) {
	if e := f.find(c.Name); e != nil {
		if c.Server != "" {
			e.Server = c.Server
		}
		if c.Token != "" {
			e.Token = c.Token
		}
		return
	}
	f.Contexts = append(f.Contexts, c)
}

// remove deletes a context and reports whether it existed; removing the current
// context clears current-context.
func (f *ctxFile) remove(name string) bool {
	i := slices.IndexFunc(f.Contexts, func(c ctxEntry) bool { return c.Name == name })
	if i < 0 {
		return false
	}
	f.Contexts = slices.Delete(f.Contexts, i, i+1)
	if f.CurrentContext == name {
		f.CurrentContext = ""
	}
	return true
}

// save writes the file atomically with mode 0600, since it may hold tokens.
func (f *ctxFile) save() error {
	if f.path == "" {
		return usagef("no config file: set --config, QUEENCTL_CONFIG or HOME")
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return err
	}
	data := buf.Bytes()
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("config file %s: %w", f.path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".queenctl-*.yaml")
	if err != nil {
		return fmt.Errorf("config file %s: %w", f.path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("config file %s: %w", f.path, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("config file %s: %w", f.path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("config file %s: %w", f.path, err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("config file %s: %w", f.path, err)
	}
	return nil
}
