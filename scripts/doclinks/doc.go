// Package doclinks holds no code of its own: its test reads every Markdown file of the
// source tree (README.md, CHANGELOG.md, docs/ and the rest; hidden directories and
// node_modules left out) and checks that each relative link names a file that exists
// and, with a #fragment into a Markdown file, a heading of that file by the anchor
// GitHub gives it. Links with a scheme (https:, mailto:) are left alone: the test runs
// without a network.
package doclinks
