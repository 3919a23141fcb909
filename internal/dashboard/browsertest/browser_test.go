package browsertest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

var (
	chromiumFlag    = flag.String("dashboard.chromium", "", "the Chromium binary (default: chromium, chromium-browser or google-chrome on PATH)")
	screenshotsFlag = flag.String("dashboard.screenshots", "", "save the page screenshots into this directory (default: a temporary one)")
)

// Viewport of every tab, and so of the screenshots.
const viewportW, viewportH = 1440, 900

// stepTimeout bounds one wait for the page (a poll for an element or a state).
const stepTimeout = 20 * time.Second

// The browser is started once per test binary, by the first test that needs it, and
// stopped by TestMain: its tabs are cheap, its start is not.
var shared struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	err    error
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if shared.cancel != nil {
		shared.cancel()
	}
	os.Exit(code)
}

// chromiumPath finds the browser binary, "" when there is none.
func chromiumPath() string {
	if *chromiumFlag != "" {
		return *chromiumFlag
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// underCI reports whether CI is set to true in the environment (as CI services do):
// there a browser test that cannot run is a failure, not a skip nobody reads.
func underCI() bool {
	ci, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && ci
}

// browser is the shared browser's root context; it skips the test under -short or
// without a Chromium binary, but fails it without one under CI=true.
func browser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("the browser tests need PostgreSQL and Chromium: not run under -short")
	}
	bin := chromiumPath()
	if bin == "" && *screenshotsFlag != "" {
		t.Fatal("no Chromium binary (chromium, chromium-browser or google-chrome on PATH, or -dashboard.chromium): " +
			"the screenshots asked for cannot be taken")
	}
	if bin == "" {
		const why = "no Chromium binary (chromium, chromium-browser or google-chrome on PATH, or -dashboard.chromium): " +
			"install Debian's chromium, as scripts/ensure-chromium.sh does for make test"
		if underCI() {
			t.Fatal(why + "; under CI=true a missing browser fails the test instead of skipping it")
		}
		t.Skip(why)
	}
	shared.once.Do(func() {
		// A browser that dies while it starts gets one more start (seen once in a
		// make test run: Chromium crashed before printing its DevTools address, and
		// its output held nothing but its crash reporter's lines); the tests then run
		// on the second, and its failure fails them.
		for attempt := 1; ; attempt++ {
			shared.ctx, shared.cancel, shared.err = startBrowser(bin)
			if shared.err == nil || attempt == 2 {
				return
			}
			t.Logf("%s did not start (attempt %d), starting it once more: %v", bin, attempt, shared.err)
			shared.cancel()
		}
	})
	require.NoError(t, shared.err, "start %s", bin)
	return shared.ctx
}

// startBrowser starts Chromium at bin, headless, and returns its root context and
// what ends it.
func startBrowser(bin string) (context.Context, context.CancelFunc, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", "new"),
		chromedp.WindowSize(viewportW, viewportH),
		chromedp.Flag("lang", "en-US"),
		chromedp.CombinedOutput(io.Discard),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run its sandbox as root.
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	err := chromedp.Do(ctx) // starts the browser, with no timeout
	return ctx, func() { cancel(); cancelAlloc() }, err
}

// tab is one browser tab on a broker (or a proxy in front of one), with its monitor.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string // scheme://host:port of the served app
	mon  *monitor
	shot string // directory of the screenshots
}

// newTab opens a tab in a browser context of its own (its own storage and cookies),
// sized to the viewport, with the monitor listening.
func newTab(t *testing.T, base string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	return openTab(t, ctx, base)
}

// sibling opens a second tab in the same browser context as tb (shared localStorage,
// its own sessionStorage), as a user's new tab.
func (tb *tab) sibling() *tab {
	tb.t.Helper()
	ctx, cancel := chromedp.NewContext(tb.ctx)
	tb.t.Cleanup(cancel)
	return openTab(tb.t, ctx, tb.base)
}

