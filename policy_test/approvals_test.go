package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// The approve-then-decide flow through the public SDK: an ask is put on
// hold (RequestApproval), answered (Approvals), and decided again with the
// approval (DecideApproved).

const askConfig = "version: 1\npolicy:\n  write: ask\nservers:\n  fs: {}\n  other: {}\n"

// approvalEngine opens an Engine on config (written to dir, reloadable)
// with the state dir state.
func approvalEngine(t *testing.T, dir, state string, ttl time.Duration) *mcpxpolicy.Engine {
	t.Helper()
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{
		ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")},
		Env:         []string{},
		StateDir:    state,
		ApprovalTTL: ttl,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return eng
}

func askCall(path string) decision.Call {
	return decision.Call{Server: "fs", Tool: writeFile, Surface: mcpxpolicy.SurfaceDaemon,
		Args: map[string]any{"path": path, "content": "hello"}}
}

// requestApproved decides call (an ask), opens a request and approves it
// with the sha256 of the prompt, as a person who saw it would.
func requestApproved(t *testing.T, eng *mcpxpolicy.Engine, call decision.Call) decision.ApprovalRequest {
	t.Helper()
	req := requestFor(t, eng, call)
	if _, err := eng.Approvals().Approve(req.ID, promptOf(t, req).SHA256); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	return req
}

func requestFor(t *testing.T, eng *mcpxpolicy.Engine, call decision.Call) decision.ApprovalRequest {
	t.Helper()
	d := decide(t, eng, call)
	if d.Outcome != decision.Ask {
		t.Fatalf("%s: %s, want an ask", call.Tool.Name, d.Outcome)
	}
	req, err := eng.RequestApproval(call, d)
	if err != nil {
		t.Fatalf("RequestApproval: %v", err)
	}
	return req
}

// refused requires DecideApproved to give a deny with code and an error
// matching want.
func refused(t *testing.T, eng *mcpxpolicy.Engine, call decision.Call, id string, code decision.Code, want error) decision.Decision {
	t.Helper()
	d, err := eng.DecideApproved(context.Background(), call, id)
	if d.Outcome != decision.Deny || d.First().Code != code {
		t.Fatalf("DecideApproved = %s %s (%v), want a %s deny", d.Outcome, d.First().Code, err, code)
	}
	if !errors.Is(err, want) {
		t.Fatalf("DecideApproved error = %v, want %v", err, want)
	}
	return d
}

func approvedAllow(t *testing.T, eng *mcpxpolicy.Engine, call decision.Call, id string) {
	t.Helper()
	d, err := eng.DecideApproved(context.Background(), call, id)
	if err != nil || d.Outcome != decision.Allow {
		t.Fatalf("DecideApproved = %s %s, %v; want an allow", d.Outcome, d.First().Code, err)
	}
	if d.First().Code != decision.WriteNeedsConfirmation {
		t.Errorf("the approved allow does not keep the reason it was asked for: %+v", d.Reasons)
	}
}

// TestApprovalUsedOnceThroughTheSDK: an approved ask is an allow once; the
// replay is a ConfirmationUnavailable deny that names the approval.
func TestApprovalUsedOnceThroughTheSDK(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, askConfig)
	call := askCall("/workspace/a")
	req := requestApproved(t, eng, call)
	if req.State != decision.ApprovalPending || req.Server != "fs" || req.Tool != "write_file" || req.Surface != "daemon" ||
		req.SHA256 != decide(t, eng, call).Call.SHA256 || !req.Expires.Equal(req.Created.Add(mcpxpolicy.DefaultApprovalTTL)) {
		t.Fatalf("request = %+v", req)
	}
	approvedAllow(t, eng, call, req.ID)
	d := refused(t, eng, call, req.ID, decision.ConfirmationUnavailable, mcpxpolicy.ErrNotFound)
	if r := d.First(); r.Details["approval"] != req.ID || !strings.Contains(r.Message, "approval "+req.ID+" cannot be used") {
		t.Fatalf("the replay's reason does not name the approval: %+v", r)
	}
	if d.Call.SHA256 != req.SHA256 {
		t.Fatalf("the deny is for %s, not the call", d.Call.SHA256)
	}
}

