package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

const evalUsage = `usage: mcpx-policy eval --config F [--config F…] [--catalog F] [--set PATH=VALUE…] [--state-dir D]
                        [--surface daemon|mcp|cli] [--format text|json]
                        [--decide-timeout 5s] [--approval-ttl 5m] CALL.json…
       mcpx-policy eval --config F… [flags] --approval ID CALL.json
       mcpx-policy eval --config F… [flags] - < CALL.json

Decides each call and prints the decision. A call file is
{"server", "tool", "args", "surface"?, "principal"?, "mode"?} where "tool" is
an MCP Tool object (name, annotations, inputSchema) or a tool name looked up
in --catalog. It is read strictly: a duplicate key, a field name in another
case ("Args") or anything after the object is an input error. A recorded
call (serve or proxy --record) is a call file too: its "time", "decision"
and "redacted" are left aside (mcpx-policy replay compares with them).

  mcpx-policy eval --config examples/mcpx-policy.yaml examples/calls/*.json
  mcpx-policy eval --config examples/mcpx-policy.yaml --format json --surface mcp call.json
  some-agent --dump-call | mcpx-policy eval --config mcpx-policy.yaml -

A CALL.json of - is the call read from stdin (once).

An ask is put on hold as an approval request in the state dir (it expires
after --approval-ttl): eval prints its ID and the commands that approve it
and run the call with it. --approval ID decides the one call again with
that approval, which turns this exact ask into an allow, once
(mcpx-policy approve --help).

  mcpx-policy approve 5f0c2e4b9a7d41c3b8e6f1a2d3c4b5a6 --sha256 9b1e…
  mcpx-policy eval --config examples/mcpx-policy.yaml --approval 5f0c2e4b9a7d41c3b8e6f1a2d3c4b5a6 call.json

Each decision may take --decide-timeout; one that runs out of time is a
PolicyError deny.

A server in shadow mode (enforce: shadow) has its calls decided as usual,
but a deny or an ask lets the call go ahead: the outcome is allow and the
policy's own decision is printed beside it ("shadow" in json, "enforced:"
in text). The exit status follows the outcome, what every surface acts
on; a hidden tool, a pending or unreadable ledger, invalid input and a
policy error deny in shadow mode too (docs/check-order.md#shadow-mode).

Exit status: 0 allow (one shadow mode let through included), 1 error
(usage, config, input — an InvalidInput decision included), 2 deny, 3 ask;
with several calls, the most severe (an error beats a deny, a deny an
ask).
`

