package main

import (
	"io"
	"os"
)

// stdinName is the CALL.json argument that stands for stdin.
const stdinName = "-"

// stdinArgs counts the CALL.json arguments that are stdin.
func stdinArgs(args []string) int {
	n := 0
	for _, a := range args {
		if a == stdinName {
			n++
		}
	}
	return n
}

// readCallFile reads a call file: path, or stdin for "-".
func readCallFile(path string) ([]byte, error) {
	if path == stdinName {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}

// printedCallPath is the call file as the printed eval --approval command
// names it: absolute, so that it runs from any directory; "-" stays stdin
// (the call is given on stdin again).
func printedCallPath(path string) string {
	if path == stdinName {
		return stdinName
	}
	return writesQuote(absPath(path))
}
