package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

const writesUsage = `usage: mcpx-policy writes [--config F…] [--state-dir D] [--format text|json]
       mcpx-policy writes clear SERVER [--id ID | --seen TOKEN] [--reason TEXT] [--config F…] [--state-dir D]

Lists the writes whose outcome is unknown: the request went out and no
definite answer came back. While a server has one, further writes to it are
denied. Check on the server's side whether each write happened, then clear.

  mcpx-policy writes
  mcpx-policy writes --format json
  mcpx-policy writes clear fs --id 3f9c2a1b7d4e8f60 --reason "file present, write happened"
  mcpx-policy writes clear fs --seen 5d0c1e9a2b7f4c33 --reason "checked all three by hand"

Each entry's line holds its server's seen= token: writes clear SERVER
--seen TOKEN clears all of the server's entries the listing shows, and an
entry another gateway records after you looked is not cleared with them
(the clear then refuses and lists what there is now). Without --id or --seen, clear takes every entry the server
has when it runs, seen or not.

The ledger is the one the gateway uses: with --config, the one its ledger
section names (a PostgreSQL database a fleet shares, docs/ledger.md); else
ledger.json in the state dir, which defaults to $MCPX_POLICY_STATE_DIR,
else $XDG_STATE_HOME/mcpx-policy, else ~/.local/state/mcpx-policy.

Exit status: 0 listed or cleared (nothing to clear included), 1 error
(usage, an --id that is not pending, a ledger that cannot be read).
`

