package daemon

import (
	"fmt"

	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/dashboard"
)

// newDashboard builds the dashboard WEBAPP_ROOT asks for: the one built into the
// binary when unset, the files of a directory when set, none when set but empty. With
// JWT on, the app asks for a token and sends it on its API calls.
func newDashboard(cfg *config.Config, jwt bool) (*dashboard.Handler, error) {
	auth := dashboard.AuthNone
	if jwt {
		auth = dashboard.AuthJWT
	}
	h, err := dashboard.New(dashboard.Options{
		Dir:      cfg.WebappRoot,
		Disabled: !cfg.DashboardEnabled,
		Auth:     auth,
		Version:  buildinfo.Version,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: WEBAPP_ROOT: %w", ErrUnsupportedConfig, err)
	}
	return h, nil
}
