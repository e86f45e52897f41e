package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

const pinsUsage = `usage: mcpx-policy pins [--state-dir D] [--format text|json]
       mcpx-policy pins accept SERVER TOOL [--sha256 S] [--state-dir D]

Lists the pinned tool definitions: for each server and tool, the SHA-256 of
the definition trusted when it was first seen (pinTools: ask or deny), and
the changed definition a server published since, which calls are refused
(or asked) with ToolDefinitionChanged until an operator accepts it. Review
the change on the server's side (its tools/list), then accept it.

  mcpx-policy pins
  mcpx-policy pins --format json
  mcpx-policy pins accept fs write_file --sha256 9e7d5c3b…

With --sha256 (the hash a ToolDefinitionChanged reason names), only that
definition is accepted: if the server changed the tool again since, nothing
is accepted. The pins are pins.json in the state dir, which defaults to
$MCPX_POLICY_STATE_DIR, else $XDG_STATE_HOME/mcpx-policy, else
~/.local/state/mcpx-policy. See docs/proxy.md#pinned-tool-definitions.

Exit status: 0 listed or accepted, 1 error (usage, no pin or no changed
definition to accept, a --sha256 that is not the changed definition's, a
pin store that cannot be read or written).
`

// runPins runs `mcpx-policy pins …` (args exclude "pins") and returns the
// exit code: 0 success, 1 error (usage, unreadable store, nothing to
// accept).
func runPins(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "accept" {
		return runPinsAccept(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("mcpx-policy pins", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	stateDir := fs.String("state-dir", "", "state directory holding pins.json")
	format := formatFlag(fs)
	if err := fs.Parse(args); err != nil {
		return usageError(stdout, stderr, pinsUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return usageError(stdout, stderr, pinsUsage, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	case format.check() != nil:
		return usageError(stdout, stderr, pinsUsage, format.check())
	}
	ps, err := mcpxpolicy.OpenPins(mcpxpolicy.Options{StateDir: *stateDir})
	if err != nil {
		return fail(stderr, err, "")
	}
	list, err := ps.List()
	if err != nil {
		return pinsFail(stderr, err)
	}
	if format.json() {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"pins": list}); err != nil {
			return fail(stderr, err, "")
		}
		return 0
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no pinned tool definitions")
		return 0
	}
	cmds := mcpxpolicy.Commands{StateDir: printedStateDir(*stateDir)}
	changed := 0
	for _, p := range list {
		how := "trusted on first use"
		if !p.Accepted.IsZero() {
			how = "accepted " + p.Accepted.Format(time.RFC3339)
		}
		fmt.Fprintf(stdout, "%s\t%s\tpinned %s (%s, %s)\n", p.Server, p.Tool, p.Pinned.SHA256[:12], how, p.Pinned.Seen.Format(time.RFC3339))
		if p.Pending != nil {
			changed++
			fields := decision.ChangedFields(p.Pinned.Fields, p.Pending.Fields)
			fmt.Fprintf(stdout, "\tCHANGED to %s since %s (%s changed): calls are refused or asked until accepted: %s\n",
				p.Pending.SHA256[:12], p.Pending.Seen.Format(time.RFC3339), strings.Join(fields, ", "), cmds.PinsAccept(p.Server, p.Tool, p.Pending.SHA256))
		}
	}
	fmt.Fprintf(stdout, "%d pinned tool(s), %d changed since pinned\n", len(list), changed)
	return 0
}

func runPinsAccept(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy pins accept", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	stateDir := fs.String("state-dir", "", "state directory holding pins.json")
	sum := fs.String("sha256", "", "accept only the definition with this SHA-256")
	// Flags may come before, between or after SERVER and TOOL.
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(stdout, stderr, pinsUsage, err)
	}
	if len(pos) != 2 {
		if len(pos) < 2 {
			return usageError(stdout, stderr, pinsUsage, errors.New("pins accept needs a SERVER and a TOOL"))
		}
		return usageError(stdout, stderr, pinsUsage, fmt.Errorf("unexpected argument %q", pos[2]))
	}
	server, tool := pos[0], pos[1]
	ps, err := mcpxpolicy.OpenPins(mcpxpolicy.Options{StateDir: *stateDir})
	if err != nil {
		return fail(stderr, err, "")
	}
	cmds := mcpxpolicy.Commands{StateDir: printedStateDir(*stateDir)}
	p, err := ps.Accept(server, tool, *sum)
	switch {
	case errors.Is(err, mcpxpolicy.ErrNotFound):
		return fail(stderr, fmt.Errorf("%s.%s has no pinned definition", server, tool), "list the pins with: "+pinsCommand(cmds))
	case errors.Is(err, mcpxpolicy.ErrNothingToAccept):
		return fail(stderr, fmt.Errorf("%s.%s has no changed definition to accept: its pin is the definition last seen", server, tool), "list the pins with: "+pinsCommand(cmds))
	case errors.Is(err, mcpxpolicy.ErrMismatch):
		return fail(stderr, err, "the tool changed again since; nothing was accepted: review the change it now has ("+pinsCommand(cmds)+") and accept that one")
	case err != nil:
		return pinsFail(stderr, err)
	}
	fmt.Fprintf(stdout, "accepted %s.%s: pinned to %s; calls with this definition pass the pin check\n", server, tool, p.Pinned.SHA256)
	return 0
}

// pinsCommand is `mcpx-policy pins` with the state dir cmds names.
func pinsCommand(cmds mcpxpolicy.Commands) string {
	return "mcpx-policy pins" + stateDirFlag(cmds.StateDir)
}

func pinsFail(stderr io.Writer, err error) int {
	if !errors.Is(err, mcpxpolicy.ErrUnreadable) {
		return fail(stderr, err, "")
	}
	hint := "inspect it (nothing was changed"
	if h := mcpxpolicy.Hint(err); h != "" {
		hint = h + " (nothing was changed"
	}
	return fail(stderr, err, hint+"; calls to servers that pin tool definitions are refused until it reads)")
}
