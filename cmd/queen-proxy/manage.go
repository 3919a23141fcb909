package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/queenmq/queen/internal/proxy/brokerauth"
	"github.com/queenmq/queen/internal/proxy/config"
	"github.com/queenmq/queen/internal/proxy/gateway"
	"github.com/queenmq/queen/internal/proxy/manage"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// cliActor names the command line in the audit log: "cli:$USER".
func cliActor(environ []string) string {
	for _, kv := range environ {
		if u, ok := strings.CutPrefix(kv, "USER="); ok && u != "" {
			return "cli:" + u
		}
	}
	return "cli"
}

// usageError is a wrong command line: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// cmdEnv is what a management command runs with.
type cmdEnv struct {
	ctx   context.Context
	cfg   *config.Config
	m     *manage.Manager
	out   io.Writer
	json  bool
	args  []string
	fs    *flag.FlagSet
	actor string

	environ []string
	// brokers says the command calls the brokers (a purge): it needs their settings
	// as well as the database's.
	brokers bool
	closers []func()
}

// manageUsage lists the management commands.
const manageUsage = `usage: queen-proxy COMMAND ... [-o json]   (on the proxy database: the server may be down)

  tenant create ID [--name N] [--limits JSON] [--quotas JSON] [--cell C]   (no cell: the placement policy picks)
  tenant list [--status active|suspended|deleted] [--limit N] [--offset N]
  tenant show ID
  tenant update ID [--name N] [--limits JSON] [--quotas JSON]   (JSON null resets to the defaults)
  tenant suspend|resume|delete ID
  tenant purge ID                  delete a suspended or deleted tenant's queues at the brokers
  key create TENANT --scope push|read|write|admin [--name N] [--queues a,b*] [--expires RFC3339]
  key list TENANT
  key rotate KEY_ID [--grace 24h]
  key revoke KEY_ID
  user create NAME --role admin|read-write|read-only [--tenant T]   (password from stdin)
  user list [--tenant T]
  user delete NAME
  user passwd NAME                 (password from stdin)
  usage [--tenant T] [--from RFC3339] [--to RFC3339] [--granularity minute|hour|day]
  cell list
  cell show NAME
  cell create NAME --upstreams URL[,URL...] [--capacity-bytes N] [--capacity-rate MSG/S] [--closed true]
  cell update NAME [--upstreams URL[,URL...]] [--capacity-bytes N] [--capacity-rate MSG/S] [--closed true|false]
  cell close|open NAME             close a cell to new tenants, or open it again
  cell delete NAME                 only a cell no tenant lives in and no live move names
`

// runManage runs one management command; it returns the exit status.
func runManage(args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := manageCommand(args, environ, stdin, stdout)
	var ue *usageError
	var ve *tenant.ValidationError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "queen-proxy: %v\n\n%s", err, manageUsage)
		return exitUsage
	case config.IsConfigError(err):
		fmt.Fprintln(stderr, err)
		return exitConfig
	case errors.As(err, &ve):
		fmt.Fprintf(stderr, "queen-proxy: invalid %s\n", ve.Error())
		return exitFailure
	case errors.Is(err, tenant.ErrNotFound):
		fmt.Fprintln(stderr, "queen-proxy: not found")
		return exitFailure
	case errors.Is(err, tenant.ErrIDNeverReused):
		fmt.Fprintln(stderr, "queen-proxy:", tenant.ErrIDNeverReused)
		return exitFailure
	case errors.Is(err, tenant.ErrAlreadyExists):
		fmt.Fprintln(stderr, "queen-proxy: already exists")
		return exitFailure
	}
	fmt.Fprintln(stderr, "queen-proxy:", err)
	return exitFailure
}

func manageCommand(args, environ []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) < 1 {
		return usagef("missing command")
	}
	group, verb := args[0], ""
	rest := args[1:]
	if group != "usage" {
		if len(rest) == 0 {
			return usagef("%s: missing sub-command", group)
		}
		verb, rest = rest[0], rest[1:]
	}
	run, ok := commands[group+" "+verb]
	if !ok {
		return usagef("unknown command %q", strings.TrimSpace(group+" "+verb))
	}
	fs := flag.NewFlagSet("queen-proxy "+group+" "+verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	output := fs.String("o", "", "output format: json")
	e := &cmdEnv{fs: fs, out: stdout, actor: cliActor(environ)}
	call := run(e)
	pos, err := parseInterspersed(fs, rest)
	if err != nil {
		return usagef("%v", err)
	}
	if *output != "" && *output != "json" {
		return usagef("-o takes json")
	}
	e.json, e.args, e.environ = *output == "json", pos, environ
	defer e.close()
	return call(stdin)
}

