package cli

import (
	"bufio"
	"fmt"
	"strings"
)

// confirm asks a yes/no question on the terminal before a destructive operation.
// yes (--yes) skips the question. Without a terminal on stdin the operation is
// refused, so that a script never deletes because of a stray line on its input.
func (a *app) confirm(yes bool, format string, args ...any) error {
	if yes {
		return nil
	}
	question := fmt.Sprintf(format, args...)
	if !isTerminal(a.stdin) {
		return &codeError{code: ExitUsage, msg: question + " Refusing without --yes (standard input is not a terminal)"}
	}
	fmt.Fprintf(a.stderr, "%s [y/N] ", question)
	answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return &codeError{code: ExitFailure, msg: "aborted: not confirmed"}
}
