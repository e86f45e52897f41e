package mcpxpolicy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// TestCommandsQuote: the commands every output names are quoted so that a
// POSIX shell runs them as printed, with the ledger's place (--state-dir,
// or the --config files of a ledger in a database).
func TestCommandsQuote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		got, want string
	}{
		{mcpxpolicy.Commands{}.WritesClear("fs", "", ""), "mcpx-policy writes clear fs --reason '<what you found on the server>'"},
		{mcpxpolicy.Commands{}.WritesClear("fs", "3f9c2a1b7d4e8f60", ""), "mcpx-policy writes clear fs --id 3f9c2a1b7d4e8f60 --reason '<what you found on the server>'"},
		{mcpxpolicy.Commands{}.WritesClear("fs", "", "5e1f"), "mcpx-policy writes clear fs --seen 5e1f --reason '<what you found on the server>'"},
		{mcpxpolicy.Commands{}.WritesClear("my server", "", ""), "mcpx-policy writes clear 'my server' --reason '<what you found on the server>'"},
		{mcpxpolicy.Commands{}.WritesClear("it's", "", ""), `mcpx-policy writes clear 'it'\''s' --reason '<what you found on the server>'`},
		{mcpxpolicy.Commands{StateDir: "/var/lib/my state"}.WritesClear("fs", "", ""), "mcpx-policy writes clear fs --state-dir '/var/lib/my state' --reason '<what you found on the server>'"},
		{mcpxpolicy.Commands{StateDir: "/s"}.PinsAccept("my server", "it's", ""), `mcpx-policy pins accept 'my server' 'it'\''s' --state-dir /s`},
		{mcpxpolicy.Commands{Configs: []string{"/etc/mcpx/fleet.yaml", "/etc/mcpx/my site.yaml"}, LedgerInConfig: true, StateDir: "/s"}.WritesClear("fs", "", ""),
			"mcpx-policy writes clear fs --config /etc/mcpx/fleet.yaml --config '/etc/mcpx/my site.yaml' --reason '<what you found on the server>'"},
		{mcpxpolicy.Commands{Configs: []string{"/etc/mcpx/fleet.yaml"}, LedgerInConfig: true}.Writes(), "mcpx-policy writes --config /etc/mcpx/fleet.yaml"},
		{mcpxpolicy.Commands{StateDir: "/s"}.Writes(), "mcpx-policy writes --state-dir /s"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestTheAnswerSpellsCommands: the policy names the bare commands (what a
// stock OPA answers); the Engine's answer spells them for its process —
// in details and where the message quotes them, in a shadow-mode
// decision's own reasons too — and leaves a LedgerUnreadable message, an
// agent's, and look-alikes under other codes as they are.
func TestTheAnswerSpellsCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state dir")
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: state, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	sum := strings.Repeat("ab", 32)
	flag := " --state-dir '" + state + "'"
	const msg = "fs.write_file: the unknown-outcome ledger cannot be read (corrupt), so no write is allowed until it is repaired"
	reasons := `[
	  {"code":"UnknownOutcomePending","step":"ledger","message":"fs.write_file: 1 earlier write has an unknown outcome; no further writes to fs until an operator checks what happened and clears them with: mcpx-policy writes clear fs","details":{"clear":"mcpx-policy writes clear fs"}},
	  {"code":"ToolDefinitionChanged","step":"pin","message":"fs.write_file: changed; refused until an operator reviews the change and accepts it with: mcpx-policy pins accept fs write_file --sha256 ` + sum + `","details":{"accept":"mcpx-policy pins accept fs write_file --sha256 ` + sum + `","sha256":"` + sum + `"}},
	  {"code":"LedgerUnreadable","step":"ledger","message":"` + msg + `","details":{"writes":"mcpx-policy writes"}},
	  {"code":"OverrideDeny","step":"overrides","message":"see mcpx-policy writes clear fs","details":{"clear":"mcpx-policy writes clear fs","code":"x"}}]`
	call := decision.Call{Server: "fs", Tool: decision.Tool{Name: "write_file"}}
	d, err := eng.ParseDecision(call, []byte(`{"outcome":"allow","step":"","reasons":[],"warnings":[],"write":true,"destructive":true,
	  "call":{"server":"fs","tool":"write_file","sha256":""},"shadow":{"outcome":"deny","step":"pin","reasons":`+reasons+`}}`))
	if err != nil {
		t.Fatal(err)
	}
	rs := d.Shadow.Reasons
	const reason = " --reason '<what you found on the server>'"
	if c := rs[0]; c.Details["clear"] != "mcpx-policy writes clear fs"+flag+reason || !strings.HasSuffix(c.Message, "clears them with: mcpx-policy writes clear fs"+flag+reason) {
		t.Errorf("clear: %q %v", c.Message, c.Details)
	}
	accept := "mcpx-policy pins accept fs write_file --sha256 " + sum + flag
	if c := rs[1]; c.Details["accept"] != accept || !strings.HasSuffix(c.Message, "accepts it with: "+accept) {
		t.Errorf("accept: %q %v", c.Message, c.Details)
	}
	if c := rs[2]; c.Details["writes"] != "mcpx-policy writes"+flag || c.Message != msg {
		t.Errorf("writes: %q %v", c.Message, c.Details)
	}
	if c := rs[3]; c.Details["clear"] != "mcpx-policy writes clear fs" || c.Message != "see mcpx-policy writes clear fs" {
		t.Errorf("an override's look-alike was spelled: %q %v", c.Message, c.Details)
	}
	if got := eng.Commands().WritesClear("fs", "", ""); got != "mcpx-policy writes clear fs"+flag+reason {
		t.Errorf("Engine.Commands: %q", got)
	}
}