// open loads the settings the command needs (the database's, and the brokers' for a
// purge; not the server's secrets) and opens the proxy database, its schema applied.
func (e *cmdEnv) open() error {
	names := config.DatabaseSettings()
	if e.brokers {
		names = append(names, config.BrokerSettings()...)
	}
	cfg, err := config.LoadOnly(e.environ, names...)
	if err != nil {
		return err
	}
	// The configuration owns the default cell's upstreams (the server stores them at
	// its start): the command line does not change them either.
	st, err := store.Open(store.Options{ConnString: cfg.PGConnString(), MaxConns: 2, StatementTimeout: cfg.DBStatementTimeout,
		DefaultCellOwned: true})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	e.closers = append(e.closers, st.Close, cancel)
	if err := st.ApplySchema(ctx); err != nil {
		return fmt.Errorf("proxy database: %w", err)
	}
	e.ctx, e.cfg, e.m = ctx, cfg, manage.New(st, time.Now, 0)
	return nil
}

func (e *cmdEnv) close() {
	for _, c := range e.closers {
		c()
	}
}

// parseInterspersed parses flags anywhere among the positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
}

// want requires the positional arguments named names, then opens the database:
// a wrong command line is a usage error whatever the configuration.
func (e *cmdEnv) want(names ...string) error {
	if len(e.args) != len(names) {
		if len(names) == 0 {
			return usagef("takes no arguments")
		}
		return usagef("want %s", strings.Join(names, " "))
	}
	return e.open()
}

// print writes v as JSON with -o json, else as text: a table for lists (rows from
// table), indented JSON for one object.
func (e *cmdEnv) print(v any, header string, rows func(w io.Writer)) error {
	if e.json || rows == nil {
		enc := json.NewEncoder(e.out)
		if !e.json {
			enc.SetIndent("", "  ")
		}
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	return tw.Flush()
}

// readPassword reads a password: the first line of stdin.
func readPassword(stdin io.Reader) (string, error) {
	raw, err := io.ReadAll(io.LimitReader(stdin, 4096))
	if err != nil {
		return "", err
	}
	pw, _, _ := strings.Cut(string(raw), "\n")
	return strings.TrimRight(pw, "\r"), nil
}

// purge deletes the tenant's queues through the first broker that answers, as the
// proxy itself would.
func (e *cmdEnv) purge(ctx context.Context, id string) (int, error) {
	var minter *brokerauth.Minter
	if e.cfg.BrokerAuth == "jwt" {
		var err error
		if minter, err = brokerauth.New(e.cfg.BrokerJWTKey, e.cfg.BrokerJWTIssuer, e.cfg.BrokerJWTAudience, e.cfg.BrokerJWTTTL, time.Now); err != nil {
			return 0, err
		}
	}
	// Each connection is checked as the proxy checks it: a broker with tenancy off
	// would take the tenant's listing and deletes in global scope, every queue.
	authorize := func(req *http.Request) error {
		if minter == nil {
			return nil
		}
		tok, err := minter.Token(brokerauth.Claims{Subject: "queen-proxy", Role: e.cfg.BrokerRoleAdmin})
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		return nil
	}
	client := &http.Client{Transport: gateway.NewTransport(e.cfg.TenancyHeader, authorize)}
	defer client.CloseIdleConnections()
	// A broker that fails midway leaves the rest to the next one; deleted counts
	// whatever any of them deleted.
	deleted := 0
	var lastErr error
	for _, u := range e.cfg.Backends {
		n, err := gateway.Purge(ctx, gateway.PurgeTarget{Client: client, Base: u, Header: e.cfg.TenancyHeader,
			Minter: minter, AdminRole: e.cfg.BrokerRoleAdmin}, id)
		deleted += n
		if !errors.Is(err, gateway.ErrPurgeUnavailable) {
			return deleted, err
		}
		lastErr = err
	}
	return deleted, lastErr
}
