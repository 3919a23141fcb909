// Package doclinks holds no code of its own: its test reads every Markdown file the
// repository tracks (README.md, CHANGELOG.md, docs/ and the rest) and checks that each
// relative link names a file that exists and, with a #fragment into a Markdown file,
// a heading of that file by the anchor GitHub gives it. Links with a scheme (https:,
// mailto:) are left alone: the test runs without a network.
package doclinks
