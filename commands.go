package mcpxpolicy

import (
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// Commands spells the mcpx-policy commands an output tells a person to run
// (clearing unknown outcomes, accepting a pin, listing them, checking the
// config) so that they run as printed: with the state dir and the config
// files of the process that printed them. Engine.Commands is the
// Engine's; the zero value names neither, which is right for a process
// that uses the default state dir. Safe for concurrent use.
type Commands struct {
	// StateDir is the state dir the process was given (--state-dir or
	// MCPX_POLICY_STATE_DIR), best absolute; "" leaves --state-dir out.
	StateDir string
	// Configs are the --config files the process was given, in order.
	Configs []string
	// LedgerInConfig says the unknown-outcome ledger is the one the
	// config names (a database a fleet shares, docs/ledger.md), not the
	// state dir's file: the writes commands then carry the --config files
	// instead of --state-dir.
	LedgerInConfig bool
}

// WritesClear is `mcpx-policy writes clear SERVER [--id ID]` with the
// ledger's place (--state-dir D, or --config F… with LedgerInConfig); id ""
// clears every entry of server. Arguments a POSIX shell would split are
// single-quoted.
func (c Commands) WritesClear(server, id string) string {
	s := "mcpx-policy writes clear " + shellQuote(server)
	if id != "" {
		s += " --id " + shellQuote(id)
	}
	return s + c.ledger()
}

// PinsAccept is `mcpx-policy pins accept SERVER TOOL [--sha256 S]
// [--state-dir D]`, quoted as WritesClear is; sha256 "" leaves --sha256
// out.
func (c Commands) PinsAccept(server, tool, sha256 string) string {
	s := "mcpx-policy pins accept " + shellQuote(server) + " " + shellQuote(tool)
	if sha256 != "" {
		s += " --sha256 " + shellQuote(sha256)
	}
	return s + c.stateDir()
}

// Writes is `mcpx-policy writes` with the ledger's place, as WritesClear.
func (c Commands) Writes() string { return "mcpx-policy writes" + c.ledger() }

func (c Commands) configs() string {
	s := ""
	for _, f := range c.Configs {
		s += " --config " + shellQuote(f)
	}
	return s
}

// ledger is the flags that name the ledger: --config F… when it is the
// config's, else --state-dir D.
func (c Commands) ledger() string {
	if c.LedgerInConfig {
		return c.configs()
	}
	return c.stateDir()
}

func (c Commands) stateDir() string {
	if c.StateDir == "" {
		return ""
	}
	return " --state-dir " + shellQuote(c.StateDir)
}

// respell replaces the commands the policy names — the clear command of
// an UnknownOutcomePending reason (details "clear") and the accept command
// of a ToolDefinitionChanged one (details "accept"), each quoted in its
// message, and the writes command in a LedgerUnreadable one's details
// (its message stays as it is) — with WritesClear, PinsAccept and Writes,
// so that they carry the state dir. A command that already names where the ledger or the pins are (the
// Engine's: it carries --state-dir or --config) is the deciding process's
// own and is kept; only the policy's bare default is replaced. d is not
// modified.
func (c Commands) respell(d decision.Decision) decision.Decision {
	copied := false
	for i, r := range d.Reasons {
		var key, ours, bare string
		switch r.Code {
		case decision.UnknownOutcomePending:
			key, ours, bare = "clear", c.WritesClear(d.Call.Server, ""), bareClear(d.Call.Server)
		case decision.ToolDefinitionChanged:
			sum, _ := r.Details["sha256"].(string)
			key, ours, bare = "accept", c.PinsAccept(d.Call.Server, d.Call.Tool, sum), Commands{}.PinsAccept(d.Call.Server, d.Call.Tool, sum)
		case decision.LedgerUnreadable:
			key, ours, bare = "writes", c.Writes(), Commands{}.Writes()
		default:
			continue
		}
		policy, _ := r.Details[key].(string)
		if policy == "" || policy == ours || policy != bare {
			continue
		}
		if !copied {
			d.Reasons = append([]decision.Reason(nil), d.Reasons...)
			copied = true
		}
		r.Details = maps.Clone(r.Details)
		r.Details[key] = ours
		if key != "writes" { // LedgerUnreadable's message, for an agent, names no path
			r.Message = strings.ReplaceAll(r.Message, policy, ours)
		}
		d.Reasons[i] = r
	}
	return d
}

// bareClear is the clear command the policy names when its caller gives
// none (a stock OPA fed the documented input): no flags, the server as is.
func bareClear(server string) string { return "mcpx-policy writes clear " + server }

// shellQuote single-quotes s unless a POSIX shell would read it as one
// word as it is.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// commandsFor is the Commands of an Engine with opts whose config's ledger
// section is lc: its state dir as printed (PrintedStateDir), and its
// config files, absolute, when the ledger is the config's database.
func commandsFor(opts Options, lc config.LedgerConfig) Commands {
	c := Commands{StateDir: PrintedStateDir(opts.StateDir)}
	if lc.Store == config.StorePostgres {
		c.LedgerInConfig = true
		for _, f := range opts.ConfigPaths {
			c.Configs = append(c.Configs, absPath(f))
		}
	}
	return c
}

// stateDirEnv names the environment variable that chooses the state dir
// when Options.StateDir is not given.
const stateDirEnv = ledger.StateDirEnv

// PrintedStateDir is the state dir a command printed for a person names:
// dir (Options.StateDir, or a --state-dir flag), else the one
// $MCPX_POLICY_STATE_DIR chose, as an absolute path; "" when neither did
// (the default state dir is the same in the shell that runs the command).
func PrintedStateDir(dir string) string {
	if dir == "" {
		dir = os.Getenv(stateDirEnv)
	}
	return absPath(dir)
}

// absPath is p made absolute, or p when that fails; "" stays "".
func absPath(p string) string {
	if p == "" {
		return p
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
