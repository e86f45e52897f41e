package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/render"
)

const evalUsage = `usage: mcpx-policy eval --config F [--config F…] [--catalog F] [--state-dir D]
                        [--surface daemon|mcp|cli] [--format text|json]
                        [--decide-timeout 5s] CALL.json…

Decides each call and prints the decision. A call file is
{"server", "tool", "args", "surface"?, "principal"?, "mode"?} where "tool" is
an MCP Tool object (name, annotations, inputSchema) or a tool name looked up
in --catalog. It is read strictly: a duplicate key, a field name in another
case ("Args") or anything after the object is an input error.

  mcpx-policy eval --config examples/mcpx-policy.yaml examples/calls/*.json
  mcpx-policy eval --config examples/mcpx-policy.yaml --format json --surface mcp call.json

Each decision may take --decide-timeout; one that runs out of time is a
PolicyError deny.

Exit status: 0 allow, 1 error (usage, config, input — an InvalidInput
decision included), 2 deny, 3 ask; with several calls, the most severe (an
error beats a deny, a deny an ask).
`

func runEval(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy eval", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var configs stringList
	fs.Var(&configs, "config", "config file (repeatable, layered in order)")
	catalog := fs.String("catalog", "", "tool catalog file")
	stateDir := fs.String("state-dir", "", "state directory holding ledger.json")
	surface := fs.String("surface", "", "surface to render for: daemon, mcp or cli (default: the call's, else cli)")
	format := fs.String("format", "text", "output format: text or json")
	decideTimeout := decideTimeoutFlag(fs)
	if err := fs.Parse(args); err != nil {
		return usageError(stdout, stderr, evalUsage, err)
	}
	switch {
	case len(configs) == 0:
		return usageError(stdout, stderr, evalUsage, fmt.Errorf("eval needs --config"))
	case fs.NArg() == 0:
		return usageError(stdout, stderr, evalUsage, fmt.Errorf("eval needs at least one CALL.json"))
	case *format != "text" && *format != "json":
		return usageError(stdout, stderr, evalUsage, fmt.Errorf("unknown --format %q (want text or json)", *format))
	case *surface != "" && !knownSurface(*surface):
		return usageError(stdout, stderr, evalUsage, fmt.Errorf("unknown --surface %q (want daemon, mcp or cli)", *surface))
	case *decideTimeout <= 0:
		return usageError(stdout, stderr, evalUsage, errDecideTimeout)
	}
	ctx := context.Background()
	eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: configs, Catalog: *catalog, StateDir: *stateDir, DecideTimeout: *decideTimeout})
	if err != nil {
		return fail(stderr, err, "run 'mcpx-policy check --config …' to see every config problem")
	}
	for _, w := range eng.Warnings() {
		fmt.Fprintf(stderr, "mcpx-policy: warning: %s\n", w)
	}
	worst, failed := mcpxpolicy.Allow, false
	for _, path := range fs.Args() {
		call, err := readCall(eng, path)
		if *surface != "" {
			call.Surface = *surface
		}
		if call.Surface == "" {
			call.Surface = render.SurfaceCLI
		}
		if err != nil {
			if !knownSurface(call.Surface) {
				call.Surface = render.SurfaceCLI
			}
			fail(stderr, fmt.Errorf("%s: %w", path, err), "")
			failed = true
			if *format == "json" {
				// One decision document per call, the unreadable ones
				// too: an InvalidInput deny, as serve answers.
				d := mcpxpolicy.Denied(call.Server, call.Tool.Name, mcpxpolicy.InvalidInput, err.Error())
				if err := printDecision(stdout, stderr, *format, path, call, d); err != nil {
					fail(stderr, fmt.Errorf("%s: %w", path, err), "")
				}
			}
			continue
		}
		if !eng.Configured(call.Server) {
			fmt.Fprintf(stderr, "mcpx-policy: warning: %s: %s\n", path, mcpxpolicy.UnconfiguredWarning(call.Server, eng.Servers()))
		}
		d, err := eng.Decide(ctx, call)
		if err != nil {
			fmt.Fprintf(stderr, "mcpx-policy: warning: %s: %v (denied)\n", path, err)
		}
		if d.Outcome.Severity() > worst.Severity() {
			worst = d.Outcome
		}
		if d.First().Code == mcpxpolicy.InvalidInput {
			failed = true // a malformed call is an input error: exit 1
		}
		if err := printDecision(stdout, stderr, *format, path, call, d); err != nil {
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

func knownSurface(s string) bool {
	return s == render.SurfaceDaemon || s == render.SurfaceMCP || s == render.SurfaceCLI
}

// readCall reads a call file strictly (mcpxpolicy.Engine.DecodeCall); a
// tool given by name is looked up in the engine's catalog.
func readCall(eng *mcpxpolicy.Engine, path string) (mcpxpolicy.Call, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return mcpxpolicy.Call{}, err
	}
	call, err := eng.DecodeCall(raw)
	var te *mcpxpolicy.ToolError
	switch {
	case errors.As(err, &te):
		return call, fmt.Errorf("not a call file: %w (give --catalog, or the whole MCP Tool object in the call file)", err)
	case err != nil:
		return call, fmt.Errorf("not a call file: %w", err)
	}
	return call, nil
}

// printDecision prints one decision: in json, the decision document
// (redacted, as the rendering is) with "rendered" on one line of stdout; in
// text, the CLI rendering on stderr.
func printDecision(stdout, stderr io.Writer, format, path string, call mcpxpolicy.Call, d mcpxpolicy.Decision) error {
	rendered, err := render.Render(call.Surface, call, d)
	if err != nil {
		return err
	}
	if format == "json" {
		doc, err := withRendered(mcpxpolicy.Redact(call, d), rendered)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", doc)
		return err
	}
	text, err := render.Render(render.SurfaceCLI, call, d)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %s\n%s\n", path, d.Outcome, text)
	return nil
}

// withRendered is the decision document plus "rendered", as one JSON line.
func withRendered(d mcpxpolicy.Decision, rendered any) ([]byte, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	doc["rendered"] = rendered
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
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