// TestApprovalForChangedCallRefused: an approval does not pass a call
// whose arguments, tool, server or principal differ, and such a call
// voids it.
func TestApprovalForChangedCallRefused(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, askConfig)
	changes := map[string]func(c *decision.Call){
		"argument":       func(c *decision.Call) { c.Args["path"] = "/workspace/b" },
		"added-argument": func(c *decision.Call) { c.Args["mode"] = "0777" },
		"server":         func(c *decision.Call) { c.Server = "other" },
		"tool": func(c *decision.Call) {
			c.Tool = decision.Tool{Name: "edit_file", Annotations: destructive, InputSchema: object("path", "content")}
		},
		"principal": func(c *decision.Call) { c.Principal = &decision.Principal{ID: "mallory"} },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			call := askCall("/workspace/a")
			req := requestApproved(t, eng, call)
			changed := askCall("/workspace/a")
			change(&changed)
			if decide(t, eng, changed).Outcome != decision.Ask {
				t.Fatal("the changed call is not an ask")
			}
			refused(t, eng, changed, req.ID, decision.ConfirmationUnavailable, mcpxpolicy.ErrMismatch)
			refused(t, eng, call, req.ID, decision.ConfirmationUnavailable, mcpxpolicy.ErrNotFound)
		})
	}
	t.Run("approver-saw-another-call", func(t *testing.T) {
		req := requestFor(t, eng, askCall("/workspace/a"))
		other := decide(t, eng, askCall("/workspace/b")).Call.SHA256
		if _, err := eng.Approvals().Approve(req.ID, other); !errors.Is(err, mcpxpolicy.ErrMismatch) {
			t.Fatalf("Approve with another call's sha256: %v, want ErrApprovalMismatch", err)
		}
		refused(t, eng, askCall("/workspace/a"), req.ID, decision.ConfirmationUnavailable, mcpxpolicy.ErrApprovalPending)
	})
}

