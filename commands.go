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

// clearReason is the --reason a printed clear command carries, for the
// operator to replace with what the server showed: a clear without one
// leaves the ledger's audit history (cleared) without a why. The policy's
// bare command carries it too (rego/mcpx/steps/ledger.rego).
const clearReason = "<what you found on the server>"

// WritesClear is `mcpx-policy writes clear SERVER [--id ID | --seen
// TOKEN]` with the ledger's place (--state-dir D, or --config F… with
// LedgerInConfig) and --reason clearReason; with neither id nor seen it clears every entry of
// server, with seen (a listing's token, WritesState.Seen) exactly the
// entries that listing showed and none recorded since. Arguments a POSIX
// shell would split are single-quoted.
func (c Commands) WritesClear(server, id, seen string) string {
	s := "mcpx-policy writes clear " + shellQuote(server)
	switch {
	case id != "":
		s += " --id " + shellQuote(id)
	case seen != "":
		s += " --seen " + shellQuote(seen)
	}
	return s + c.ledger() + " --reason " + shellQuote(clearReason)
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

// spell spells the commands the policy names for this process — the
// clear command of an UnknownOutcomePending reason (details "clear") and
// the accept command of a ToolDefinitionChanged one (details "accept"),
// each also where its message quotes it, and the writes command in a
// LedgerUnreadable one's details (its message, an agent's, names no path)
// — with WritesClear, PinsAccept and Writes, in the reasons and in a
// shadow-mode decision's own. The policy names the bare command (what a
// stock OPA answers); the answer says where the ledger and the pins are.
// seen is the token of the ledger entries the policy was shown
// (engine.Ledger.Seen): the clear command then clears those and no entry
// recorded after the decision; "" (a stock OPA's answer, read by
// ParseDecision) spells the clear of every entry. d is not modified (the
// engine may share it).
func (c Commands) spell(d decision.Decision, seen string) decision.Decision {
	d.Reasons = c.spellReasons(d.Call, d.Reasons, seen)
	if d.Shadow != nil {
		sh := *d.Shadow
		sh.Reasons = c.spellReasons(d.Call, sh.Reasons, seen)
		d.Shadow = &sh
	}
	return d
}

// spellReasons is spell of rs, a copy when anything changes.
func (c Commands) spellReasons(call decision.CallRef, rs []decision.Reason, seen string) []decision.Reason {
	copied := false
	for i, r := range rs {
		var key, verb, ours string
		switch r.Code {
		case decision.UnknownOutcomePending:
			key, verb, ours = "clear", "mcpx-policy writes clear ", c.WritesClear(call.Server, "", seen)
		case decision.ToolDefinitionChanged:
			sum, _ := r.Details["sha256"].(string)
			key, verb, ours = "accept", "mcpx-policy pins accept ", c.PinsAccept(call.Server, call.Tool, sum)
		case decision.LedgerUnreadable:
			key, verb, ours = "writes", "mcpx-policy writes", c.Writes()
		default:
			continue
		}
		policy, _ := r.Details[key].(string)
		if policy == ours || !strings.HasPrefix(policy, verb) {
			continue
		}
		if !copied {
			rs = append([]decision.Reason(nil), rs...)
			copied = true
		}
		r.Details = maps.Clone(r.Details)
		r.Details[key] = ours
		if key != "writes" {
			r.Message = strings.ReplaceAll(r.Message, policy, ours)
		}
		rs[i] = r
	}
	return rs
}

// shellQuote single-quotes s unless a POSIX shell would read it as one
// word as it is.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// commandsFor is the Commands of an Engine with opts whose config's ledger
// section is lc: its state dir as printed (printedStateDir), and its
// config files, absolute, when the ledger is the config's database.
func commandsFor(opts Options, lc config.LedgerConfig) Commands {
	c := Commands{StateDir: printedStateDir(opts.StateDir)}
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

// printedStateDir is the state dir a command printed for a person names:
// dir (Options.StateDir, or a --state-dir flag), else the one
// $MCPX_POLICY_STATE_DIR chose, as an absolute path; "" when neither did
// (the default state dir is the same in the shell that runs the command).
func printedStateDir(dir string) string {
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
