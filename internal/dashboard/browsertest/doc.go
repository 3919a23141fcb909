// Package browsertest drives the bundled dashboard in a real headless Chromium over the
// DevTools protocol (chromedp), against whole brokers run in the test process
// (daemontest) on loopback, each with a throwaway PostgreSQL database. It holds tests
// only; this file is its documentation.
//
// What the tests check:
//
//   - Serving through the broker: the answers the dashboard's handler tests cannot see
//     (the API's middleware in front, HEAD, escapes under /assets/), and, from the
//     browser's own network log, that every file the app loads answers 200 with its
//     exact type, gzip and the immutable cache policy.
//   - Every page, reached by the sidebar and again by a reload of its deep link: it
//     shows the seeded data and the same elements both times, and it stays clean.
//   - The actions of the pages (seeks, skips, deletes, purges, maintenance toggles),
//     each accepted in the app's confirm dialog and verified through the API.
//   - JWT mode: the Connect screen, the bearer on /api calls only, the session across
//     reloads and tabs, the access levels, refused tokens, and a page behind an
//     authenticating proxy.
//
// Clean means: no exception, no console.error, no Content-Security-Policy violation,
// no response of 400 or more unless the check allows it, and no request off the
// broker's origin, as the DevTools Runtime, Log and Network events report them.
//
// The tests skip under -short and when no Chromium binary is found (chromium,
// chromium-browser, google-chrome on PATH, or -dashboard.chromium=PATH); make test
// installs Debian's chromium first when it can (scripts/ensure-chromium.sh). As root
// Chromium runs with --no-sandbox.
//
// Screenshots: the page test saves a 1440×900 PNG of each page with the seeded data,
// into a temporary directory, or into -dashboard.screenshots=DIR. make
// dashboard-screenshots writes them to docs/dashboard/, where docs/dashboard.md shows
// them. A page whose screenshot cannot be taken fails the test.
package browsertest
