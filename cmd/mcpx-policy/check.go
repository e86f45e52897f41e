package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

const checkUsage = `usage: mcpx-policy check --config F [--config F…] [--catalog F]

Loads and validates the config (every layer, every argument rule) and
prints its warnings. Every rule example (examples: {valid, invalid}) is
decided by the rule's generated code; one the rule disagrees with is an
error at the example's file and line. The summary says how many hold. With --catalog, rules and patterns that match no tool,
and rule properties a tool does not declare, are warnings.

  mcpx-policy check --config /etc/mcpx-policy/config.yaml
  mcpx-policy check --config mcpx-policy.yaml --catalog tools.json

Exit status: 0 valid (warnings allowed), 1 any error.
`

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var configs stringList
	fs.Var(&configs, "config", "config file (repeatable, layered in order)")
	catalog := fs.String("catalog", "", "tool catalog file")
	if err := fs.Parse(args); err != nil {
		return usageError(stdout, stderr, checkUsage, err)
	}
	if len(configs) == 0 || fs.NArg() > 0 {
		return usageError(stdout, stderr, checkUsage, fmt.Errorf("check takes --config files and no arguments"))
	}
	sum, err := mcpxpolicy.Check(mcpxpolicy.Options{ConfigPaths: configs, Env: os.Environ(), Catalog: *catalog})
	if err != nil {
		return fail(stderr, err, "")
	}
	for _, w := range sum.Warnings {
		fmt.Fprintf(stderr, "mcpx-policy: warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "ok: %d servers, %d argument rules, %d rule examples hold, %d warnings, revision %s\n", sum.Servers, sum.Rules, sum.Examples, len(sum.Warnings), sum.Revision[:12])
	return 0
}
