// Command mcpx-policy is the command line of the mcpx-policy gate: it
// evaluates tool calls against a config, checks configs, lists and clears
// the unknown-outcome ledger, lists and answers asks, compares configs,
// replays recorded calls and writes OPA bundles. It is a thin layer over
// the mcpxpolicy SDK.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mcpx/mcpx-policy/internal/buildinfo"
)

const usage = `usage: mcpx-policy <command> [flags]

Commands:
  eval     decide tool calls:       mcpx-policy eval --config F [--catalog F] CALL.json…
  check    validate a config:       mcpx-policy check --config F [--catalog F]
  writes   list or clear unknown-outcome writes:
                                    mcpx-policy writes [clear SERVER [--id ID]]
  pins     list or accept pinned tool definitions:
                                    mcpx-policy pins [accept SERVER TOOL [--sha256 S]]
  approvals list the asks waiting for a person:
                                    mcpx-policy approvals
  approve  answer one:              mcpx-policy approve ID (--sha256 S | --decline)
  diff     what a config change does to each tool:
                                    mcpx-policy diff [--catalog F] OLD.yaml NEW.yaml
  replay   decide recorded calls (serve/proxy --record) again:
                                    mcpx-policy replay --config F [--against F…] CALL.json|DIR…
  bundle   write an OPA bundle:     mcpx-policy bundle --config F (-o bundle.tar.gz | --dir D)
  serve    the HTTP decision service: mcpx-policy serve --config F [--addr 127.0.0.1:8181]
  proxy    gate an MCP server:      mcpx-policy proxy --config F --server NAME -- CMD ARGS…
  version  the build: module version, VCS revision, Go (also --version)

Run 'mcpx-policy <command> -h' for a command's flags and examples.

Exit status: 0 success, 1 error (usage, config, input, a ledger or state
that cannot be used) for every command; 2 and up say what a command found:
eval 2 deny and 3 ask, diff 2 the configs differ, replay 2 some decisions
change. Each command's -h states its own.
`

func main() {
	// A write to a closed pipe — stdout's reader (a decision log consumer,
	// a pager, an MCP client) or stderr's gone — is an error the writer
	// handles (EPIPE), never the end of the process: without this, Go ends
	// a process whose write to fd 1 or 2 meets a closed pipe. Notify (not
	// Ignore) leaves SIGPIPE at its default in the processes we start.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 1
	}
	switch args[0] {
	case "eval":
		return runEval(args[1:], stdout, stderr)
	case "check":
		return runCheck(args[1:], stdout, stderr)
	case "writes":
		return runWrites(args[1:], stdout, stderr)
	case "pins":
		return runPins(args[1:], stdout, stderr)
	case "approvals":
		return runApprovals(args[1:], stdout, stderr)
	case "approve":
		return runApprove(args[1:], stdout, stderr)
	case "diff":
		return runDiff(args[1:], stdout, stderr)
	case "replay":
		return runReplay(args[1:], stdout, stderr)
	case "bundle":
		return runBundle(args[1:], stdout, stderr)
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "proxy":
		return runProxy(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		return runVersion(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		return fail(stderr, fmt.Errorf("unknown command %q", args[0]), "run 'mcpx-policy help' for the list of commands")
	}
}

const versionUsage = `usage: mcpx-policy version [--format text|json]
       mcpx-policy --version

Prints the build: the module version (a release tag, the pseudo-version
go install computed, or "(devel)" for a build of a working tree), the
version-control revision it was built from ("+dirty" when the tree had
changes; "unknown" for a build without VCS information, such as
GOFLAGS=-buildvcs=false), the revision's time and the Go toolchain.
GET /healthz ("build") and the metric mcpx_policy_build_info say the same.

  mcpx-policy version
  mcpx-policy version --format json

Exit status: 0 printed, 1 error (usage).
`

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := formatFlag(fs)
	if err := fs.Parse(args); err != nil {
		return usageError(stdout, stderr, versionUsage, err)
	}
	if fs.NArg() > 0 {
		return usageError(stdout, stderr, versionUsage, fmt.Errorf("version takes no arguments"))
	}
	if err := format.check(); err != nil {
		return usageError(stdout, stderr, versionUsage, err)
	}
	bi := buildinfo.Read()
	if format.json() {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(bi); err != nil {
			return fail(stderr, err, "")
		}
		return 0
	}
	fmt.Fprintln(stdout, bi.String())
	return 0
}

// fail prints err (one "error:" line per line of err, without a trailing
// period) and an optional hint to stderr in the house format and returns
// exit code 1.
func fail(stderr io.Writer, err error, hint string) int {
	for _, line := range strings.Split(strings.TrimRight(err.Error(), "\n"), "\n") {
		fmt.Fprintf(stderr, "mcpx-policy: error: %s\n", strings.TrimSuffix(line, "."))
	}
	if hint != "" {
		fmt.Fprintf(stderr, "mcpx-policy: hint: %s\n", hint)
	}
	return 1
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// parseInterspersed parses fs's flags wherever they stand among args and
// returns the positional arguments in order: `writes clear fs --id X` and
// `writes clear --id X fs` are the same command.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