// TestApprovalVoidWhenTheReasonsChange: an approval given for one reason
// to ask does not pass the call once the policy asks for another reason
// too (here the destructive floor turned on); a reload that leaves the
// call's reasons alone keeps it valid.
func TestApprovalVoidWhenTheReasonsChange(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": askConfig})
	eng := approvalEngine(t, dir, filepath.Join(dir, "state"), 0)
	call := askCall("/workspace/a")
	kept := requestApproved(t, eng, call)
	voided := requestApproved(t, eng, call)

	reload := func(config string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "mcpx-policy.yaml"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := eng.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	reload(askConfig + "  third: {writePolicy: deny}\n") // another server: the call's reasons are the same
	approvedAllow(t, eng, call, kept.ID)

	reload("version: 1\npolicy:\n  write: ask\n  confirmDestructive: true\n")
	if got := codes(decide(t, eng, call).Reasons); len(got) != 2 {
		t.Fatalf("reasons after the reload: %v, want two", got)
	}
	refused(t, eng, call, voided.ID, decision.ConfirmationUnavailable, mcpxpolicy.ErrMismatch)
}

// TestApprovalExpires: an approval used after its expiry is refused.
func TestApprovalExpires(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": askConfig})
	eng := approvalEngine(t, dir, filepath.Join(dir, "state"), 2*time.Second)
	call := askCall("/workspace/a")
	req := requestApproved(t, eng, call)
	if got := req.Expires.Sub(req.Created); got != 2*time.Second {
		t.Fatalf("the request lives %s, want the ApprovalTTL 2s", got)
	}
	time.Sleep(time.Until(req.Expires) + 50*time.Millisecond)
	refused(t, eng, call, req.ID, decision.ConfirmationUnavailable, mcpxpolicy.ErrApprovalExpired)
	if _, err := eng.Approvals().Approve(req.ID, req.SHA256); !errors.Is(err, mcpxpolicy.ErrNotFound) {
		t.Fatalf("approving the expired request: %v, want ErrApprovalUnknown", err)
	}
}

// TestApprovalAcrossEngines: a request made by one Engine is answered
// through OpenApprovals and used by a second Engine on the same state dir;
// the first Engine cannot use it again.
func TestApprovalAcrossEngines(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": askConfig})
	state := filepath.Join(dir, "state")
	first := approvalEngine(t, dir, state, 0)
	second := approvalEngine(t, dir, state, 0)
	call := askCall("/workspace/a")
	req := requestFor(t, first, call)

	person, err := mcpxpolicy.OpenApprovals(mcpxpolicy.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	list, err := person.List()
	if err != nil || len(list) != 1 || list[0].ID != req.ID || promptOf(t, list[0]).SHA256 != req.SHA256 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if _, err := person.Approve(req.ID, promptOf(t, list[0]).SHA256); err != nil {
		t.Fatal(err)
	}
	approvedAllow(t, second, call, req.ID)
	refused(t, first, call, req.ID, decision.ConfirmationUnavailable, mcpxpolicy.ErrNotFound)
	if list, _ := person.List(); len(list) != 0 {
		t.Fatalf("the used request is still listed: %+v", list)
	}
}

// TestApprovalNeverTurnsDenyIntoAllow: an approved ask that is a deny by
// the time it is decided again (an unknown-outcome write, a config that
// now denies writes) stays a deny, and the approval is spent.
func TestApprovalNeverTurnsDenyIntoAllow(t *testing.T) {
	t.Parallel()
	t.Run("ledger", func(t *testing.T) {
		t.Parallel()
		eng, _ := newEngine(t, askConfig)
		call := askCall("/workspace/a")
		req := requestApproved(t, eng, call)
		w, err := eng.Writes().Begin(askCall("/workspace/other"))
		if err != nil {
			t.Fatal(err)
		}
		w.Sent()
		w.Unknown("timeout")
		d, err := eng.DecideApproved(context.Background(), call, req.ID)
		if err != nil || d.Outcome != decision.Deny || d.First().Code != decision.UnknownOutcomePending {
			t.Fatalf("DecideApproved = %s %s, %v; want the UnknownOutcomePending deny", d.Outcome, d.First().Code, err)
		}
		if _, err := eng.Writes().Clear("fs", "", "checked"); err != nil {
			t.Fatal(err)
		}
		refused(t, eng, call, req.ID, decision.ConfirmationUnavailable, mcpxpolicy.ErrNotFound)
	})
	t.Run("config", func(t *testing.T) {
		t.Parallel()
		dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": askConfig})
		eng := approvalEngine(t, dir, filepath.Join(dir, "state"), 0)
		call := askCall("/workspace/a")
		req := requestApproved(t, eng, call)
		os.WriteFile(filepath.Join(dir, "mcpx-policy.yaml"), []byte("version: 1\npolicy:\n  write: deny\n"), 0o644)
		if err := eng.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		d, err := eng.DecideApproved(context.Background(), call, req.ID)
		if err != nil || d.Outcome != decision.Deny || d.First().Code != decision.WriteDenied {
			t.Fatalf("DecideApproved = %s %s, %v; want the WriteDenied deny", d.Outcome, d.First().Code, err)
		}
	})
	t.Run("not-an-ask", func(t *testing.T) {
		t.Parallel()
		eng, _ := newEngine(t, "version: 1\npolicy:\n  write: deny\n")
		call := askCall("/workspace/a")
		d := decide(t, eng, call)
		if _, err := eng.RequestApproval(call, d); !errors.Is(err, mcpxpolicy.ErrNotAsk) {
			t.Fatalf("RequestApproval for a deny: %v, want ErrNotAsk", err)
		}
		forged := d
		forged.Outcome = decision.Ask
		forged.Call.SHA256 = decide(t, eng, askCall("/workspace/b")).Call.SHA256
		if _, err := eng.RequestApproval(call, forged); err == nil {
			t.Fatal("RequestApproval accepted a decision made for another call")
		}
	})
}

// TestApprovalDeclinedAndPending: a declined request is a
// ConfirmationDeclined deny; an unanswered one is a ConfirmationUnavailable
// deny that stays usable once approved.
func TestApprovalDeclinedAndPending(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, askConfig)
	call := askCall("/workspace/a")

	req := requestFor(t, eng, call)
	refused(t, eng, call, req.ID, decision.ConfirmationUnavailable, mcpxpolicy.ErrApprovalPending)
	if _, err := eng.Approvals().Approve(req.ID, req.SHA256); err != nil {
		t.Fatal(err)
	}
	approvedAllow(t, eng, call, req.ID)

	req = requestFor(t, eng, call)
	if r, err := eng.Approvals().Decline(req.ID); err != nil || r.State != decision.ApprovalDeclined {
		t.Fatalf("Decline = %+v, %v", r, err)
	}
	if _, err := eng.Approvals().Approve(req.ID, req.SHA256); !errors.Is(err, mcpxpolicy.ErrApprovalDeclined) {
		t.Fatalf("approving after a decline: %v", err)
	}
	d := refused(t, eng, call, req.ID, decision.ConfirmationDeclined, mcpxpolicy.ErrApprovalDeclined)
	if r, err := mcpxpolicy.Render(mcpxpolicy.SurfaceDaemon, call, mcpxpolicy.Redact(call, d)); err != nil || r.Status != 403 {
		t.Fatalf("a declined approval renders as %d (%v), want 403", r.Status, err)
	}
}

// TestConcurrentApprovedDecisionsOneWins: Engines on one state dir decide
// the approved call at the same moment with the same approval: exactly one
// gets the allow.
func TestConcurrentApprovedDecisionsOneWins(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": askConfig})
	state := filepath.Join(dir, "state")
	engines := make([]*mcpxpolicy.Engine, 8)
	for i := range engines {
		engines[i] = approvalEngine(t, dir, state, 0)
	}
	call := askCall("/workspace/a")
	for round := range 3 {
		req := requestApproved(t, engines[0], call)
		var mu sync.Mutex
		allows, unknown := 0, 0
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, eng := range engines {
			for range 2 {
				wg.Go(func() {
					<-start
					d, err := eng.DecideApproved(context.Background(), call, req.ID)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case d.Outcome == decision.Allow && err == nil:
						allows++
					case d.Outcome == decision.Deny && errors.Is(err, mcpxpolicy.ErrNotFound):
						unknown++
					default:
						t.Errorf("DecideApproved = %s, %v", d.Outcome, err)
					}
				})
			}
		}
		close(start)
		wg.Wait()
		if allows != 1 || unknown != 2*len(engines)-1 {
			t.Fatalf("round %d: %d allows and %d refusals, want 1 and %d", round, allows, unknown, 2*len(engines)-1)
		}
	}
}

