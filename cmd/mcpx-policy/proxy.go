package main

import (
	"errors"
	"io"
)

// runProxy is replaced by the MCP proxy in the next commit.
func runProxy(args []string, stdout, stderr io.Writer) int {
	return fail(stderr, errors.New("proxy: not built yet"), "")
}
