package cli

import (
	"context"
	"flag"
	"net/http"

	"github.com/queenmq/queen/internal/api"
)

// Maintenance routes.
const (
	pushMaintenancePath = "/api/v1/system/maintenance"
	popMaintenancePath  = "/api/v1/system/maintenance/pop"
)

// maintenanceCommand is `queenctl maintenance`.
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
						paths = []string{pushMaintenancePath}
					case "pop":
						paths = []string{popMaintenancePath}
					case "all":
						paths = []string{pushMaintenancePath, popMaintenancePath}
					default:
						return usagef("mode %q: want push, pop or all", args[0])
					}
					for _, p := range paths {
						if err := a.call(ctx, http.MethodPost, p, nil, map[string]bool{"enabled": on}, nil); err != nil {
							return fail(err, "turn %s maintenance %s", args[0], name)
						}
					}
					return showMaintenance(ctx, a)
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
					return func(ctx context.Context, a *app, _ []string) error { return showMaintenance(ctx, a) }
				},
			},
			toggle(true),
			toggle(false),
		},
	}
}

// showMaintenance reads and prints both maintenance flags.
func showMaintenance(ctx context.Context, a *app) error {
	var s api.MaintenanceStatus
	if err := a.get(ctx, pushMaintenancePath, nil, &s); err != nil {
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
