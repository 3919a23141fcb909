// Package manpage renders a manual page, given as data, in two forms: roff for
// man(1) (the pages the deb and rpm install: queen(8), queen-proxy(8),
// queenctl(1)) and the plain text that `queen --help` prints. Each program builds
// its Page from its own flag, command and settings tables, so the pages cannot
// drift from the code; scripts/packages runs the programs' hidden -man flag at
// build time.
//
// Text in a Page is plain, with one piece of markup taken from the settings' docs:
// `code` in backquotes, rendered bold in roff and without the quotes in text.
// Paragraphs are reflowed; a paragraph whose lines start with a space is kept as it
// is (examples, commands).
package manpage

import (
	"flag"
	"fmt"
	"strings"
)

// Page is one manual page.
type Page struct {
	// Name and Section are the page's name and section ("queen", "8"); Manual is the
	// title of the manual it belongs to ("System Manager's Manual").
	Name, Section, Manual string
	// Source and Date are the footer: the version ("queen 1.2.3") and the date
	// (YYYY-MM-DD) of the build.
	Source, Date string
	// Summary is the one-line description of the NAME section.
	Summary string
	// Synopsis lists the forms of the command line, one per line.
	Synopsis []string
	// Sections follow NAME and SYNOPSIS, in order.
	Sections []Section
}

// Section is a titled part of a page: paragraphs, then tagged items.
type Section struct {
	Title string
	Text  []string
	Items []Item
}

// Item is a tagged paragraph: an option, a variable, a file or a signal.
type Item struct {
	Tag  string
	Text []string
}

// FlagItems lists the flags of fs that keep accepts, in fs's (sorted) order, each
// as -name (with its argument, named as flag.UnquoteUsage does) and, as its text,
// doc(name) when that is not empty, else the flag's usage string as a sentence.
func FlagItems(fs *flag.FlagSet, keep func(name string) bool, doc func(name string) []string) []Item {
	var items []Item
	fs.VisitAll(func(f *flag.Flag) {
		if !keep(f.Name) {
			return
		}
		tag := "-" + f.Name
		arg, usage := flag.UnquoteUsage(f)
		if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); !isBool && arg != "" {
			tag += " " + strings.ToUpper(arg)
		}
		text := doc(f.Name)
		if len(text) == 0 && usage != "" {
			text = []string{strings.ToUpper(usage[:1]) + strings.TrimSuffix(usage[1:], ".") + "."}
		}
		items = append(items, Item{Tag: tag, Text: text})
	})
	return items
}

// Roff renders the page for man(1).
func (p *Page) Roff() string {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s %s %s %s %s\n", roffQuote(strings.ToUpper(p.Name)), p.Section,
		roffQuote(p.Date), roffQuote(p.Source), roffQuote(p.Manual))
	b.WriteString(".SH NAME\n")
	fmt.Fprintf(&b, "%s \\- %s\n", roffText(p.Name), roffText(p.Summary))
	b.WriteString(".SH SYNOPSIS\n.nf\n")
	for _, s := range p.Synopsis {
		b.WriteString(roffLine(s) + "\n")
	}
	b.WriteString(".fi\n")
	for _, s := range p.Sections {
		fmt.Fprintf(&b, ".SH %s\n", roffQuote(strings.ToUpper(s.Title)))
		for i, para := range s.Text {
			if i > 0 {
				b.WriteString(".PP\n")
			}
			writeRoffParagraph(&b, para)
		}
		for _, it := range s.Items {
			fmt.Fprintf(&b, ".TP\n.B %s\n", roffQuote(roffText(it.Tag)))
			for i, para := range it.Text {
				if i > 0 {
					b.WriteString(".IP\n")
				}
				writeRoffParagraph(&b, para)
			}
		}
	}
	return b.String()
}

// writeRoffParagraph writes one paragraph: reflowed text, or a literal block.
func writeRoffParagraph(b *strings.Builder, para string) {
	if isLiteral(para) {
		b.WriteString(".RS 4\n.nf\n")
		for _, l := range strings.Split(strings.TrimRight(para, "\n"), "\n") {
			b.WriteString(roffLine(strings.TrimPrefix(l, " ")) + "\n")
		}
		b.WriteString(".fi\n.RE\n")
		return
	}
	b.WriteString(roffLine(strings.Join(strings.Fields(para), " ")) + "\n")
}

