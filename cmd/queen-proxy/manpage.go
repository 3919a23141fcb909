package main

import (
	"flag"
	"strings"

	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/manpage"
	"github.com/queenmq/queen/internal/proxy/config"
)

// manPage is queen-proxy(8), the roff page of -man that the packages install. Its
// options come from fs, its management commands from manageUsage and its
// environment from the settings table.
func manPage(fs *flag.FlagSet) *manpage.Page {
	options := manpage.FlagItems(fs, func(name string) bool { return !hiddenFlags[name] },
		func(string) []string { return nil })
	options = append(options, manpage.Item{Tag: "-h, --help", Text: []string{"Print the usage: the commands and the flags."}})
	var env []manpage.Item
	for _, r := range config.References() {
		text := r.Doc
		if text != "" {
			text = strings.ToUpper(text[:1]) + text[1:] + ". "
		}
		text += "Accepts: " + r.Accepts + ". "
		if r.Default != "" {
			text += "Default `" + r.Default + "`."
		} else {
			text += "Default: unset."
		}
		if r.Fallback != "" {
			text += " When unset, " + r.Fallback + " (Queen 0.15's name) is read."
		}
		if r.Secret {
			text += " A secret: never printed or logged; also read from $CREDENTIALS_DIRECTORY/" + r.Name + "."
		}
		env = append(env, manpage.Item{Tag: r.Name, Text: []string{text}})
	}
	return &manpage.Page{
		Name: "queen-proxy", Section: "8", Manual: "System Manager's Manual",
		Source: "queen " + buildinfo.Version, Date: buildDate(),
		Summary: "the multi-tenant gateway in front of queen brokers",
		Synopsis: []string{"queen-proxy [serve]", "queen-proxy -version | -check-config | -print-config | -print-schema",
			"queen-proxy tenant|key|user|usage|cell ...", "queen-proxy help"},
		Sections: []manpage.Section{
			{Title: "Description", Text: []string{
				"queen-proxy sits in front of 1 to 3 queen brokers and serves their HTTP API to tenants: API keys " +
					"with scopes, rate limits, quotas and metering per tenant, and a loopback admin API to manage " +
					"them. It keeps its own state in its own PostgreSQL database (schema queen_proxy), not the " +
					"brokers'. The brokers scope every request to the tenant named by the header " +
					"QUEEN_TENANCY_HEADER, which they set to the same name.",
				"All configuration comes from environment variables (under systemd: the file " +
					"/etc/queen/queen-proxy.env); the flags choose what to do, not how.",
			}},
			{Title: "Commands", Items: []manpage.Item{
				{Tag: "serve", Text: []string{"Run the gateway. The default; what queen-proxy.service starts."}},
				{Tag: "tenant, key, user, usage, cell", Text: []string{"Manage tenants, keys, users and cells, and read usage, " +
					"on the proxy database directly (the server may be down):", literal(manageUsage)}},
				{Tag: "help", Text: []string{"Print the management commands."}},
			}},
			{Title: "Options", Items: options},
			{Title: "Environment", Text: []string{
				"Booleans accept true/false, 1/0, yes/no, on/off; a bad value or an unknown QUEEN_PROXY_* " +
					"variable is a configuration error (exit status 78) naming the variable. Under systemd the " +
					"sockets queen-proxy.socket (named http) and queen-proxy-admin.socket (named admin) win over " +
					"HOST, PORT and QUEEN_PROXY_ADMIN_LISTEN.",
			}, Items: env},
			{Title: "Files", Items: []manpage.Item{
				{Tag: "/etc/queen/queen-proxy.env", Text: []string{"Settings of queen-proxy.service (a conffile)."}},
				{Tag: "/etc/queen/credentials/", Text: []string{"Root-only secrets for LoadCredential= drop-ins."}},
				{Tag: "/usr/lib/systemd/system/queen-proxy.service", Text: []string{"The service; disabled until " +
					"enabled with: systemctl enable --now queen-proxy.socket queen-proxy-admin.socket"}},
				{Tag: "/usr/lib/systemd/system/queen-proxy.socket, queen-proxy-admin.socket", Text: []string{
					"The public socket (port 6640) and the admin API's (127.0.0.1:6641)."}},
			}},
			{Title: "Exit status", Items: []manpage.Item{
				{Tag: "0", Text: []string{"Success, including a drained stop."}},
				{Tag: "1", Text: []string{"Run-time failure."}},
				{Tag: "2", Text: []string{"Usage error."}},
				{Tag: "78", Text: []string{"Configuration error (EX_CONFIG); the unit does not restart it."}},
			}},
			{Title: "See also", Text: []string{
				"queen(8), queenctl(1), systemctl(1), /usr/share/doc/queen/multi-tenant.md",
			}},
		},
	}
}

// literal indents text so that the page keeps it as written.
func literal(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = " " + l
	}
	return strings.Join(lines, "\n")
}

// buildDate is the date of the build (YYYY-MM-DD) for the page's footer, or
// "unknown" in a build without one (go run, tests).
func buildDate() string {
	if d, _, ok := strings.Cut(buildinfo.Date, "T"); ok && len(d) == len("2006-01-02") {
		return d
	}
	return buildinfo.Date
}
