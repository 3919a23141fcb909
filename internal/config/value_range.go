package config

import (
	"errors"
	"fmt"
	"time"
)

// rangeValue is a Go duration from min to max inclusive.
type rangeValue struct {
	p        *time.Duration
	min, max time.Duration
}

func (v rangeValue) set(raw string) error {
	d, err := time.ParseDuration(raw)
	if err != nil {
		return errors.New("not a duration (use Go syntax such as 20s or 1m30s)")
	}
	if d < v.min || d > v.max {
		return fmt.Errorf("must be from %s to %s", v.min, v.max)
	}
	*v.p = d
	return nil
}

func (v rangeValue) get() string  { return v.p.String() }
func (v rangeValue) kind() string { return "duration from " + v.min.String() + " to " + v.max.String() }
