package policy_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger/pgtest"
)

// fleetAskConfig asks for every write and keeps the ledger — and so the
// approvals and the pins — in the PostgreSQL database $FLEET_DSN names.
const fleetAskConfig = `version: 1
policy:
  write: ask
servers:
  notes: {}
ledger:
  store: postgres
  dsnEnv: FLEET_DSN
`

// TestFleetSharesApprovals: three `serve` processes, each with a state dir
// of its own, on one PostgreSQL database, as gateways behind a load
// balancer. An ask held through the first is listed and approved through
// the second and used once through the third; the same approval sent
// again through any of them is refused; the same ask sent through two
// gateways is one request. Nothing of it is in any state dir.
func TestFleetSharesApprovals(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	env := []string{"FLEET_DSN=" + dsn}
	g := newGate(t, "notes", fleetAskConfig)
	dir := filepath.Dir(g.config)
	token := filepath.Join(dir, "token")
	const secret = "0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(token, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var gw []*serveProcess
	for _, name := range []string{"a", "b", "c"} {
		gw = append(gw, runServe(t, env, "--config", g.config, "--token-file", token, "--state-dir", filepath.Join(dir, "state-"+name)))
	}
	decide := func(p *serveProcess, doc string) map[string]any {
		t.Helper()
		status, _, body := p.post(t, "/v1/decide", doc)
		var out map[string]any
		if err := json.Unmarshal(body, &out); status != 200 || err != nil {
			t.Fatalf("decide: %d %s", status, body)
		}
		return out
	}

	// Held through a; the same ask through b is the same request.
	held := decide(gw[0], noteWrite)
	req, _ := held["approval"].(map[string]any)
	if held["outcome"] != "ask" || req == nil {
		t.Fatalf("the ask through a = %v; want an ask held", held)
	}
	id, sum := req["id"].(string), req["sha256"].(string)
	if again, _ := decide(gw[1], noteWrite)["approval"].(map[string]any); again == nil || again["id"] != id {
		t.Fatalf("the same ask through b holds %v; want request %s again", again, id)
	}

	// Listed and approved through b.
	hreq, err := http.NewRequest(http.MethodGet, gw[1].base+"/v1/approvals", nil)
	if err != nil {
		t.Fatal(err)
	}
	hreq.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	list, _ := readAll(resp)
	if resp.StatusCode != 200 || !strings.Contains(list, id) {
		t.Fatalf("GET /v1/approvals through b = %d %s; want request %s", resp.StatusCode, list, id)
	}
	status, _, body := gw[1].post(t, "/v1/approvals/"+id, `{"sha256":"`+sum+`"}`, "Authorization", "Bearer "+secret)
	if status != 200 || !strings.Contains(string(body), `"state":"approved"`) {
		t.Fatalf("approve through b = %d %s", status, body)
	}

	// Used once, through c; refused after, through every gateway.
	withApproval := strings.TrimSuffix(noteWrite, "}") + `, "approval": "` + id + `"}`
	if got := decide(gw[2], withApproval); got["outcome"] != "allow" {
		t.Fatalf("the approved call through c = %v; want an allow", got)
	}
	for i, p := range gw {
		got := decide(p, withApproval)
		if got["outcome"] != "deny" || !strings.Contains(string(mustJSON(t, got)), "ConfirmationUnavailable") {
			t.Errorf("the approval used again through gateway %d = %v; want a ConfirmationUnavailable deny", i, got)
		}
	}

	// The CLI answers the fleet's requests with the gateway's config:
	// an ask held through b, listed and approved with --config, runs
	// through a.
	other := strings.Replace(noteWrite, `"text": "x"`, `"text": "y"`, 1)
	req, _ = decide(gw[1], other)["approval"].(map[string]any)
	if req == nil {
		t.Fatal("the second ask was not held")
	}
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), args...)
		cmd.Env = append(cleanEnv(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mcpx-policy %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	id2, sum2 := req["id"].(string), req["sha256"].(string)
	want := " approve " + id2 + " --sha256 " + sum2 + " --config " + g.config
	if out := cli("approvals", "--config", g.config); !strings.Contains(out, want) {
		t.Errorf("approvals --config lists:\n%s\nwant the command %q", out, want)
	}
	cli("approve", id2, "--sha256", sum2, "--config", g.config)
	if got := decide(gw[0], strings.TrimSuffix(other, "}")+`, "approval": "`+id2+`"}`); got["outcome"] != "allow" {
		t.Fatalf("the call approved from the CLI, through a = %v; want an allow", got)
	}

	// Nothing went to a state dir.
	for _, name := range []string{"a", "b", "c"} {
		if _, err := os.Stat(filepath.Join(dir, "state-"+name, "approvals.log")); !os.IsNotExist(err) {
			t.Errorf("state dir %s holds an approvals.log (%v): the fleet's approvals belong in the database", name, err)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fleetPinConfig pins tool definitions and keeps the pins in the
// PostgreSQL database $FLEET_DSN names.
const fleetPinConfig = `version: 1
policy:
  write: allow
pool:
  pinTools: deny
servers:
  notes: {}
ledger:
  store: postgres
  dsnEnv: FLEET_DSN
`

// TestFleetSharesPins: three `serve` processes, each with a state dir of
// its own, on one PostgreSQL database. A tool first seen through one
// gateway is pinned for all: its changed definition is refused through a
// second; the change, listed and accepted through a third, holds through
// the first, where the old definition is now the changed one.
func TestFleetSharesPins(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	env := []string{"FLEET_DSN=" + dsn}
	g := newGate(t, "notes", fleetPinConfig)
	dir := filepath.Dir(g.config)
	token := filepath.Join(dir, "token")
	const secret = "0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(token, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var gw []*serveProcess
	for _, name := range []string{"a", "b", "c"} {
		gw = append(gw, runServe(t, env, "--config", g.config, "--token-file", token, "--state-dir", filepath.Join(dir, "state-"+name)))
	}
	changed := strings.Replace(noteWrite, `"name": "write_note",`, `"name": "write_note", "description": "also mails the note to ops",`, 1)
	if changed == noteWrite {
		t.Fatal("the changed definition is the same")
	}
	decide := func(p *serveProcess, doc string) string {
		t.Helper()
		status, _, body := p.post(t, "/v1/decide", doc)
		if status != 200 {
			t.Fatalf("decide: %d %s", status, body)
		}
		switch {
		case strings.Contains(string(body), `"outcome":"allow"`):
			return "allow"
		case strings.Contains(string(body), `"code":"ToolDefinitionChanged"`):
			return "ToolDefinitionChanged"
		}
		return string(body)
	}
	if got := decide(gw[0], noteWrite); got != "allow" {
		t.Fatalf("first sight through a = %s; want allow (trust on first use)", got)
	}
	if got := decide(gw[1], changed); got != "ToolDefinitionChanged" {
		t.Fatalf("the changed definition through b = %s; want ToolDefinitionChanged", got)
	}
	resp, err := http.Get(gw[2].base + "/v1/pins")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := readAll(resp)
	var pins struct {
		Pins []struct {
			Tool    string `json:"tool"`
			Pending *struct {
				SHA256 string `json:"sha256"`
			} `json:"pending"`
		} `json:"pins"`
	}
	if err := json.Unmarshal([]byte(raw), &pins); err != nil || len(pins.Pins) != 1 || pins.Pins[0].Pending == nil {
		t.Fatalf("GET /v1/pins through c = %s (%v); want write_note with its changed definition waiting", raw, err)
	}
	// The refusal names the command that accepts the change in the
	// fleet's database, and the CLI lists it there.
	_, _, refusal := gw[1].post(t, "/v1/decide", changed)
	accept := "mcpx-policy pins accept notes write_note --sha256 " + pins.Pins[0].Pending.SHA256 + " --config " + g.config
	if !strings.Contains(string(refusal), accept) {
		t.Errorf("the refusal through b = %s; want it to name %q", refusal, accept)
	}
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), "pins", "--config", g.config)
	cmd.Env = append(cleanEnv(), env...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), accept) {
		t.Errorf("pins --config = %v\n%s\nwant it to name %q", err, out, accept)
	}
	status, _, body := gw[2].post(t, "/v1/pins/accept", `{"server":"notes","tool":"write_note","sha256":"`+pins.Pins[0].Pending.SHA256+`"}`,
		"Authorization", "Bearer "+secret)
	if status != 200 {
		t.Fatalf("accept through c = %d %s", status, body)
	}
	if got := decide(gw[0], changed); got != "allow" {
		t.Errorf("the accepted definition through a = %s; want allow", got)
	}
	if got := decide(gw[1], noteWrite); got != "ToolDefinitionChanged" {
		t.Errorf("the old definition through b after the acceptance = %s; want ToolDefinitionChanged", got)
	}
	for _, name := range []string{"a", "b", "c"} {
		if _, err := os.Stat(filepath.Join(dir, "state-"+name, "pins.json")); !os.IsNotExist(err) {
			t.Errorf("state dir %s holds a pins.json (%v): the fleet's pins belong in the database", name, err)
		}
	}
}
