package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

const checkUsage = `usage: mcpx-policy check --config F [--config F…] [--catalog F] [--set PATH=VALUE…]
                         [--format text|json]

Loads and validates the config (every layer, every argument rule) and
prints its warnings. Every rule example (examples: {valid, invalid}) is
decided by the rule's generated code; one the rule disagrees with is an
error at the example's file and line. The summary says how many hold. With --catalog, rules and patterns that match no tool,
and rule properties a tool does not declare, are warnings.

  mcpx-policy check --config /etc/mcpx-policy/config.yaml
  mcpx-policy check --config mcpx-policy.yaml --catalog tools.json
  mcpx-policy check --config mcpx-policy.yaml --format json
  mcpx-policy check --config mcpx-policy.yaml --set policy.write=deny --set servers.fs.writePolicy=ask

--set PATH=VALUE (repeatable, also on eval, bundle, replay, serve and the
proxy) overrides a mode: the highest layer, above the MCPX_POLICY_*
environment; a value that loosens is a warning like any later layer's
(docs/configuration.md#layering).

--format json prints one object on stdout instead of the summary line
and the warnings on stderr: {"servers", "rules", "examples", "warnings",
"revision"}, the revision whole. Errors stay on stderr.

Exit status: 0 valid (warnings allowed), 1 error (any config problem,
usage).
`

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var configs stringList
	fs.Var(&configs, "config", "config file (repeatable, layered in order)")
	catalog := fs.String("catalog", "", "tool catalog file")
	set := addSetFlag(fs)
	format := formatFlag(fs)
	if err := fs.Parse(args); err != nil {
		return usageError(stdout, stderr, checkUsage, err)
	}
	if len(configs) == 0 || fs.NArg() > 0 {
		return usageError(stdout, stderr, checkUsage, fmt.Errorf("check takes --config files and no arguments"))
	}
	if err := format.check(); err != nil {
		return usageError(stdout, stderr, checkUsage, err)
	}
	sum, err := mcpxpolicy.Check(mcpxpolicy.Options{ConfigPaths: configs, Env: os.Environ(), Catalog: *catalog, Set: set.options()})
	if err != nil {
		return fail(stderr, err, "")
	}
	if format.json() {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		warnings := sum.Warnings
		if warnings == nil {
			warnings = []string{}
		}
		if err := enc.Encode(checkSummary{Servers: sum.Servers, Rules: sum.Rules, Examples: sum.Examples, Warnings: warnings, Revision: sum.Revision}); err != nil {
			return fail(stderr, err, "")
		}
		return 0
	}
	for _, w := range sum.Warnings {
		fmt.Fprintf(stderr, "mcpx-policy: warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "ok: %d servers, %d argument rules, %d rule examples hold, %d warnings, revision %s\n", sum.Servers, sum.Rules, sum.Examples, len(sum.Warnings), sum.Revision[:12])
	return 0
}

// checkSummary is check's --format json output.
type checkSummary struct {
	Servers  int      `json:"servers"`
	Rules    int      `json:"rules"`
	Examples int      `json:"examples"`
	Warnings []string `json:"warnings"`
	Revision string   `json:"revision"`
}
