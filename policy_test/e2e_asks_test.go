package policy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Asks through the built proxy, end to end: the official Go SDK client in
// front of a Go SDK server (e2e/notesserver) that keeps its notes in a
// file, so the file shows which writes ran.

const notesConfig = `version: 1
policy: {write: ask}
servers:
  notes: {}
`

// notesGate starts nothing: it is the gate and the notes file.
type notesGate struct {
	*gate
	server, file string
}

func newNotesGate(t *testing.T) *notesGate {
	t.Helper()
	g := newGate(t, "notes", notesConfig)
	return &notesGate{gate: g, server: goServer(t, "../e2e/notesserver"), file: filepath.Join(t.TempDir(), "notes.txt")}
}

// connectAt connects a Go SDK client speaking version to a new proxy.
func (g *notesGate) connectAt(t *testing.T, ctx context.Context, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpx-policy-e2e", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: g.command(t, g.server, g.file)}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("the session speaks %s; want %s", got, version)
	}
	return cs
}

func (g *notesGate) notes(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(g.file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// approvalIDs are the approval requests the proxy's log names, in order.
func (g *notesGate) approvalIDs() []string {
	var ids []string
	g.stderr.await(" approval=")
	for _, m := range regexp.MustCompile(`asked for confirmation.* approval=([0-9a-f]{32})`).FindAllStringSubmatch(g.stderr.String(), -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// useAgain decides the call once more with an approval the proxy used,
// from another process sharing the state dir: single use across processes.
func (g *notesGate) useAgain(t *testing.T, id, text string) string {
	t.Helper()
	call := filepath.Join(t.TempDir(), "call.json")
	doc := `{"server":"notes","tool":{"name":"add_note","annotations":{"destructiveHint":false},"inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},"args":{"text":"` + text + `"}}`
	if err := os.WriteFile(call, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), "eval", "--config", g.config, "--state-dir", g.state, "--approval", id, call)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("eval --approval %s of the used approval: %v; want exit 2 (a deny)\n%s", id, err, out)
	}
	return string(out)
}

// answers is a person behind the client: it approves (or not) the
// proxy's confirmations, answers the server's own question with sure, and
// records every prompt.
type answers struct {
	approve bool
	mu      sync.Mutex
	asked   []string
}

func (a *answers) handler(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	a.asked = append(a.asked, req.Params.Message)
	a.mu.Unlock()
	if strings.HasPrefix(req.Params.Message, "Delete every note?") {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"sure": true}}, nil
	}
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": a.approve}}, nil
}

func (a *answers) prompts() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

func summary(prompts []string) []string {
	var out []string
	for _, p := range prompts {
		out = append(out, strings.SplitN(p, "\n", 2)[0])
	}
	return out
}