// runWrites runs `mcpx-policy writes …` (args exclude "writes") and returns
// the exit code: 0 success, 1 error (usage, unreadable ledger, no such
// entry).
func runWrites(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "clear" {
		return runWritesClear(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("mcpx-policy writes", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var configs stringList
	fs.Var(&configs, "config", "config file whose ledger section names the ledger (repeatable, layered in order)")
	stateDir := fs.String("state-dir", "", "state directory holding ledger.json")
	format := formatFlag(fs)
	if err := fs.Parse(args); err != nil {
		return writesUsageErr(stdout, stderr, err)
	}
	if fs.NArg() > 0 {
		return writesUsageErr(stdout, stderr, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := format.check(); err != nil {
		return writesUsageErr(stdout, stderr, err)
	}
	l, err := mcpxpolicy.OpenWrites(mcpxpolicy.Options{ConfigPaths: configs, Env: os.Environ(), StateDir: *stateDir})
	if err != nil {
		return fail(stderr, err, "")
	}
	defer l.Close()
	st, err := l.List()
	if err != nil {
		return writesLedgerFail(stderr, l, err)
	}
	if format.json() {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return fail(stderr, err, "")
		}
		return 0
	}
	extra := ledgerFlags(configs, *stateDir)
	if len(st.Entries) == 0 {
		fmt.Fprintln(stdout, "no unknown-outcome writes")
	}
	seen := st.Seen
	for _, e := range st.Entries {
		// one line an entry: its server's seen token (writes clear
		// SERVER --seen TOKEN clears all of its entries listed here and
		// none recorded since), and how to clear this one
		fmt.Fprintf(stdout, "%s\t%s\t%s\tid=%s\targs_sha256=%s\tseen=%s\tclear: %s\n",
			e.Server, e.Tool, e.Time, e.ID, e.ArgsSHA256, seen[e.Server], clearCommand(e.Server, e.ID, "", extra))
	}
	if n := st.InFlight; n > 0 {
		fmt.Fprintf(stdout, "(%d write(s) in flight in live processes)\n", n)
	}
	return 0
}

func runWritesClear(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy writes clear", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var configs stringList
	fs.Var(&configs, "config", "config file whose ledger section names the ledger (repeatable, layered in order)")
	stateDir := fs.String("state-dir", "", "state directory holding ledger.json")
	id := fs.String("id", "", "clear only the entry with this id")
	seen := fs.String("seen", "", "clear the entries a listing showed (its --seen token), and none recorded since")
	reason := fs.String("reason", "", "why the entries are cleared (kept with them)")
	// Flags may come before or after SERVER.
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return writesUsageErr(stdout, stderr, err)
	}
	if len(pos) != 1 {
		if len(pos) == 0 {
			return writesUsageErr(stdout, stderr, errors.New("writes clear needs a SERVER"))
		}
		return writesUsageErr(stdout, stderr, fmt.Errorf("unexpected argument %q", pos[1]))
	}
	server := pos[0]
	if *id != "" && *seen != "" {
		return writesUsageErr(stdout, stderr, errors.New("writes clear takes --id or --seen, not both"))
	}
	l, err := mcpxpolicy.OpenWrites(mcpxpolicy.Options{ConfigPaths: configs, Env: os.Environ(), StateDir: *stateDir})
	if err != nil {
		return fail(stderr, err, "")
	}
	defer l.Close()
	var cleared []decision.UnknownWrite
	if *seen != "" {
		cleared, err = l.ClearSeen(server, *seen, *reason)
	} else {
		cleared, err = l.Clear(server, *id, *reason)
	}
	if errors.Is(err, mcpxpolicy.ErrMismatch) {
		return writesChanged(stdout, stderr, l, server, err, ledgerFlags(configs, *stateDir))
	}
	if errors.Is(err, mcpxpolicy.ErrNotFound) {
		return fail(stderr, fmt.Errorf("server %s has no unknown-outcome write with id %s", server, *id),
			"list them with: mcpx-policy writes"+ledgerFlags(configs, *stateDir))
	}
	if err != nil {
		return writesLedgerFail(stderr, l, err)
	}
	if len(cleared) == 0 {
		fmt.Fprintf(stdout, "server %s has no unknown-outcome writes; nothing cleared\n", server)
		return 0
	}
	for _, e := range cleared {
		fmt.Fprintf(stdout, "cleared %s\t%s\t%s\tid=%s\n", e.Server, e.Tool, e.Time, e.ID)
	}
	fmt.Fprintf(stdout, "%d write(s) cleared; writes to %s are no longer blocked by the ledger\n", len(cleared), server)
	return 0
}

// writesChanged reports a clear --seen that found other entries than the
// listing showed: nothing was cleared; it lists what there is now and the
// command that clears that, once checked.
func writesChanged(stdout, stderr io.Writer, l *mcpxpolicy.Writes, server string, err error, extra string) int {
	st, lerr := l.List()
	if lerr != nil {
		return writesLedgerFail(stderr, l, lerr)
	}
	var now []decision.UnknownWrite
	for _, e := range st.Entries {
		if e.Server == server {
			now = append(now, e)
		}
	}
	fmt.Fprintf(stdout, "server %s now has %d unknown-outcome write(s):\n", server, len(now))
	for _, e := range now {
		fmt.Fprintf(stdout, "%s\t%s\t%s\tid=%s\targs_sha256=%s\n", e.Server, e.Tool, e.Time, e.ID, e.ArgsSHA256)
	}
	return fail(stderr, fmt.Errorf("the unknown-outcome writes of %s changed since they were listed: nothing was cleared", server),
		"check the ones listed above, then: "+clearCommand(server, "", st.Seen[server], extra))
}

// ledgerFlags is the --config and --state-dir flags of the commands writes
// prints (clear, list), naming the ledger as this one was given, absolute,
// and the state dir MCPX_POLICY_STATE_DIR chose (printedStateDir), so that
// they run as printed from any directory and in another shell.
func ledgerFlags(configs []string, stateDir string) string {
	s := ""
	for _, c := range configs {
		s += " --config " + writesQuote(absPath(c))
	}
	return s + stateDirFlag(printedStateDir(stateDir))
}

func writesLedgerFail(stderr io.Writer, l *mcpxpolicy.Writes, err error) int {
	if errors.Is(err, mcpxpolicy.ErrUnreadable) {
		hint := "the file was left untouched and writes stay blocked: inspect it, then restore it from a backup or move it aside (see docs/ledger.md)"
		if h := mcpxpolicy.Hint(err); h != "" {
			hint = h + " (nothing was changed; writes stay blocked until then)"
		}
		return fail(stderr, err, hint)
	}
	return fail(stderr, err, "ledger: "+l.Where())
}

func writesUsageErr(stdout, stderr io.Writer, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, writesUsage)
		return 0
	}
	return fail(stderr, err, "run 'mcpx-policy writes --help' for usage")
}

func writesQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// clearCommand is the SDK's writes clear command (Commands.WritesClear)
// with this command's ledger flags (extra) put before the --reason it ends
// with.
func clearCommand(server, id, seen, extra string) string {
	clear, reason, _ := strings.Cut(mcpxpolicy.Commands{}.WritesClear(server, id, seen), " --reason ")
	return clear + extra + " --reason " + reason
}
