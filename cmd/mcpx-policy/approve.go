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

const approveUsage = `usage: mcpx-policy approvals [--state-dir D] [--format text|json]
       mcpx-policy approve ID --sha256 S [--state-dir D]
       mcpx-policy approve ID --decline [--state-dir D]

An ask becomes an approval request when it is decided (eval, serve, the
proxy): the exact call, redacted, waits in the state dir until a person
answers it or it expires. 'approvals' lists the requests with the call each
one is for; 'approve' says yes to one — giving back the sha256 you were
shown, so that you approve the call you saw and nothing else — or no
(--decline). Approving runs nothing: the call runs when it is decided again
with the approval (eval --approval ID, or "approval" in serve's
/v1/decide), once, and only while it is still the same ask.

  mcpx-policy eval --config mcpx-policy.yaml call.json          # an ask: prints the request
  mcpx-policy approvals
  mcpx-policy approve 5f0c2e4b9a7d41c3b8e6f1a2d3c4b5a6 --sha256 9b1e…
  mcpx-policy eval --config mcpx-policy.yaml --approval 5f0c2e4b9a7d41c3b8e6f1a2d3c4b5a6 call.json
  mcpx-policy approve 5f0c2e4b9a7d41c3b8e6f1a2d3c4b5a6 --decline

The state dir defaults to $MCPX_POLICY_STATE_DIR, else
$XDG_STATE_HOME/mcpx-policy, else ~/.local/state/mcpx-policy.

Exit status: 0 listed, approved or declined; 1 error (usage, an ID that is
unknown, expired or already answered, a sha256 that is not the call's, a
state dir that cannot be used).
`

// runApprovals runs `mcpx-policy approvals …`: 0 listed, 1 error.
func runApprovals(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy approvals", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	stateDir := fs.String("state-dir", "", "state directory holding approvals.json")
	format := formatFlag(fs)
	if err := fs.Parse(args); err != nil {
		return approveUsageErr(stdout, stderr, err)
	}
	switch {
	case fs.NArg() > 0:
		return approveUsageErr(stdout, stderr, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	case format.check() != nil:
		return approveUsageErr(stdout, stderr, format.check())
	}
	store, err := mcpxpolicy.OpenApprovals(mcpxpolicy.Options{StateDir: *stateDir})
	if err != nil {
		return fail(stderr, err, "")
	}
	// the commands it prints name the state dir as printedStateDir does
	printed := printedStateDir(*stateDir)
	list, err := store.List()
	if err != nil {
		return approvalFail(stderr, store, printed, err)
	}
	if format.json() {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{"approvals": list}); err != nil {
			return fail(stderr, err, "")
		}
		return 0
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no approval requests are waiting")
		return 0
	}
	for i, r := range list {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		asked := ""
		if r.Surface != "" {
			asked = ", asked over " + r.Surface
		}
		fmt.Fprintf(stdout, "approval %s: %s, expires %s (in %s)%s\n", r.ID, r.State,
			r.Expires.Format(time.RFC3339), time.Until(r.Expires).Round(time.Second), asked)
		fmt.Fprint(stdout, indent(r.Text))
		switch r.State {
		case decision.ApprovalPending:
			fmt.Fprintf(stdout, "  approve: %s\n  decline: %s\n", approveCommand(r, printed), declineCommand(r, printed))
		case decision.ApprovalApproved:
			fmt.Fprintf(stdout, "  approved; it is used when the call is decided with --approval %s (decline: %s)\n", r.ID, declineCommand(r, printed))
		}
	}
	return 0
}