// TestE2EAskInputRequired: on protocol 2026-07-28 the ask reaches the
// person as an input_required result; approved, the write runs once, and
// its approval cannot be used again by anyone; declined, it does not run.
// A replayed or altered retry is refused. The server's own question passes
// through untouched.
func TestE2EAskInputRequired(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	g := newNotesGate(t)
	person := &answers{approve: true}
	cs := g.connectAt(t, ctx, "2026-07-28", &mcp.ClientOptions{ElicitationHandler: person.handler})

	if res := call(t, ctx, cs, "add_note", map[string]any{"text": "one"}); res.IsError || text(res) != "added one" {
		t.Fatalf("the approved write: %s", text(res))
	}
	if got := person.prompts(); len(got) != 1 || !strings.Contains(got[0], "Confirm this call to notes.add_note?") || !strings.Contains(got[0], `{"text":"one"}`) {
		t.Fatalf("asked %q; want one confirmation of the exact call", got)
	}
	ids := g.approvalIDs()
	if len(ids) != 1 {
		t.Fatalf("approval requests in the log: %q", ids)
	}
	if out := g.useAgain(t, ids[0], "one"); !strings.Contains(out, "ConfirmationUnavailable") || !strings.Contains(out, "already used") {
		t.Errorf("the used approval, again from eval:\n%s", out)
	}

	person.approve = false
	if res := call(t, ctx, cs, "add_note", map[string]any{"text": "two"}); !res.IsError || refusal(res) != "ConfirmationDeclined" {
		t.Errorf("the declined write: %s", text(res))
	}

	// The server asks its own question about a write the proxy asks about:
	// the proxy's confirmation, the server's question, and the proxy's
	// again for the retry that carries the server's answer.
	person.approve = true
	if res := call(t, ctx, cs, "clear_notes", map[string]any{}); res.IsError || text(res) != "cleared" {
		t.Errorf("clear_notes: %s", text(res))
	}
	if got := summary(person.prompts()[2:]); strings.Join(got, "|") != "Confirm this call to notes.clear_notes?|Delete every note?|Confirm this call to notes.clear_notes?" {
		t.Errorf("asked %q", got)
	}
	if got := g.notes(t); got != "" {
		t.Errorf("notes after clear_notes = %q", got)
	}

	// A client that handles input_required itself replays and alters its
	// retries.
	manual := g.connectAt(t, ctx, "2026-07-28", &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: person.handler})
	yes := mcp.InputResponseMap{"mcpx-policy/confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
	ask := func(note string) string {
		res := call(t, ctx, manual, "add_note", map[string]any{"text": note})
		if !res.NeedsInput() || !strings.HasPrefix(res.RequestState, "mcpx-policy/") {
			t.Fatalf("add_note %s: %+v; want input_required", note, res)
		}
		return res.RequestState
	}
	retry := func(note, state string) *mcp.CallToolResult {
		res, err := manual.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"text": note}, InputResponses: yes, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	state := ask("three")
	if res := retry("three", state); res.IsError || text(res) != "added three" {
		t.Fatalf("the approved retry: %s", text(res))
	}
	if res := retry("three", state); refusal(res) != "ConfirmationUnavailable" {
		t.Errorf("the replayed retry: %s; want it refused", text(res))
	}
	state = ask("four")
	if res := retry("FOUR", state); refusal(res) != "ConfirmationUnavailable" {
		t.Errorf("the altered retry: %s; want it refused", text(res))
	}
	if got := g.notes(t); got != "three\n" {
		t.Errorf("notes = %q; want only the approved writes since the clear", got)
	}
}

// TestE2EAskElicitation: on protocol 2025-11-25 the ask reaches the person
// as elicitation/create; approved, the write runs once and its approval
// cannot be used again; declined, it does not run. The server's own
// question passes through as its elicitation/create.
func TestE2EAskElicitation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	g := newNotesGate(t)
	person := &answers{approve: true}
	cs := g.connectAt(t, ctx, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: person.handler})

	if res := call(t, ctx, cs, "add_note", map[string]any{"text": "one"}); res.IsError || text(res) != "added one" {
		t.Fatalf("the approved write: %s", text(res))
	}
	ids := g.approvalIDs()
	if len(ids) != 1 {
		t.Fatalf("approval requests in the log: %q", ids)
	}
	if out := g.useAgain(t, ids[0], "one"); !strings.Contains(out, "ConfirmationUnavailable") || !strings.Contains(out, "already used") {
		t.Errorf("the used approval, again from eval:\n%s", out)
	}
	if out := g.useAgain(t, ids[0], "altered"); !strings.Contains(out, "ConfirmationUnavailable") {
		t.Errorf("the used approval for another call:\n%s", out)
	}
	person.approve = false
	if res := call(t, ctx, cs, "add_note", map[string]any{"text": "two"}); refusal(res) != "ConfirmationDeclined" {
		t.Errorf("the declined write: %s", text(res))
	}
	person.approve = true
	if res := call(t, ctx, cs, "clear_notes", map[string]any{}); res.IsError || text(res) != "cleared" {
		t.Errorf("clear_notes: %s", text(res))
	}
	if got := summary(person.prompts()); strings.Join(got, "|") != "Confirm this call to notes.add_note?|Confirm this call to notes.add_note?|Confirm this call to notes.clear_notes?|Delete every note?" {
		t.Errorf("asked %q", got)
	}
	if res := call(t, ctx, cs, "add_note", map[string]any{"text": "three"}); res.IsError {
		t.Fatalf("a write after the clear: %s", text(res))
	}
	if got := g.notes(t); got != "three\n" {
		t.Errorf("notes = %q", got)
	}
}