func openTab(t *testing.T, ctx context.Context, base string) *tab {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	tb := &tab{t: t, ctx: ctx, base: base, mon: newMonitor(u.Host)}
	require.NoError(t, chromedp.Listen(ctx, tb.mon.event))
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(viewportW, viewportH)))
	// A policy violation becomes a console error, which the monitor reports: a script
	// added over DevTools is not itself subject to the policy.
	tb.onNewDocument(`document.addEventListener('securitypolicyviolation', (e) =>
		console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI));` + pageHelpers)
	tb.shot = *screenshotsFlag
	if tb.shot == "" {
		tb.shot = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(tb.shot, 0o755))
	return tb
}

// onNewDocument runs src in every document the tab loads from now on, before the
// page's own scripts.
func (tb *tab) onNewDocument(src string) {
	tb.t.Helper()
	require.NoError(tb.t, chromedp.Do(tb.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src})
		return err
	})))
}

// step is a context for one wait, derived from the tab's.
func (tb *tab) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(tb.ctx, stepTimeout)
}

// do runs actions, failing the test with what it was doing.
func (tb *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := tb.step()
	defer cancel()
	require.NoError(tb.t, chromedp.Do(ctx, actions...), "%s", what)
}

// open loads path (a deep link) and waits for the app to mount.
func (tb *tab) open(path string) {
	tb.t.Helper()
	tb.do("open "+path, chromedp.Navigate(tb.base+path))
	tb.waitJS("the app mounts at "+path, `document.querySelector('[data-testid="app-root"]') &&
		document.querySelector('[data-testid="app-root"]').children.length > 0 &&
		!document.querySelector('[data-testid="boot"]')`)
}

// reload reloads the current URL and waits for the app to mount again.
func (tb *tab) reload() {
	tb.t.Helper()
	tb.do("reload", chromedp.Reload())
	tb.waitJS("the app mounts after the reload", `!!document.querySelector('[data-testid="app-root"] > *') &&
		!document.querySelector('[data-testid="boot"]')`)
}

// waitJS polls the JavaScript expression until it is truthy.
func (tb *tab) waitJS(what, expr string) {
	tb.t.Helper()
	ctx, cancel := tb.step()
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(stepTimeout),
		chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		tb.t.Fatalf("wait until %s: %v\npage text:\n%s", what, err, tb.text("body"))
	}
}

// eval evaluates a JavaScript expression into T.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := tb.step()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(tb.t, err, "evaluate %s", expr)
	return v
}

// js is an action that evaluates expr for its effect.
func js(expr string) chromedp.Action[chromedp.Void] { return chromedp.Evaluate[chromedp.Void](expr) }

// text is the innerText of the first element matching sel, "" when there is none.
func (tb *tab) text(sel string) string {
	ctx, cancel := tb.step()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%s) || {}).innerText || ''`, jsString(sel))))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return v
}

// click clicks the first visible element matching the CSS selector, with the mouse.
func (tb *tab) click(sel string) {
	tb.t.Helper()
	tb.do("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// hover moves the mouse to the middle of the first element matching sel.
func (tb *tab) hover(sel string) {
	tb.t.Helper()
	at := eval[[]float64](tb, `(() => { const e = document.querySelector(`+jsString(sel)+`); e.scrollIntoView({ block: 'center' });
		const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`)
	tb.do("hover "+sel, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, input.DispatchMouseEvent, input.DispatchMouseEventParams{
			Type: input.DispatchMouseEventTypeMouseMoved, X: at[0], Y: at[1]})
		return err
	}))
}

// typeInto types s into the element matching sel, after clearing it.
func (tb *tab) typeInto(sel, s string) {
	tb.t.Helper()
	tb.do("type into "+sel,
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector(%s); e.focus(); e.select && e.select(); })()`, jsString(sel))),
		chromedp.SendKeys(chromedp.CSS(sel), s, chromedp.NodeVisible))
}

// fill sets the value of the field matching sel and fires its input event, as a paste.
func (tb *tab) fill(sel, value string) {
	tb.t.Helper()
	tb.do("fill "+sel, js(fmt.Sprintf(`(() => { const e = document.querySelector(%s); e.value = %s;
		e.dispatchEvent(new Event('input', { bubbles: true })); })()`, jsString(sel), jsString(value))))
}