// TestApprovalStoreHoldsNoSecret: approvals.json is private and holds the
// call's sha256 and the redacted prompt, never a secret argument.
func TestApprovalStoreHoldsNoSecret(t *testing.T) {
	t.Parallel()
	eng, dir := newEngine(t, askConfig)
	const secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	call := askCall("/workspace/a")
	call.Args["content"] = "token=" + secret
	req := requestFor(t, eng, call)
	path := filepath.Join(dir, "state", "approvals.json")
	if eng.Approvals().Where() != path {
		t.Fatalf("Path = %s, want %s", eng.Approvals().Where(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) || strings.Contains(string(promptOf(t, req).Arguments), secret) {
		t.Fatalf("the secret is in the store: %s", b)
	}
	if !strings.Contains(string(b), req.SHA256) {
		t.Fatalf("the sha256 is not in the store: %s", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("approvals.json mode %o, want 600", st.Mode().Perm())
	}
}

// prompt is what a test reads of an approval request's prompt.
type prompt struct {
	SHA256    string          `json:"sha256"`
	Arguments json.RawMessage `json:"arguments"`
}

func promptOf(t *testing.T, req decision.ApprovalRequest) prompt {
	t.Helper()
	var p prompt
	if err := json.Unmarshal(req.Prompt, &p); err != nil {
		t.Fatalf("the prompt of %s does not read: %v", req.ID, err)
	}
	return p
}
