package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/mcpx/mcpx-policy/internal/server"
)

// readTokenFile reads the operator token --token-file names ("" for none:
// no token) and warns on stderr of a file other users may read; an error
// comes with what to do about it.
func readTokenFile(path string, stderr io.Writer) (token, hint string, err error) {
	if path == "" {
		return "", "", nil
	}
	token, exposed, err := server.ReadToken(path)
	if err != nil {
		var te *server.TokenError
		if errors.As(err, &te) {
			hint = te.Hint
		}
		return "", hint, err
	}
	if exposed != "" {
		fmt.Fprintf(stderr, "mcpx-policy: warning: token file %s\n", exposed)
	}
	return token, "", nil
}
