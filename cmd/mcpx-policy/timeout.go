package main

import (
	"errors"
	"flag"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

// decideTimeoutFlag registers --decide-timeout, the one deadline flag of
// eval, proxy and serve: how long one decision may take.
func decideTimeoutFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("decide-timeout", mcpxpolicy.DefaultDecideTimeout, "how long one decision may take before it is stopped and denied (PolicyError)")
}

var errDecideTimeout = errors.New("--decide-timeout must be more than 0: every decision has a deadline")