// choose selects value in the <select> matching sel, as a user does.
func (tb *tab) choose(sel, value string) {
	tb.t.Helper()
	tb.do("choose "+value+" in "+sel, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const e = document.querySelector(%s); e.value = %s; e.dispatchEvent(new Event('change', { bubbles: true })); })()`,
		jsString(sel), jsString(value))))
}

// accept clicks the accept button of the app's confirm dialog and waits for it to close.
func (tb *tab) accept() {
	tb.t.Helper()
	tb.waitJS("the confirm dialog opens", `!!document.querySelector('[data-testid="confirm-dialog"]')`)
	tb.click(`[data-testid="confirm-accept"]`)
	tb.waitJS("the confirm dialog closes", `!document.querySelector('[data-testid="confirm-dialog"]')`)
}

// waitToast waits for a toast of kind ("ok" or "bad") whose text contains part.
func (tb *tab) waitToast(kind, part string) {
	tb.t.Helper()
	tb.waitJS("a "+kind+" toast saying "+part, `[...document.querySelectorAll('[data-testid="toast-`+kind+`"]')]
		.some((e) => e.innerText.includes(`+jsString(part)+`))`)
}

// screenshot saves the viewport as name.png. A page that cannot be captured fails.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	tb.waitIdle()
	ctx, cancel := tb.step()
	defer cancel()
	require.NoError(tb.t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)))
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(tb.t, err, "screenshot %s", name)
	require.True(tb.t, bytes.HasPrefix(buf, []byte("\x89PNG\r\n\x1a\n")), "screenshot %s is not a PNG", name)
	file := filepath.Join(tb.shot, name+".png")
	require.NoError(tb.t, os.WriteFile(file, buf, 0o644))
	tb.t.Logf("screenshot %s: %d KB", file, len(buf)>>10)
}

// waitIdle waits until the tab has no request in flight (after the page's loaders ran).
func (tb *tab) waitIdle() {
	tb.t.Helper()
	ctx, cancel := tb.step()
	defer cancel()
	require.NoError(tb.t, tb.mon.waitIdle(ctx), "the tab's requests finish")
}

// pageHelpers are the checks' functions in the page (window.qt), on top of the DOM:
//
//	qt.has(sel)          an element matches
//	qt.text(sel)         innerText of the first match, '' when none
//	qt.num(testid)       the number shown by a stat (its .stat-v), NaN when none
//	qt.rows(table)       rows of the table with that data-testid (the empty row aside)
//	qt.row(table, key)   the row with that data-key, or null
//	qt.sig()             the page's structure: its test ids, row keys and stat values
//	                     (but the PostgreSQL snapshot's: live activity changes it)
const pageHelpers = `
window.qt = {
  has: (sel) => !!document.querySelector(sel),
  text: (sel) => { const e = document.querySelector(sel); return e ? e.innerText : ''; },
  num: (id) => { const e = document.querySelector('[data-testid="' + id + '"] .stat-v');
    return e ? Number(e.textContent.replace(/,/g, '')) : NaN; },
  rows: (table) => document.querySelectorAll('[data-testid="' + table + '"] tr[data-testid="row"]').length,
  row: (table, key) => document.querySelector('[data-testid="' + table + '"] tr[data-testid="row"][data-key="' + CSS.escape(key) + '"]'),
  ready: (id) => !!document.querySelector('main [data-testid="page-' + id + '"], main[data-testid="page-' + id + '"]')
    && !document.querySelector('main [data-testid="loading"]'),
  sig: () => {
    const root = document.querySelector('main.page');
    if (!root) return '';
    const out = [root.dataset.testid, document.title];
    for (const e of root.querySelectorAll('[data-testid]')) {
      const id = e.dataset.testid;
      if (id === 'loading' || e.closest('[data-testid="postgres-stats"] [data-testid]')) continue;
      let s = id;
      if (e.dataset.key !== undefined) s += '=' + e.dataset.key;
      if (id.startsWith('stat-')) s += ': ' + ((e.querySelector('.stat-v') || {}).textContent || '');
      out.push(s);
    }
    return out.join('\n');
  },
};`

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`)
	return "'" + r.Replace(s) + "'"
}
