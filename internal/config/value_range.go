package config

import (
	"errors"
	"time"
)

// minuteDivisorValue is a Go duration of whole seconds that divides a minute evenly
// (1s, 2s, 3s, 4s, 5s, 6s, 10s, 12s, 15s, 20s, 30s or 1m), so that buckets of it tile
// every minute.
type minuteDivisorValue struct{ p *time.Duration }

func (v minuteDivisorValue) Set(raw string) error {
	d, err := time.ParseDuration(raw)
	if err != nil {
		return errors.New("not a duration (use Go syntax such as 5s or 1m)")
	}
	if d < time.Second || d > time.Minute || d%time.Second != 0 || time.Minute%d != 0 {
		return errors.New("must be whole seconds that divide a minute: 1s, 2s, 3s, 4s, 5s, 6s, 10s, 12s, 15s, 20s, 30s or 1m")
	}
	*v.p = d
	return nil
}

func (v minuteDivisorValue) Get() string { return v.p.String() }
func (minuteDivisorValue) Kind() string  { return "duration that divides a minute (1s to 1m)" }
