package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

const evalUsage = `usage: mcpx-policy eval --config F [--config F…] [--catalog F] [--state-dir D]
                        [--surface daemon|mcp|cli] [--format text|json]
                        [--decide-timeout 5s] [--approval-ttl 5m] CALL.json…
       mcpx-policy eval --config F… [flags] --approval ID CALL.json

Decides each call and prints the decision. A call file is
{"server", "tool", "args", "surface"?, "principal"?, "mode"?} where "tool" is
an MCP Tool object (name, annotations, inputSchema) or a tool name looked up
in --catalog. It is read strictly: a duplicate key, a field name in another
case ("Args") or anything after the object is an input error. A recorded
call (serve or proxy --record) is a call file too: its "time", "decision"
and "redacted" are left aside (mcpx-policy replay compares with them).

  mcpx-policy eval --config examples/mcpx-policy.yaml examples/calls/*.json
  mcpx-policy eval --config examples/mcpx-policy.yaml --format json --surface mcp call.json

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
	case *surface != "" && !mcpxpolicy.KnownSurface(*surface):
		return usageError(stdout, stderr, evalUsage, fmt.Errorf("unknown --surface %q (want daemon, mcp or cli)", *surface))
	case *decideTimeout <= 0:
		return usageError(stdout, stderr, evalUsage, errDecideTimeout)
	case *approvalTTL <= 0:
		return usageError(stdout, stderr, evalUsage, errApprovalTTL)
	case *approvalID != "" && fs.NArg() != 1:
		return usageError(stdout, stderr, evalUsage, fmt.Errorf("--approval takes exactly one CALL.json, the call that was approved"))
	}
	ctx := context.Background()
	eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: configs, Catalog: *catalog, StateDir: *stateDir,
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
	worst, failed := mcpxpolicy.Allow, false
	for _, path := range fs.Args() {
		call, approval, err := readCall(eng, path, *approvalID)
		if *surface != "" {
			call.Surface = *surface
		}
		if call.Surface == "" {
			call.Surface = mcpxpolicy.SurfaceCLI
		}
		if err != nil {
			if !mcpxpolicy.KnownSurface(call.Surface) {
				call.Surface = mcpxpolicy.SurfaceCLI
			}
			fail(stderr, fmt.Errorf("%s: %w", path, err), "")
			failed = true
			if format.json() {
				// One decision document per call, the unreadable ones
				// too: an InvalidInput deny, as serve answers.
				d := mcpxpolicy.Denied(call.Server, call.Tool.Name, mcpxpolicy.InvalidInput, err.Error())
				if err := printDecision(stdout, stderr, format.json(), path, call, d, nil); err != nil {
					fail(stderr, fmt.Errorf("%s: %w", path, err), "")
				}
			}
			continue
		}
		if !eng.Configured(call.Server) {
			fmt.Fprintf(stderr, "mcpx-policy: warning: %s: %s\n", path, mcpxpolicy.UnconfiguredWarning(call.Server, eng.Servers()))
		}
		d, err := decideEval(ctx, eng, call, approval)
		if err != nil {
			fmt.Fprintf(stderr, "mcpx-policy: warning: %s: %v (denied)\n", path, err)
		}
		var hold *held
		if d.Outcome == mcpxpolicy.Ask {
			hold = putOnHold(eng, call, d, path, printed, again)
			if errors.Is(hold.err, mcpxpolicy.ErrPromptTooLarge) {
				// Too large to show in full: refused, never asked.
				d, hold = mcpxpolicy.ConfirmationUnavailableFor(d, hold.err), nil
			}
		}
		if d.Outcome.Severity() > worst.Severity() {
			worst = d.Outcome
		}
		if d.First().Code == mcpxpolicy.InvalidInput {
			failed = true // a malformed call is an input error: exit 1
		}
		if err := printDecision(stdout, stderr, format.json(), path, call, d, hold); err != nil {
			fail(stderr, fmt.Errorf("%s: %w", path, err), "")
			failed = true
		}
	}
	switch {
	case failed:
		return 1
	case worst == mcpxpolicy.Deny:
		return 2
	case worst == mcpxpolicy.Ask:
		return 3
	}
	return 0
}

// readCall reads a call file strictly (mcpxpolicy.Engine.DecodeCall); a
// tool given by name is looked up in the engine's catalog. approval is the
// one the call is decided with: --approval (flag), else the file's own
// "approval"; both, and different, is an error.
func readCall(eng *mcpxpolicy.Engine, path, flag string) (call mcpxpolicy.Call, approval string, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return mcpxpolicy.Call{}, "", err
	}
	call, approval, err = eng.DecodeCall(raw)
	var te *mcpxpolicy.ToolError
	switch {
	case errors.As(err, &te):
		return call, "", fmt.Errorf("not a call file: %w (give --catalog, or the whole MCP Tool object in the call file)", err)
	case err != nil:
		return call, "", fmt.Errorf("not a call file: %w", err)
	case flag != "" && approval != "" && flag != approval:
		return call, "", fmt.Errorf("not a call file: its \"approval\" %q is not --approval %q", approval, flag)
	case flag != "":
		approval = flag
	}
	return call, approval, nil
}

// printDecision prints one decision: asJSON (--format json), the decision
// document (redacted, as the rendering is) with "rendered" (and, for an
// ask, "approval" or "approval_error") on one line of stdout; else the CLI
// rendering on stderr, followed for an ask by its approval request and the
// commands that answer and use it.
func printDecision(stdout, stderr io.Writer, asJSON bool, path string, call mcpxpolicy.Call, d mcpxpolicy.Decision, hold *held) error {
	if asJSON {
		var req *mcpxpolicy.ApprovalRequest
		var holdErr error
		if hold != nil {
			req, holdErr = hold.req, hold.err
		}
		resp, err := mcpxpolicy.Respond(call, d, req, holdErr)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(resp)
	}
	// The call's own surface must render too (a call file may name one
	// that does not exist): the text is the CLI's whatever it names.
	if _, err := mcpxpolicy.Render(call.Surface, call, d); err != nil {
		return err
	}
	text, err := mcpxpolicy.Render(mcpxpolicy.SurfaceCLI, call, d)
	if err != nil {
		return err
	}
	if d.Relaxed() {
		fmt.Fprintf(stderr, "%s: %s (shadow mode; enforced: %s)\n%s\n", path, d.Outcome, d.Shadow.Outcome, text.Text)
	} else {
		fmt.Fprintf(stderr, "%s: %s\n%s\n", path, d.Outcome, text.Text)
	}
	if hold != nil {
		fmt.Fprint(stderr, hold.text())
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
