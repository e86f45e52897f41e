package mcpxpolicy

import (
	"os"
	"path/filepath"

	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/ledger"
	"github.com/mcpx/mcpx-policy/internal/render"
)

// ClearCommand is the command an operator runs to clear server's
// unknown-outcome entries from this Engine's ledger (id "" clears all of
// them, else the one entry): `mcpx-policy writes clear SERVER [--id ID]`
// with --state-dir when Options.StateDir or $MCPX_POLICY_STATE_DIR chose
// the state dir (as an absolute path), or, when the config keeps the
// ledger in a database, with every
// Options.ConfigPaths file as --config. It is the command an
// UnknownOutcomePending deny names (details "clear"), so that it runs as
// printed from any directory. Arguments a POSIX shell would split are
// single-quoted. Environment and Set layers are not repeated: a config
// that names its database only through them needs the same environment
// where the command runs. Safe for concurrent use.
func (e *Engine) ClearCommand(server, id string) string {
	return e.commands().WritesClear(server, id)
}

// AcceptCommand is the command an operator runs to accept the changed
// definition of server's tool whose SHA-256 is sha256 into this Engine's
// pin store: `mcpx-policy pins accept SERVER TOOL --sha256 S` with
// --state-dir when Options.StateDir or $MCPX_POLICY_STATE_DIR chose the
// state dir (as an absolute path). Pins
// live in the state dir whichever store keeps the ledger, so a config's
// database changes nothing here. It is the command a ToolDefinitionChanged
// reason names (details "accept"), so that it runs as printed from any
// directory; sha256 "" leaves --sha256 out. Arguments a POSIX shell would
// split are single-quoted. Safe for concurrent use.
func (e *Engine) AcceptCommand(server, tool, sha256 string) string {
	return e.commands().PinsAccept(server, tool, sha256)
}

// LedgerInConfig reports whether the Engine's unknown-outcome ledger is
// the database its config names (docs/ledger.md) rather than the state
// dir's file: a command that lists or clears it then needs the --config
// files, not --state-dir. It is fixed for the Engine's life (Reload keeps
// the ledger it opened).
func (e *Engine) LedgerInConfig() bool { return e.ledgerCfg.Store == config.StorePostgres }

// StateDirEnv names the environment variable that chooses the state dir
// when Options.StateDir is not given (DefaultStateDir). A command printed
// for a person names the state dir it chose, since a shell without the
// variable would find another.
const StateDirEnv = ledger.StateDirEnv

// commands spells the mcpx-policy commands for this Engine's ledger, with
// the state dir Options.StateDir or, as New took it, $MCPX_POLICY_STATE_DIR
// named: a shell without that variable would find another. The default
// one ($XDG_STATE_HOME's) is left out.
func (e *Engine) commands() render.Commands {
	c := render.Commands{StateDir: PrintedStateDir(e.opts.StateDir)}
	if e.LedgerInConfig() {
		c.LedgerInConfig = true
		for _, f := range e.opts.ConfigPaths {
			c.Configs = append(c.Configs, absPath(f))
		}
	}
	return c
}

// PrintedStateDir is the state dir a command printed for a person names:
// dir (Options.StateDir, or a --state-dir flag), else the one
// $MCPX_POLICY_STATE_DIR chose, as an absolute path; "" when neither did
// (the default state dir is the same in the shell that runs the command).
func PrintedStateDir(dir string) string {
	if dir == "" {
		dir = os.Getenv(StateDirEnv)
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
