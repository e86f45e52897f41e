package render

import (
	"maps"
	"strings"

	"github.com/mcpx/mcpx-policy/internal/decision"
)

// Commands spells the mcpx-policy commands an output tells a person to run
// (clearing unknown outcomes, listing them, checking the config) so that
// they run as printed: with the state dir and the config files of the
// process that printed them. The zero value names neither, which is right
// for a process that uses the default state dir.
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

// ClearReason is the --reason a printed clear command carries, for the
// operator to replace with what the server showed: a clear without one
// leaves the ledger's audit history (cleared) without a why.
const ClearReason = "<what you found on the server>"

// WritesClear is `mcpx-policy writes clear SERVER [--id ID]` with the
// ledger's place (--state-dir D, or --config F… with LedgerInConfig) and
// --reason ClearReason; id "" clears every entry of server. Arguments a
// POSIX shell would split are single-quoted.
func (c Commands) WritesClear(server, id string) string {
	s := "mcpx-policy writes clear " + shellQuote(server)
	if id != "" {
		s += " --id " + shellQuote(id)
	}
	return s + c.ledger() + " --reason " + shellQuote(ClearReason)
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

// Pins is `mcpx-policy pins [--state-dir D]`.
func (c Commands) Pins() string { return "mcpx-policy pins" + c.stateDir() }

// Writes is `mcpx-policy writes` with the ledger's place, as WritesClear.
func (c Commands) Writes() string { return "mcpx-policy writes" + c.ledger() }

// Check is `mcpx-policy check --config F…` with every config file.
func (c Commands) Check() string { return "mcpx-policy check" + c.configs() }

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
func bareClear(server string) string {
	return "mcpx-policy writes clear " + server + " --reason " + shellQuote(ClearReason)
}

// shellQuote single-quotes s unless a POSIX shell would read it as one
// word as it is.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
