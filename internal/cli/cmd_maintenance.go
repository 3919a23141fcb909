package cli

import (
	"context"
	"flag"
	"net/http"

	"github.com/queenmq/queen/internal/api"
)

// The push/pop pause routes: the HTTP API calls the pause maintenance mode.
const (
	pushPausePath = "/api/v1/system/maintenance"
	popPausePath  = "/api/v1/system/maintenance/pop"
)

// maintenanceCommand is `queenctl maintenance`: it switches the push/pop pause, which
// the HTTP API, this command and the original project call maintenance mode (not the
// periodic maintenance jobs).
func maintenanceCommand() *command {
	toggle := func(on bool) *command {
		name, summary := "off", "turn push or pop maintenance off"
		if on {
			name, summary = "on", "turn push or pop maintenance on"
		}
		return &command{
			name: name, args: "push|pop|all", minArgs: 1, maxArgs: 1, summary: summary,
			help: "push: the broker refuses pushes (503) while on. pop: every pop answers\n" +
				"\"no messages\" at once while on. Both apply to every broker of the cluster\n" +
				"within about 2 s. Prints the resulting state of both.",
			setup: func(*flag.FlagSet) runFunc {
				return func(ctx context.Context, a *app, args []string) error {
					var paths []string
					switch args[0] {
					case "push":
						paths = []string{pushPausePath}
					case "pop":
						paths = []string{popPausePath}
					case "all":
						paths = []string{pushPausePath, popPausePath}
					default:
						return usagef("mode %q: want push, pop or all", args[0])
					}
					for _, p := range paths {
						if err := a.call(ctx, http.MethodPost, p, nil, map[string]bool{"enabled": on}, nil); err != nil {
							return fail(err, "turn %s maintenance %s", args[0], name)
						}
					}
					return showPause(ctx, a)
				}
			},
		}
	}
	return &command{
		name: "maintenance", summary: "switch push and pop maintenance mode on and off",
		subs: []*command{
			{
				name: "status", summary: "show whether push and pop maintenance are on",
				setup: func(*flag.FlagSet) runFunc {
					return func(ctx context.Context, a *app, _ []string) error { return showPause(ctx, a) }
				},
			},
			toggle(true),
			toggle(false),
		},
	}
}

// showPause reads and prints both pause (maintenance mode) flags.
func showPause(ctx context.Context, a *app) error {
	var s api.MaintenanceStatus
	if err := a.get(ctx, pushPausePath, nil, &s); err != nil {
		return fail(err, "maintenance status")
	}
	onOff := func(t *tw, b bool) string {
		if b {
			return t.yellow("on")
		}
		return t.green("off")
	}
	return a.show(s, func(t *tw) {
		t.table([]string{"MODE", "MAINTENANCE", "EFFECT WHILE ON"}, [][]string{
			{"push", onOff(t, s.MaintenanceMode), "pushes are spooled (buffered), replayed when off"},
			{"pop", onOff(t, s.PopMaintenanceMode), "pops return no messages"},
		}, "")
	})
}
