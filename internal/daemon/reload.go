package daemon

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/queenmq/queen/internal/appliance"
	"github.com/queenmq/queen/internal/config"
)

// reloader answers SIGHUP. The process environment cannot change under a running
// process, and systemd reads EnvironmentFile= only at start, so a reload re-reads the
// env files named by QUEEN_ENV_FILES (config.Reloader): a changed LOG_LEVEL takes
// effect at once; every other changed setting is logged as needing a restart, and an
// invalid file is reported before a restart would trip over it. A reload never stops
// or pauses the broker.
type reloader struct {
	sigs   <-chan os.Signal
	files  *config.Reloader
	level  *slog.LevelVar
	logger *slog.Logger
	// logLevel is the LOG_LEVEL in force; it differs from the running configuration's
	// once a reload changed it.
	logLevel string
	// reported holds the unknown variables already warned about, so that each reload
	// warns only about new ones.
	reported map[string]bool
}

// newReloader returns the reloader serving sigs (SIGHUP), or nil when sigs is nil. It
// reads the env files now, at start-up, so that a reload can tell a variable removed
// from a file from one that reaches the process in another way.
func newReloader(cfg *config.Config, level *slog.LevelVar, logger *slog.Logger, sigs <-chan os.Signal) *reloader {
	if sigs == nil {
		return nil
	}
	r := &reloader{
		sigs: sigs, files: cfg.NewReloader(), level: level, logger: logger.With("component", "reload"),
		logLevel: cfg.LogLevel, reported: make(map[string]bool),
	}
	for _, u := range cfg.UnknownVariables() {
		r.reported[u.Name] = true
	}
	if err := r.files.StartErr(); err != nil {
		r.logger.Debug("cannot read the env files now; SIGHUP will try again", "files", cfg.EnvFiles, "err", err)
	}
	return r
}

// Run serves reload requests until ctx is done or the signal channel is closed.
func (r *reloader) Run(ctx context.Context) error { return appliance.RunSignals(ctx, r.sigs, r.reload) }

// reload handles one request and logs what it did: what took effect, what needs a
// restart, or why nothing was reloaded.
func (r *reloader) reload(ctx context.Context, sig os.Signal) {
	r.logger.Info("received SIGHUP: re-reading the env files", "signal", sig.String(), "files", r.files.Files())
	res, err := r.files.Reload()
	switch {
	case errors.Is(err, config.ErrNoEnvFiles):
		r.logger.Warn("nothing reloaded: QUEEN_ENV_FILES names no env file, and a running process's environment cannot change; restart to apply changes")
		return
	case errors.Is(err, config.ErrInvalid):
		r.logger.Error("nothing reloaded: the env files hold an invalid configuration, which a restart would refuse (exit status 78); fix them",
			"files", r.files.Files(), "err", err)
		return
	case errors.Is(err, fs.ErrPermission):
		r.logger.Warn("nothing reloaded: this process may not read the env files; systemd reads them as root at start, "+
			"so a restart still applies changes, and giving the service's group read access (chgrp queen FILE) lets a reload read them",
			"err", err)
		return
	case err != nil:
		r.logger.Warn("nothing reloaded: cannot read the env files", "err", err)
		return
	}
	if err := r.files.StartErr(); err != nil {
		r.logger.Info("the env files could not be read at start, so a variable removed from them since goes unnoticed",
			"err", err)
	}
	next := res.Config
	var unknown []config.UnknownVariable
	for _, u := range next.UnknownVariables() {
		if !r.reported[u.Name] {
			r.reported[u.Name] = true
			unknown = append(unknown, u)
		}
	}
	logUnknownVariables(r.logger, unknown)
	if len(res.Missing) > 0 {
		r.logger.Info("env files not found, counted as empty", "files", res.Missing)
	}

	needsRestart := r.logNeedsRestart(res.Changed)
	if next.LogLevel == r.logLevel {
		r.logger.Info("reloaded: nothing to apply", "log_level", r.logLevel, "needs_restart", needsRestart)
		return
	}
	// The new level is in force before the line is logged, at Info or, when the new
	// level is above Info, at the new level, so that the line always shows.
	to := next.SlogLevel()
	r.level.Set(to)
	r.logger.Log(ctx, max(slog.LevelInfo, to),
		"reloaded: log_level "+r.logLevel+"→"+next.LogLevel, "from", r.logLevel, "to", next.LogLevel)
	r.logLevel = next.LogLevel
}

// logNeedsRestart logs, one line per env file, the changed settings other than
// LOG_LEVEL, which only a restart applies, and reports whether there were any.
func (r *reloader) logNeedsRestart(changes []config.Change) bool {
	restart := make(map[string][]string) // file → settings
	var files []string
	for _, ch := range changes {
		if ch.Name == "LOG_LEVEL" {
			continue
		}
		if _, ok := restart[ch.File]; !ok {
			files = append(files, ch.File)
		}
		restart[ch.File] = append(restart[ch.File], ch.Name)
	}
	for _, f := range files {
		where := "in " + f
		if f == "" {
			where = "outside the env files"
		}
		r.logger.Warn("changed "+where+" but needs a restart: "+strings.Join(restart[f], ", "),
			"file", f, "settings", restart[f])
	}
	return len(files) > 0
}