func runEval(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy eval", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var configs stringList
	fs.Var(&configs, "config", "config file (repeatable, layered in order)")
	catalog := fs.String("catalog", "", "tool catalog file")
	set := addSetFlag(fs)
	stateDir := fs.String("state-dir", "", "state directory holding ledger.json")
	surface := fs.String("surface", "", "surface to render for: daemon, mcp or cli (default: the call's, else cli)")
	format := formatFlag(fs)
	decideTimeout := decideTimeoutFlag(fs)
	approvalID := fs.String("approval", "", "decide the one call with this approval request")
	approvalTTL := approvalTTLFlag(fs)
	if err := fs.Parse(args); err != nil {
		return usageError(stdout, stderr, evalUsage, err)
	}
	switch {
	case len(configs) == 0:
		return usageError(stdout, stderr, evalUsage, fmt.Errorf("eval needs --config"))
	case fs.NArg() == 0:
		return usageError(stdout, stderr, evalUsage, fmt.Errorf("eval needs at least one CALL.json"))
	case format.check() != nil:
		return usageError(stdout, stderr, evalUsage, format.check())
	case *surface != "" && *surface != mcpxpolicy.SurfaceDaemon && *surface != mcpxpolicy.SurfaceMCP && *surface != mcpxpolicy.SurfaceCLI:
		return usageError(stdout, stderr, evalUsage, fmt.Errorf("unknown --surface %q (want daemon, mcp or cli)", *surface))
	case *decideTimeout <= 0:
		return usageError(stdout, stderr, evalUsage, errDecideTimeout)
	case *approvalTTL <= 0:
		return usageError(stdout, stderr, evalUsage, errApprovalTTL)
	case *approvalID != "" && fs.NArg() != 1:
		return usageError(stdout, stderr, evalUsage, fmt.Errorf("--approval takes exactly one CALL.json, the call that was approved"))
	case stdinArgs(fs.Args()) > 1:
		return usageError(stdout, stderr, evalUsage, fmt.Errorf("- (the call on stdin) may be given once"))
	}
	ctx := context.Background()
	eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: configs, Env: os.Environ(), Catalog: *catalog, StateDir: *stateDir, Set: set.options(),
		DecideTimeout: *decideTimeout, ApprovalTTL: *approvalTTL})
	if err != nil {
		return fail(stderr, err, "run 'mcpx-policy check --config …' to see every config problem")
	}
	defer eng.Close()
	for _, w := range eng.Warnings() {
		fmt.Fprintf(stderr, "mcpx-policy: warning: %s\n", w)
	}
	// the commands printed for an ask name this eval's files and state
	// dir, so that they run as printed from any directory
	printed := printedStateDir(*stateDir)
	again := evalAgain(configs, *catalog, printed, *surface)
	worst, failed := decision.Allow, false
	opts := mcpxpolicy.AnswerOptions{Surface: *surface, DefaultSurface: mcpxpolicy.SurfaceCLI, Approval: *approvalID, Hold: true,
		Name: "call file", ToolHint: "give --catalog, or the whole MCP Tool object in the call file"}
	for _, path := range fs.Args() {
		raw, err := readCallFile(path)
		opts.Unread = err
		ans := eng.Answer(ctx, raw, opts)
		if ans.Unread != nil {
			fail(stderr, fmt.Errorf("%s: %w", path, ans.Unread), "")
			failed = true
			if format.json() {
				// One decision document per call, the unreadable ones
				// too: an InvalidInput deny, as serve answers.
				if err := printAnswer(stdout, stderr, true, path, ans, printed, again); err != nil {
					fail(stderr, fmt.Errorf("%s: %w", path, err), "")
				}
			}
			continue
		}
		if !slices.Contains(eng.Servers(), ans.Call.Server) {
			fmt.Fprintf(stderr, "mcpx-policy: warning: %s: %s\n", path, mcpxpolicy.UnconfiguredWarning(ans.Call.Server, eng.Servers()))
		}
		if ans.Err != nil {
			fmt.Fprintf(stderr, "mcpx-policy: warning: %s: %v (denied)\n", path, ans.Err)
		}
		d := ans.Decision.Decision()
		if d.Outcome.Severity() > worst.Severity() {
			worst = d.Outcome
		}
		if d.First().Code == decision.InvalidInput {
			failed = true // a malformed call is an input error: exit 1
		}
		if err := printAnswer(stdout, stderr, format.json(), path, ans, printed, again); err != nil {
			fail(stderr, fmt.Errorf("%s: %w", path, err), "")
			failed = true
		}
	}
	switch {
	case failed:
		return 1
	case worst == decision.Deny:
		return 2
	case worst == decision.Ask:
		return 3
	}
	return 0
}

// printAnswer prints the answer to one call file: asJSON (--format json),
// the answer's JSON — the decision document (redacted, as the rendering
// is) with "rendered" and, for an ask, "approval" or "approval_error" — on
// one line of stdout; else the CLI rendering on stderr, followed for an
// ask by its approval request and the commands that answer and use it
// (stateDir and again spell them, evalAgain).
func printAnswer(stdout, stderr io.Writer, asJSON bool, path string, ans mcpxpolicy.Answer, stateDir, again string) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(ans)
	}
	text, err := mcpxpolicy.Render(mcpxpolicy.SurfaceCLI, ans.Call, ans.Decision)
	if err != nil {
		return err
	}
	d := ans.Decision.Decision()
	if d.Relaxed() {
		fmt.Fprintf(stderr, "%s: %s (shadow mode; enforced: %s)\n%s\n", path, d.Outcome, d.Shadow.Outcome, text.Text)
	} else {
		fmt.Fprintf(stderr, "%s: %s\n%s\n", path, d.Outcome, text.Text)
	}
	switch {
	case ans.Held != nil:
		r := *ans.Held
		fmt.Fprintf(stderr, "approval requested: %s (expires %s, in %s)\n  approve: %s\n  decline: %s\n  then:    %s\n",
			r.ID, r.Expires.Format(time.RFC3339), time.Until(r.Expires).Round(time.Second),
			approveCommand(r, stateDir), declineCommand(r, stateDir), again+" --approval "+r.ID+" "+printedCallPath(path))
	case ans.HoldErr != nil:
		fmt.Fprintf(stderr, "mcpx-policy: warning: %s: no approval request was made, so this ask cannot be approved: %v\n", path, ans.HoldErr)
	}
	return nil
}

// usageError reports a usage problem; -h prints the usage and exits 0.
func usageError(stdout, stderr io.Writer, text string, err error) int {
	if err == flag.ErrHelp {
		fmt.Fprint(stdout, text)
		return 0
	}
	fail(stderr, err, "")
	fmt.Fprint(stderr, text)
	return 1
}