// isLiteral reports a paragraph kept as written: every line starts with a space.
func isLiteral(para string) bool {
	for _, l := range strings.Split(strings.TrimRight(para, "\n"), "\n") {
		if !strings.HasPrefix(l, " ") {
			return false
		}
	}
	return para != ""
}

// roffLine is roffText for a whole output line: a leading . or ' would be read as
// a request, so it gets a zero-width escape in front.
func roffLine(s string) string {
	s = roffText(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// roffText escapes backslashes and hyphens and turns `code` into bold.
func roffText(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
	var b strings.Builder
	bold := false
	for _, r := range s {
		if r == '`' {
			if bold {
				b.WriteString(`\fR`)
			} else {
				b.WriteString(`\fB`)
			}
			bold = !bold
			continue
		}
		b.WriteRune(r)
	}
	if bold {
		b.WriteString(`\fR`)
	}
	return b.String()
}

// roffQuote quotes a macro argument.
func roffQuote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\(dq`) + `"`
}

// Text renders the page as man(1) would lay it out on a terminal 80 columns wide:
// headings at the margin, text indented 7 columns, item texts 14.
func (p *Page) Text() string {
	var b strings.Builder
	title := fmt.Sprintf("%s(%s)", strings.ToUpper(p.Name), p.Section)
	gap := max(1, 78-2*len(title)-len(p.Manual))
	fmt.Fprintf(&b, "%s%*s%s%*s%s\n\n", title, gap/2, "", p.Manual, gap-gap/2, "", title)
	b.WriteString("NAME\n")
	writeText(&b, p.Name+" - "+p.Summary, 7)
	b.WriteString("\nSYNOPSIS\n")
	for _, s := range p.Synopsis {
		fmt.Fprintf(&b, "       %s\n", plain(s))
	}
	for _, s := range p.Sections {
		fmt.Fprintf(&b, "\n%s\n", strings.ToUpper(s.Title))
		for i, para := range s.Text {
			if i > 0 {
				b.WriteString("\n")
			}
			writeText(&b, para, 7)
		}
		for i, it := range s.Items {
			if i > 0 || len(s.Text) > 0 {
				b.WriteString("\n")
			}
			tag := plain(it.Tag)
			text := it.Text
			// A short tag shares its line with the text, as man does.
			if len(tag) < 7 && len(text) > 0 && !isLiteral(text[0]) {
				first := strings.Fields(plain(text[0]))
				line := fmt.Sprintf("       %-7s", tag)
				var rest []string
				for j, w := range first {
					if len(line)+len(w)+1 > 79 && j > 0 {
						rest = first[j:]
						break
					}
					if j > 0 {
						line += " "
					}
					line += w
				}
				b.WriteString(line + "\n")
				if len(rest) > 0 {
					writeText(&b, strings.Join(rest, " "), 14)
				}
				text = text[1:]
			} else {
				fmt.Fprintf(&b, "       %s\n", tag)
			}
			for _, para := range text {
				writeText(&b, para, 14)
			}
		}
	}
	return b.String()
}

// writeText writes one paragraph at indent, wrapped at 79 columns (a literal one
// as written, indented 3 more).
func writeText(b *strings.Builder, para string, indent int) {
	pad := strings.Repeat(" ", indent)
	if isLiteral(para) {
		for _, l := range strings.Split(strings.TrimRight(para, "\n"), "\n") {
			b.WriteString(pad + "  " + plain(l) + "\n")
		}
		return
	}
	line := pad
	for _, w := range strings.Fields(plain(para)) {
		if len(line) > indent && len(line)+1+len(w) > 79 {
			b.WriteString(line + "\n")
			line = pad
		}
		if len(line) > indent {
			line += " "
		}
		line += w
	}
	if len(line) > indent {
		b.WriteString(line + "\n")
	}
}

// plain drops the `code` markup.
func plain(s string) string { return strings.ReplaceAll(s, "`", "") }
