package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// ErrNoEnvFiles is returned by Reloader.Reload when QUEEN_ENV_FILES names no file:
// there is nothing to re-read, and the environment of a running process cannot change.
var ErrNoEnvFiles = errors.New("QUEEN_ENV_FILES names no env file to re-read")

// Reloader answers a reload request (SIGHUP) honestly. A process's environment never
// changes while it runs, and systemd reads EnvironmentFile= only at start; what can
// change is the files themselves. A Reloader remembers what the files of
// QUEEN_ENV_FILES held at start, and Reload rebuilds the configuration a restart would
// give now: the environment the process started with, the variables the files set at
// start taken out, and the files' current contents put in (a later file, and a later
// line, wins, as with systemd). Variables that reach the process in other ways (the
// unit's Environment=, credentials) count as unchanged.
type Reloader struct {
	running *Config
	// atStart holds each variable the files set at start, with the last file setting it.
	atStart map[string]fileValue
	// startErr is why the files could not be read at start, if they could not.
	startErr error
}

// NewReloader reads the env files of c now. Call it at start-up, with the Config that
// Load returned for the process environment, so that a reload can tell a variable
// removed from a file from one set in another way. A file that cannot be read now is
// not an error here: StartErr reports it and each Reload tries again.
func (c *Config) NewReloader() *Reloader {
	r := &Reloader{running: c}
	r.atStart, _, r.startErr = readEnvFiles(c.EnvFiles)
	return r
}

// Files returns the env files a reload re-reads (QUEEN_ENV_FILES).
func (r *Reloader) Files() []string { return append([]string(nil), r.running.EnvFiles...) }

// StartErr reports why the env files could not be read at start-up, or nil. A reload
// can then not tell a variable removed from a file from one set elsewhere.
func (r *Reloader) StartErr() error { return r.startErr }

// Change is one setting whose value in the env files differs from the running
// configuration's.
type Change struct {
	Name string // the variable
	// File is the env file that sets it now or, when it was removed, set it at start;
	// "" when it changed by another way than the files (a credential).
	File string
}

// Reloaded is the outcome of one Reload.
type Reloaded struct {
	// Config is the configuration a restart would load now. Only the caller decides
	// what of it takes effect without a restart.
	Config *Config
	// Changed lists the settings whose values differ from the running configuration's,
	// in table order. Secrets are named, never shown.
	Changed []Change
	// Files lists the files read, in order; Missing those that do not exist, which
	// count as empty (systemd's EnvironmentFile=-path).
	Files, Missing []string
}

// Reload re-reads the env files and loads the configuration they give. It fails with
// ErrNoEnvFiles when QUEEN_ENV_FILES is empty, with the read error when a file cannot
// be read, and with a Load error (matching ErrInvalid) when the files hold an invalid
// configuration, which a restart would refuse with exit status 78.
func (r *Reloader) Reload() (*Reloaded, error) {
	files := r.running.EnvFiles
	if len(files) == 0 {
		return nil, ErrNoEnvFiles
	}
	now, missing, err := readEnvFiles(files)
	if err != nil {
		return nil, err
	}
	env := make([]string, 0, len(r.running.environ)+len(now))
	for name, fv := range now {
		env = append(env, name+"="+fv.value)
	}
	for _, kv := range r.running.environ {
		name, _, _ := strings.Cut(kv, "=")
		if _, fromFile := r.atStart[name]; fromFile {
			continue
		}
		if _, inFile := now[name]; inFile {
			continue
		}
		env = append(env, kv)
	}
	next, err := Load(env)
	if err != nil {
		return nil, err
	}
	out := &Reloaded{Config: next, Files: files, Missing: missing}
	for _, s := range table() {
		if s.bind(r.running).Get() == s.bind(next).Get() {
			continue
		}
		ch := Change{Name: s.name, File: r.atStart[s.name].file}
		if fv, ok := now[s.name]; ok {
			ch.File = fv.file
		}
		out.Changed = append(out.Changed, ch)
	}
	return out, nil
}

// fileValue is a variable's value in the env files and the last file that sets it.
type fileValue struct{ value, file string }

// readEnvFiles reads the files in order. It returns, for each variable they set, its
// value in the last file setting it, and the files that do not exist.
func readEnvFiles(files []string) (vars map[string]fileValue, missing []string, err error) {
	vars = make(map[string]fileValue)
	for _, f := range files {
		data, err := os.ReadFile(f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = append(missing, f)
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("read env file: %w", err)
		}
		for _, kv := range parseEnvFile(string(data)) {
			name, value, _ := strings.Cut(kv, "=")
			vars[name] = fileValue{value, f}
		}
	}
	return vars, missing, nil
}