// runApprove runs `mcpx-policy approve ID …`: 0 answered, 1 error.
func runApprove(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy approve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	stateDir := fs.String("state-dir", "", "state directory holding approvals.json")
	sum := fs.String("sha256", "", "the sha256 of the call you were shown (approves it)")
	decline := fs.Bool("decline", false, "decline the request instead")
	// Flags may come before or after ID.
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return approveUsageErr(stdout, stderr, err)
	}
	switch {
	case len(pos) == 0:
		return approveUsageErr(stdout, stderr, errors.New("approve needs the ID of an approval request (list them with: mcpx-policy approvals)"))
	case len(pos) > 1:
		return approveUsageErr(stdout, stderr, fmt.Errorf("unexpected argument %q", pos[1]))
	case *decline && *sum != "":
		return approveUsageErr(stdout, stderr, errors.New("give --sha256 to approve or --decline, not both"))
	case !*decline && *sum == "":
		return approveUsageErr(stdout, stderr, errors.New("approve needs --sha256, the sha256 of the call you were shown (or --decline)"))
	}
	id := pos[0]
	store, err := mcpxpolicy.OpenApprovals(mcpxpolicy.Options{StateDir: *stateDir})
	if err != nil {
		return fail(stderr, err, "")
	}
	var r decision.ApprovalRequest
	if *decline {
		r, err = store.Decline(id)
	} else {
		r, err = store.Approve(id, strings.ToLower(strings.TrimSpace(*sum)))
	}
	if err != nil {
		return approvalFail(stderr, store, printedStateDir(*stateDir), err)
	}
	if *decline {
		fmt.Fprintf(stdout, "declined approval %s: %s.%s (sha256 %s) will not run with it\n", r.ID, r.Server, r.Tool, r.SHA256)
		return 0
	}
	fmt.Fprintf(stdout, "approved %s: %s.%s (sha256 %s) may run once, when it is decided with --approval %s before %s\n",
		r.ID, r.Server, r.Tool, r.SHA256, r.ID, r.Expires.Format(time.RFC3339))
	return 0
}

// approvalFail reports an error of the approval store with what to do;
// stateDir is the one the commands it names carry (printedStateDir).
func approvalFail(stderr io.Writer, store *mcpxpolicy.Approvals, stateDir string, err error) int {
	list := self() + " approvals" + stateDirFlag(stateDir)
	switch {
	case errors.Is(err, mcpxpolicy.ErrUnreadable):
		return fail(stderr, err, mcpxpolicy.Hint(err)+" (nothing was changed; no approval is given or used until then)")
	case errors.Is(err, mcpxpolicy.ErrMismatch):
		return fail(stderr, err, "approve only the call you were shown: compare the sha256 with the one "+list+" shows")
	case errors.Is(err, mcpxpolicy.ErrNotFound):
		return fail(stderr, err, "list the waiting requests with: "+list)
	case errors.Is(err, mcpxpolicy.ErrApprovalExpired):
		return fail(stderr, err, "decide the call again for a new request")
	case errors.Is(err, mcpxpolicy.ErrApprovalDeclined):
		return fail(stderr, err, "a declined request stays declined: decide the call again for a new request")
	}
	return fail(stderr, err, "approval store: "+store.Where())
}

// approveCommand is the exact command that approves r, runnable as printed
// with stateDir from printedStateDir.
func approveCommand(r decision.ApprovalRequest, stateDir string) string {
	return self() + " approve " + r.ID + " --sha256 " + r.SHA256 + stateDirFlag(stateDir)
}

func declineCommand(r decision.ApprovalRequest, stateDir string) string {
	return self() + " approve " + r.ID + " --decline" + stateDirFlag(stateDir)
}

func indent(text string) string {
	lines := strings.SplitAfter(strings.TrimRight(text, "\n"), "\n")
	return "  " + strings.Join(lines, "  ") + "\n"
}

func approveUsageErr(stdout, stderr io.Writer, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, approveUsage)
		return 0
	}
	fail(stderr, err, "")
	fmt.Fprint(stderr, approveUsage)
	return 1
}

// approvalTTLFlag registers --approval-ttl: how long an approval request
// made for an ask lives.
func approvalTTLFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("approval-ttl", mcpxpolicy.DefaultApprovalTTL, "how long an approval request lives, answered or not")
}

var errApprovalTTL = errors.New("--approval-ttl must be more than 0: every approval expires")

// evalAgain is the eval command line, up to --approval, that decides a
// call as this one did: its config, catalog, state dir (printedStateDir's)
// and surface flags, the files absolute.
func evalAgain(configs []string, catalog, stateDir, surface string) string {
	var b strings.Builder
	b.WriteString(self() + " eval")
	for _, c := range configs {
		b.WriteString(" --config " + writesQuote(absPath(c)))
	}
	if catalog != "" {
		b.WriteString(" --catalog " + writesQuote(absPath(catalog)))
	}
	b.WriteString(stateDirFlag(stateDir))
	if surface != "" {
		b.WriteString(" --surface " + surface)
	}
	return b.String()
}
