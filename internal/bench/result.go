package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Result is one measured number. Ceiling and Ratio are set for throughputs that have
// a matching raw PostgreSQL ceiling; they are nil (JSON null) otherwise.
type Result struct {
	Name    string   `json:"name"`
	Value   float64  `json:"value"`
	Unit    string   `json:"unit"`
	Ceiling *float64 `json:"ceiling"`
	Ratio   *float64 `json:"ratio"`
	// CPU is, for a broker case, the CPU time each side spent per message, and
	// CeilingCPU the same for its raw ceiling (absent otherwise).
	CPU        *CPUPerMessage `json:"cpu,omitempty"`
	CeilingCPU *CPUPerMessage `json:"ceiling_cpu,omitempty"`
	// Note says how the number was obtained (clients, window, ceiling); table only.
	Note string `json:"-"`
}

// Report is the outcome of a run: the durability profile of the server, the results
// in measurement order and a description of the environment they were measured in.
type Report struct {
	// Profile is ProfileDurable, ProfileFast, "custom (…)" (see profileLabel) or
	// ProfileUnknown: what the server reported, not what it was asked for.
	Profile string   `json:"profile"`
	Results []Result `json:"results"`
	// Env describes the machine and the PostgreSQL settings; table only.
	Env []string `json:"-"`
}

// throughput builds a result with its ceiling and ratio (none when ceiling is 0).
func throughput(name string, value, ceiling float64, note string) Result {
	r := Result{Name: name, Value: round(value, 1), Unit: "msg/s", Note: note}
	if ceiling > 0 {
		c, ratio := round(ceiling, 1), round(value/ceiling, 3)
		r.Ceiling, r.Ratio = &c, &ratio
	}
	return r
}

// plain builds a result without a ceiling.
func plain(name string, value float64, unit, note string) Result {
	return Result{Name: name, Value: round(value, 2), Unit: unit, Note: note}
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// Get returns the result called name.
func (r *Report) Get(name string) (Result, bool) {
	for _, res := range r.Results {
		if res.Name == name {
			return res, true
		}
	}
	return Result{}, false
}

// WriteJSON writes the report as one JSON object on one line:
// {"profile":"durable","results":[{"name","value","unit","ceiling","ratio"},…]}.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// WriteTable writes the environment and an aligned table of the results.
func (r *Report) WriteTable(w io.Writer) error {
	for _, line := range r.Env {
		if _, err := fmt.Fprintf(w, "# %s\n", line); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\tvalue\tunit\tceiling\tratio\t\t how")
	for _, res := range r.Results {
		ceiling, ratio := "-", "-"
		if res.Ceiling != nil {
			ceiling = formatNumber(*res.Ceiling)
		}
		if res.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *res.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\t %s\n", res.Name, formatNumber(res.Value), res.Unit, ceiling, ratio, res.Note)
	}
	return tw.Flush()
}

func formatNumber(v float64) string {
	if v >= 100 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
