package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"golang.org/x/term"
)

// loginCommand is `queenctl login`: it asks a queen-proxy (never a broker) for a
// session token, and keeps it in the context in use or one named by --save.
func loginCommand() *command {
	return &command{
		name: "login", summary: "get a session token from a queen-proxy (username and password)",
		help: "POSTs the username and password to the proxy's /api/login (the server is --server,\n" +
			"QUEEN_SERVER or the context: the proxy's public URL) and takes the token cookie it\n" +
			"sets. The password is read from stdin (one line; prompted for, without echo, on a\n" +
			"terminal). The token is saved in the context in use, or in --save NAME (created\n" +
			"with the server); with neither it is printed, e.g. for\n" +
			"export QUEEN_TOKEN=$(queenctl login ...).\n" +
			"Only --method password exists: the proxy has no Google sign-in.",
		setup: func(fs *flag.FlagSet) runFunc {
			method := fs.String("method", "password", "sign-in `METHOD`: password")
			username := fs.String("username", "", "`USER` to sign in as (default: prompted for)")
			save := fs.String("save", "", "save the token in context `NAME` (created if missing)")
			return func(ctx context.Context, a *app, _ []string) error {
				if *method != "password" {
					return usagef("--method %q: only password is supported", *method)
				}
				t, err := a.resolve()
				if err != nil {
					return err
				}
				if _, err := a.client(); err != nil {
					return err
				}
				if err := checkPasswordLogin(ctx, a, t); err != nil {
					return err
				}
				user := *username
				if user == "" {
					if user, err = readSecretLine(a, "Username: "); err != nil {
						return err
					}
				}
				pw, err := readPassword(a, "Password: ")
				if err != nil {
					return err
				}
				token, role, err := passwordLogin(ctx, a, t, user, pw)
				if err != nil {
					return err
				}
				return a.keepToken(t, *save, token, user, role)
			}
		},
	}
}

// checkPasswordLogin reads the proxy's /api/auth/config: a server without it is no
// proxy.
func checkPasswordLogin(ctx context.Context, a *app, t *target) error {
	var cfg struct {
		Password *struct {
			Enabled bool `json:"enabled"`
		} `json:"password"`
		Google struct {
			Enabled bool `json:"enabled"`
		} `json:"google"`
	}
	if _, err := a.c.Do(ctx, http.MethodGet, "/api/auth/config", nil, &cfg); err != nil {
		return fail(err, "%s is not a queen-proxy with login (GET /api/auth/config)", t.server)
	}
	if cfg.Password != nil && !cfg.Password.Enabled {
		return &codeError{code: ExitAuth, msg: t.server + " has password login turned off (QUEEN_PROXY_LOGIN=false)"}
	}
	return nil
}

// passwordLogin posts the credentials and returns the token cookie's value.
func passwordLogin(ctx context.Context, a *app, t *target, user, pw string) (string, string, error) {
	body, _ := json.Marshal(map[string]string{"username": user, "password": pw})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.server+"/api/login", bytes.NewReader(body))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent())
	resp, err := a.hc.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var ans struct {
		Error string `json:"error"`
		User  struct {
			Role string `json:"role"`
		} `json:"user"`
	}
	_ = json.Unmarshal(raw, &ans)
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return "", "", &codeError{code: ExitAuth, msg: "login refused: " + orDash(ans.Error)}
	case resp.StatusCode == http.StatusTooManyRequests:
		return "", "", &codeError{code: ExitUnavailable, msg: "too many failed logins; retry after " + resp.Header.Get("Retry-After") + "s"}
	case resp.StatusCode != http.StatusOK:
		return "", "", &codeError{code: ExitFailure, msg: fmt.Sprintf("login failed (HTTP %d): %s", resp.StatusCode, orDash(ans.Error))}
	}
	for _, c := range resp.Cookies() {
		if c.Name == "token" && c.Value != "" {
			return c.Value, ans.User.Role, nil
		}
	}
	return "", "", &codeError{code: ExitFailure, msg: "the login answer set no token cookie"}
}

// keepToken saves the token in the context named save, else the context in use,
// else prints it.
func (a *app) keepToken(t *target, save, token, user, role string) error {
	name := save
	if name == "" {
		name = t.context
	}
	result := map[string]string{"username": user, "role": role, "server": t.server}
	if name == "" {
		result["token"] = token
		return a.show(result, func(w *tw) { w.line("%s", token) })
	}
	f, err := a.ctxFile()
	if err != nil {
		return err
	}
	entry := ctxEntry{Name: name, Token: token}
	if f.find(name) == nil {
		entry.Server = t.server
	}
	f.set(entry)
	if len(f.Contexts) == 1 {
		f.CurrentContext = name
	}
	if err := f.save(); err != nil {
		return err
	}
	result["context"] = name
	return a.show(result, func(w *tw) {
		w.line("Logged in to %s as %s (%s); token saved in context %s.", t.server, user, role, name)
	})
}

// maxSecretLine bounds what readSecretLine and readPassword read.
const maxSecretLine = 4096

// readPassword reads the password: typed at a terminal, after a prompt on stderr and
// with echo off; else the next line of stdin, as readSecretLine does.
func readPassword(a *app, prompt string) (string, error) {
	f, ok := a.stdin.(*os.File)
	if !ok || !isTTY(f) {
		return readSecretLine(a, prompt)
	}
	fmt.Fprint(a.stderr, prompt)
	raw, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(a.stderr) // the Enter key was not echoed either
	if err != nil {
		return "", fmt.Errorf("read the password from the terminal: %w", err)
	}
	if len(raw) > maxSecretLine {
		raw = raw[:maxSecretLine]
	}
	pw := strings.TrimRight(string(raw), "\r")
	if pw == "" {
		return "", usagef("password: nothing typed")
	}
	return pw, nil
}

// readSecretLine reads one line of stdin, after a prompt on stderr when stdin is a
// terminal.
func readSecretLine(a *app, prompt string) (string, error) {
	if f, ok := a.stdin.(*os.File); ok && isTTY(f) {
		fmt.Fprint(a.stderr, prompt)
	}
	// One byte at a time: a buffered reader would swallow the next line (the
	// password after the username).
	var b strings.Builder
	one := make([]byte, 1)
	for b.Len() < maxSecretLine {
		n, err := a.stdin.Read(one)
		if n == 1 {
			if one[0] == '\n' {
				break
			}
			b.WriteByte(one[0])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	line := strings.TrimRight(b.String(), "\r")
	if line == "" {
		return "", usagef("%s: nothing read from stdin", strings.TrimSuffix(strings.ToLower(prompt), ": "))
	}
	return line, nil
}
