package appliance

import (
	"bytes"
	"io"
	"log/slog"
	"os"

	"github.com/coreos/go-systemd/v22/journal"
)

// NewLogger builds the one logger of a process: JSON lines for journald, or text when
// format is "text"; with syslog priority prefixes when out is the journal
// (LogOutput). Its level is the returned LevelVar, so that a reload (SIGHUP) can
// change it while the daemon runs.
func NewLogger(out io.Writer, format string, level slog.Level) (*slog.Logger, *slog.LevelVar) {
	out = LogOutput(out)
	lv := new(slog.LevelVar)
	lv.Set(level)
	opts := &slog.HandlerOptions{Level: lv}
	if format == "text" {
		return slog.New(slog.NewTextHandler(out, opts)), lv
	}
	return slog.New(slog.NewJSONHandler(out, opts)), lv
}

// journalWriter prefixes every log line with its syslog priority ("<3>" error, "<4>"
// warning, "<6>" info, "<7>" debug). journald reads the prefix and strips it
// (SyslogLevelPrefix=, on by default), so `journalctl -u queen -p warning` shows
// warnings and errors only, and they are highlighted. slog writes each record with one
// Write call, and the level comes right after the time on every line.
type journalWriter struct{ w io.Writer }

func (j journalWriter) Write(p []byte) (int, error) {
	line := make([]byte, 0, 3+len(p))
	line = append(line, syslogPriority(p)...)
	if _, err := j.w.Write(append(line, p...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// syslogPriority is the journald prefix for a line written by slog's JSON or text
// handler: its level (ERROR, WARN, INFO, DEBUG, possibly with an offset such as
// ERROR+2) read from the first bytes of the line.
func syslogPriority(line []byte) string {
	head := line[:min(len(line), 96)]
	i := bytes.Index(head, []byte(`"level":"`))
	if i >= 0 {
		i += len(`"level":"`)
	} else if i = bytes.Index(head, []byte(" level=")); i >= 0 {
		i += len(" level=")
	} else {
		return "<6>"
	}
	switch level := head[i:]; {
	case bytes.HasPrefix(level, []byte("ERROR")):
		return "<3>"
	case bytes.HasPrefix(level, []byte("WARN")):
		return "<4>"
	case bytes.HasPrefix(level, []byte("DEBUG")):
		return "<7>"
	}
	return "<6>"
}

// LogOutput is where a logger writes: out itself, or, when out is the process's
// stdout and that is connected to the journal (systemd's JOURNAL_STREAM), out with
// syslog priority prefixes.
func LogOutput(out io.Writer) io.Writer {
	if out != io.Writer(os.Stdout) {
		return out
	}
	if ok, err := journal.StdoutIsJournalStream(); err != nil || !ok {
		return out
	}
	return journalWriter{out}
}
