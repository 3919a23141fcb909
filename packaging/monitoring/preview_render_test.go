package monitoring_test

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// previewDashboard is the part of the dashboard JSON the preview draws.
type previewDashboard struct {
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Label      string `json:"label"`
			Type       string `json:"type"`
			IncludeAll bool   `json:"includeAll"`
			AllValue   string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
	Panels []previewSource `json:"panels"`
}

// previewSource is one panel of the dashboard JSON, as the preview reads it.
type previewSource struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Collapsed bool   `json:"collapsed"`
	GridPos   struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID        string `json:"refId"`
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit       string `json:"unit"`
			Thresholds struct {
				Steps []struct {
					Color string   `json:"color"`
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
			Custom struct {
				LineWidth   float64 `json:"lineWidth"`
				FillOpacity float64 `json:"fillOpacity"`
			} `json:"custom"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Panels []previewSource `json:"panels"` // a collapsed row's panels

	inCollapsed bool // a panel of a collapsed row: queried, not drawn
}

// previewPage is what the template draws.
type previewPage struct {
	Title    string
	From, To time.Time
	Vars     []string // the variables as the dashboard opens: "Broker: All"
	Panels   []previewPanel
}

// previewPanel is one panel on the page: where the grid puts it and what it shows.
type previewPanel struct {
	src    previewSource
	Series []previewSeries
	Step   time.Duration // the range queries' step, to break lines at missing points
	// Filled in by draw:
	Style  template.CSS
	Title  string
	Kind   string // row, stat, timeseries or other
	Hidden bool   // in a collapsed row
	Note   string // a collapsed row's "(N panels)"
	Chart  template.HTML
	Stats  []statValue
	Legend []legendItem
}

// previewSeries is one series of a panel: its legend name and points.
type previewSeries struct {
	Name string
	T, V []float64
}

type statValue struct {
	Text, Name string
	Color      template.CSS
	Size       int
}

type legendItem struct {
	Name  string
	Color template.CSS
}

func previewPanelOf(p previewSource) previewPanel { return previewPanel{src: p} }

// Grafana's grid: 24 columns, rows of 30 px, 8 px between cells.
const (
	gridCols    = 24
	gridRowPx   = 30
	gridGapPx   = 8
	pagePadPx   = 16
	panelHeadPx = 30
	legendRowPx = 20
)

// panelWidth is a panel's width in pixels for w grid columns.
func panelWidth(w int) int {
	col := float64(previewWidth-2*pagePadPx-(gridCols-1)*gridGapPx) / gridCols
	return int(col*float64(w)) + gridGapPx*(w-1)
}

func panelHeight(h int) int { return gridRowPx*h + gridGapPx*(h-1) }

// Grafana's classic palette, in the order it gives series their colors, and the
// named colors thresholds use.
var (
	palette     = []string{"#73BF69", "#F2CC0C", "#8AB8FF", "#FF780A", "#F2495C", "#5794F2", "#B877D9", "#705DA0", "#37872D", "#FADE2A", "#447EBC", "#C15C17"}
	namedColors = map[string]string{"green": "#73BF69", "red": "#F2495C", "orange": "#FF9830", "yellow": "#FADE2A",
		"blue": "#5794F2", "purple": "#B877D9", "text": "#CCCCDC"}
)

// legendLabel matches {{label}} in a legendFormat.
var legendLabel = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)

//go:embed testdata/preview.html.tmpl
var previewHTML string

// draw fills in what the template shows of each panel.
func (pg *previewPage) draw() {
	for i := range pg.Panels {
		p := &pg.Panels[i]
		s := p.src
		p.Title, p.Hidden = s.Title, s.inCollapsed
		p.Style = template.CSS(fmt.Sprintf("grid-column:%d/span %d;grid-row:%d/span %d",
			s.GridPos.X+1, s.GridPos.W, s.GridPos.Y+1, s.GridPos.H))
		switch s.Type {
		case "row":
			p.Kind = "row"
			if s.Collapsed {
				p.Note = fmt.Sprintf("(%d panels, collapsed)", len(s.Panels))
			}
		case "stat", "gauge":
			p.Kind = "stat"
			p.Stats = statValues(*p)
		case "timeseries":
			p.Kind = "timeseries"
			for j, se := range p.Series {
				p.Legend = append(p.Legend, legendItem{Name: se.Name, Color: template.CSS(palette[j%len(palette)])})
			}
			w, h := panelWidth(s.GridPos.W)-16, panelHeight(s.GridPos.H)-panelHeadPx-8-legendHeight(p.Legend, panelWidth(s.GridPos.W)-16)
			p.Chart = template.HTML(chartSVG(*p, pg.From, pg.To, w, h)) // built from numbers and escaped text
		default:
			p.Kind = "other"
		}
	}
}

// legendHeight estimates the height of the legend's wrapped lines (about 7 px a
// character at 12 px).
func legendHeight(items []legendItem, width int) int {
	if len(items) == 0 {
		return 0
	}
	lines, x := 1, 0
	for _, it := range items {
		w := 14 + 7*len([]rune(it.Name)) + 16
		if x > 0 && x+w > width {
			lines++
			x = 0
		}
		x += w
	}
	return lines * legendRowPx
}

// statValues is a stat panel's numbers: the last value of each series, colored by the
// thresholds, "No data" when there is none.
func statValues(p previewPanel) []statValue {
	d := p.src.FieldConfig.Defaults
	size := min(panelHeight(p.src.GridPos.H)-panelHeadPx-20, panelWidth(p.src.GridPos.W)/4)
	if len(p.Series) == 0 {
		return []statValue{{Text: "No data", Color: "#8E8E8E", Size: size / 2}}
	}
	var out []statValue
	for _, s := range p.Series {
		v := math.NaN() // lastNotNull
		for _, x := range s.V {
			if finite(x) {
				v = x
			}
		}
		if !finite(v) {
			out = append(out, statValue{Text: "No data", Color: "#8E8E8E", Size: size / 2 / len(p.Series)})
			continue
		}
		color := namedColors["text"]
		for _, st := range d.Thresholds.Steps {
			if st.Value == nil || v >= *st.Value {
				color = st.Color
				if c, ok := namedColors[st.Color]; ok {
					color = c
				}
			}
		}
		name := ""
		if len(p.Series) > 1 {
			name = s.Name
		}
		out = append(out, statValue{Text: formatValue(d.Unit, v), Name: name, Color: template.CSS(color), Size: size / len(p.Series)})
	}
	return out
}

// unitScale says how Grafana writes a value of the unit whose magnitude is about ref:
// the divisor and the suffix.
func unitScale(unit string, ref float64) (float64, string) {
	ref = math.Abs(ref)
	pick := func(base float64, suffixes ...string) (float64, string) {
		div := 1.0
		for i := range suffixes {
			if i == len(suffixes)-1 || ref < div*base {
				return div, suffixes[i]
			}
			div *= base
		}
		return div, ""
	}
	switch unit {
	case "percentunit":
		return 0.01, "%"
	case "percent":
		return 1, "%"
	case "bytes":
		return pick(1024, " B", " KiB", " MiB", " GiB", " TiB")
	case "s":
		switch {
		case ref == 0:
			return 1, " s"
		case ref < 1e-3:
			return 1e-6, " µs"
		case ref < 1:
			return 1e-3, " ms"
		case ref < 60:
			return 1, " s"
		case ref < 3600:
			return 60, " min"
		case ref < 86400:
			return 3600, " hour"
		default:
			return 86400, " day"
		}
	case "ops", "reqps", "short", "", "none":
		div, suffix := pick(1000, "", " K", " Mil", " Bil", " Tri")
		switch unit {
		case "ops":
			suffix += " ops/s"
		case "reqps":
			suffix += " req/s"
		}
		return div, suffix
	default:
		return 1, " " + unit
	}
}

// formatValue writes one value as Grafana does with automatic decimals: whole numbers
// without any, otherwise fewer the larger the number.
func formatValue(unit string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	div, suffix := unitScale(unit, v)
	x := v / div
	dec := 2
	switch a := math.Abs(x); {
	case x == math.Trunc(x):
		dec = 0
	case a >= 100:
		dec = 0
	case a >= 10:
		dec = 1
	case a < 0.1:
		dec = 3
	}
	return strconv.FormatFloat(x, 'f', dec, 64) + suffix
}

// niceStep is the round step (1, 2, 2.5 or 5 times a power of ten) that cuts span into
// about n parts.
func niceStep(span float64, n int) float64 {
	raw := span / float64(n)
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*pow {
			return m * pow
		}
	}
	return 10 * pow
}

// chartSVG draws a time series panel's lines in w×h pixels: y ticks in the panel's unit,
// time ticks, a line per series in palette order, filled as fillOpacity says, broken
// where a step has no point.
func chartSVG(p previewPanel, from, to time.Time, w, h int) string {
	const top, bottom, right = 6, 22, 8
	lo, hi := 0.0, math.Inf(-1)
	for _, s := range p.Series {
		for _, v := range s.V {
			if finite(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if math.IsInf(hi, -1) || hi <= lo {
		hi = lo + 1
	}
	div, suffix := unitScale(p.src.FieldConfig.Defaults.Unit, max(math.Abs(lo), math.Abs(hi)))
	step := niceStep((hi-lo)/div, max(2, h/45)) * div
	lo, hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	dec := max(0, int(-math.Floor(math.Log10(step/div)+1e-9)))
	if step/div != math.Trunc(step/div) {
		dec = max(dec, 1)
	}
	var ticks []string
	left := 0
	for v := lo; v <= hi+step/2; v += step {
		label := strconv.FormatFloat(v/div, 'f', dec, 64) + suffix
		ticks = append(ticks, label)
		left = max(left, 7*len([]rune(label))+10)
	}
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	t0, t1 := float64(from.UnixMilli())/1000, float64(to.UnixMilli())/1000
	x := func(t float64) float64 { return float64(left) + (t-t0)/(t1-t0)*pw }
	y := func(v float64) float64 { return float64(top) + (hi-v)/(hi-lo)*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-size="11" fill="#9FA7B3">`, w, h, w, h)
	for i, label := range ticks {
		yy := y(lo + float64(i)*step)
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#CCCCDC" stroke-opacity="0.1"/>`, left, float64(left)+pw, yy, yy)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, left-6, yy, html.EscapeString(label))
	}
	tickEvery := int64(5)
	for _, s := range []int64{5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600} {
		tickEvery = s
		if pw/((t1-t0)/float64(s)) >= 80 {
			break
		}
	}
	for t := (int64(t0)/tickEvery + 1) * tickEvery; float64(t) <= t1; t += tickEvery {
		xx := x(float64(t))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#CCCCDC" stroke-opacity="0.1"/>`, xx, xx, top, float64(top)+ph)
		if xx+28 <= float64(w) { // a label cut by the edge is left out
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, xx, h-6, time.Unix(t, 0).UTC().Format(time.TimeOnly))
		}
	}
	lw := p.src.FieldConfig.Defaults.Custom.LineWidth
	if lw == 0 {
		lw = 1
	}
	fill := p.src.FieldConfig.Defaults.Custom.FillOpacity / 100
	gap := 1.5 * p.Step.Seconds()
	for i, s := range p.Series {
		color := palette[i%len(palette)]
		for _, run := range runs(s, gap) {
			var pts strings.Builder
			for _, k := range run {
				fmt.Fprintf(&pts, "%.1f,%.1f ", x(s.T[k]), y(s.V[k]))
			}
			if fill > 0 && len(run) > 1 {
				base := y(max(lo, 0))
				fmt.Fprintf(&b, `<polygon points="%.1f,%.1f %s%.1f,%.1f" fill="%s" fill-opacity="%.2f"/>`,
					x(s.T[run[0]]), base, pts.String(), x(s.T[run[len(run)-1]]), base, color, fill)
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="%.1f" stroke-linejoin="round"/>`, strings.TrimSpace(pts.String()), color, lw)
		}
	}
	if len(p.Series) == 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="14">No data</text>`, float64(left)+pw/2, float64(top)+ph/2)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// runs splits a series' point indexes where two points are more than gap seconds
// apart or a value is not a number (a quantile of no requests): Grafana leaves a gap.
func runs(s previewSeries, gap float64) [][]int {
	var out [][]int
	var cur []int
	for k := range s.T {
		if !finite(s.V[k]) {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		if len(cur) > 0 && gap > 0 && s.T[k]-s.T[cur[len(cur)-1]] > gap {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, k)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// renderPreview writes the page, opens it in Chromium, screenshots the whole of it
// into the -monitoring.screenshot directory and returns the picture's path. It
// requires every drawn panel to be on the page.
func renderPreview(t *testing.T, chromium string, page previewPage) string {
	t.Helper()
	page.draw()
	tmpl, err := template.New("preview").Parse(previewHTML)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, tmpl.Execute(&buf, page))
	htmlFile := filepath.Join(t.TempDir(), "preview.html")
	require.NoError(t, os.WriteFile(htmlFile, buf.Bytes(), 0o644))
	drawn := 0
	for _, p := range page.Panels {
		if !p.Hidden {
			drawn++
		}
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", "new"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(previewWidth, 900),
		chromedp.CombinedOutput(io.Discard),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses its sandbox as root
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(previewWidth, 900),
		chromedp.Navigate("file://"+htmlFile),
	), "open the preview in %s", chromium)
	onPage, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.panel').length`))
	require.NoError(t, err)
	require.Equal(t, drawn, onPage, "panels on the page")
	height, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Math.ceil(document.documentElement.scrollHeight)`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(previewWidth, int64(height))))
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err, "screenshot")
	require.True(t, bytes.HasPrefix(shot, []byte("\x89PNG\r\n\x1a\n")), "the screenshot is not a PNG")
	small, err := paletted(shot)
	require.NoError(t, err, "reduce the screenshot to 256 colors")
	require.NoError(t, os.MkdirAll(*screenshotFlag, 0o755))
	file := filepath.Join(*screenshotFlag, screenshotName)
	require.NoError(t, os.WriteFile(file, small, 0o644))
	t.Logf("%s: %d×%d px, %d KB (%d KB as Chromium captured it)", file, previewWidth, height, len(small)>>10, len(shot)>>10)
	return file
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
