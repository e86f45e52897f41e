package server_test

import (
	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// unknownWrites lists every server's unknown-outcome entries.
func unknownWrites(eng *mcpxpolicy.Engine) ([]decision.UnknownWrite, error) {
	st, err := eng.Writes().List()
	return st.Entries, err
}
