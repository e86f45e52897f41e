package mcpxpolicy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// Load a config into an Engine: the files in layer order, the environment
// (here none) and a flag-level override, the state dir for the ledger,
// pins and approvals. A bad config is an error listing every problem with
// its file and line.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "mcpx-policy-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mcpx-policy.yaml")
	_ = os.WriteFile(path, []byte("version: 1\npolicy:\n  write: ask\n"), 0o644)

	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{
		ConfigPaths: []string{path},
		Env:         []string{},
		Set:         map[string]string{"policy.write": "deny"},
		StateDir:    filepath.Join(dir, "state"),
	})
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	d, _ := eng.Decide(context.Background(), decision.Call{Server: "notes", Tool: writeFile, Args: map[string]any{}})
	fmt.Println(d.Outcome, d.First().Code)

	_ = os.WriteFile(path, []byte("version: 1\npolicy:\n  write: maybe\n"), 0o644)
	_, err = mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{path}, Env: []string{}, StateDir: filepath.Join(dir, "state")})
	fmt.Println(err != nil)
	// Output:
	// deny WriteDenied
	// true
}

// Answer a call document — the call file of `mcpx-policy eval`, the body
// of serve's POST /v1/decide — in one step: read it strictly, decide it,
// put an ask on hold, and render the decision, redacted once, for the
// call's surface. Its JSON is what eval --format json prints and serve
// returns.
func ExampleEngine_Answer() {
	eng, done := exampleEngine(exampleConfig)
	defer done()
	ctx := context.Background()
	raw := []byte(`{"server": "fs", "tool": {"name": "move_file"}, "args": {}}`)
	ans := eng.Answer(ctx, raw, mcpxpolicy.AnswerOptions{DefaultSurface: mcpxpolicy.SurfaceDaemon})
	d := ans.Decision.Decision()
	b, _ := json.Marshal(ans.Rendering)
	fmt.Println(d.Outcome, d.First().Code, ans.Rendering.Status)
	fmt.Println(string(b))

	ans = eng.Answer(ctx, []byte(`{"server": "fs", "server": "git", "tool": "x", "args": {}}`), mcpxpolicy.AnswerOptions{Name: "call document"})
	fmt.Println(ans.Unread)
	// Output:
	// deny HiddenTool 400
	// {"status":400,"body":{"error":"tool \"move_file\" on \"fs\" is hidden by its hiddenTools configuration","code":"HiddenTool","server":"fs","tool":"move_file","violations":[]}}
	// not a call document: json: duplicate key "server"
}

// What an MCP proxy answers a refused tools/call with: the refusal
// rendered for MCP, an isError result whose text says what was refused
// and what would be accepted (a hidden tool is an unknown tool to the
// client: package mcpgate).
func ExampleRender_mcp() {
	eng, done := exampleEngine(exampleConfig)
	defer done()
	call := decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/etc/passwd"}}
	d, _ := eng.Decide(context.Background(), call)
	r, _ := mcpxpolicy.Render(mcpxpolicy.SurfaceMCP, call, mcpxpolicy.Redact(call, d))
	var result struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(r.Body, &result)
	fmt.Println(result.IsError)
	// Output:
	// true
}

// Clear an unknown-outcome write without an Engine, as `mcpx-policy writes
// clear` does: open the ledger the options name, list it, clear one entry
// with the reason an operator gives.
func ExampleWrites_Clear() {
	dir, _ := os.MkdirTemp("", "mcpx-policy-example")
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "mcpx-policy.yaml")
	_ = os.WriteFile(config, []byte(exampleConfig), 0o644)
	opts := mcpxpolicy.Options{ConfigPaths: []string{config}, Env: []string{}, StateDir: filepath.Join(dir, "state")}

	// A daemon lost the answer to a write.
	eng, err := mcpxpolicy.New(context.Background(), opts)
	if err != nil {
		panic(err)
	}
	w, _ := eng.Writes().Begin(decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/workspace/a"}})
	w.Sent()
	_ = w.Unknown("timeout")
	eng.Close()

	// An operator checks and clears it.
	ledger, err := mcpxpolicy.OpenWrites(opts)
	if err != nil {
		panic(err)
	}
	defer ledger.Close()
	st, _ := ledger.List()
	fmt.Println(len(st.Entries), st.Entries[0].Server, st.Entries[0].Cause)

	cleared, err := ledger.Clear("fs", st.Entries[0].ID, "checked: the file was written")
	fmt.Println(len(cleared), err)
	_, err = ledger.Clear("fs", "0123456789abcdef", "")
	fmt.Println(err != nil && errors.Is(err, mcpxpolicy.ErrNotFound))
	// Output:
	// 1 fs timeout
	// 1 <nil>
	// true
}

// A gateway that asks a fleet of stock OPA servers (docs/fleet.md) sends
// OPAInput's document and reads each answer's "result" with
// ParseDecision; anything that is not a well-formed decision is an error,
// and the gateway denies the call.
func ExampleEngine_ParseDecision() {
	eng, done := exampleEngine(exampleConfig)
	defer done()
	call := decision.Call{Server: "fs", Tool: decision.Tool{Name: "read_file"}, Args: map[string]any{}}
	d, err := eng.ParseDecision(call, []byte(`{"outcome":"allow","reasons":[],"warnings":[],"write":false,"destructive":false,"call":{"server":"fs","tool":"read_file","sha256":""}}`))
	fmt.Println(d.Outcome, err)

	_, err = eng.ParseDecision(call, []byte(`{"outcome":"allow-anyway"}`))
	fmt.Println(err != nil)
	// Output:
	// allow <nil>
	// true
}
