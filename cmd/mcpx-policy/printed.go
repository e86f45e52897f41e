package main

import (
	"path/filepath"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

// The commands mcpx-policy prints for a person to paste (clear, accept,
// approve, decline, the eval that uses an approval) run as printed from
// any directory and in another shell: they name the files and the state
// dir of the process that printed them, as absolute paths.

// printedStateDir is the state dir a printed command names for a
// --state-dir flag's value (mcpxpolicy.PrintedStateDir).
func printedStateDir(flag string) string { return mcpxpolicy.PrintedStateDir(flag) }

// stateDirFlag is " --state-dir D", quoted for a POSIX shell, or "" when
// stateDir is "".
func stateDirFlag(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return " --state-dir " + writesQuote(stateDir)
}

// absPath is p made absolute, or p when that fails; "" stays "".
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
