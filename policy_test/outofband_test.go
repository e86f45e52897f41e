package policy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// Asks completed out of band through the public SDK: a surface that
// cannot ask holds the ask (DecideApproved with no id), a person answers it
// (Approvals), and the same call, decided again and held again, finds the
// answer — once.

// oobEngine is an Engine on askConfig (reloadable, in dir) with the
// approvals page at page, telling told of each new request.
func oobEngine(t *testing.T, dir, page string, told func(decision.ApprovalRequest, decision.Decision)) *mcpxpolicy.Engine {
	t.Helper()
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{
		ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")}, Env: []string{}, StateDir: filepath.Join(dir, "state"),
		ApprovalsPage: page, OnApprovalRequest: told,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// held decides call and holds its ask out of band, requiring the held
// refusal; it returns the request it names.
func held(t *testing.T, eng *mcpxpolicy.Engine, call decision.Call) (decision.Decision, decision.ApprovalRequest) {
	t.Helper()
	d, err := eng.DecideApproved(context.Background(), call, "")
	if !errors.Is(err, mcpxpolicy.ErrApprovalPending) || !errors.Is(err, mcpxpolicy.ErrApprovalRefused) {
		t.Fatalf("DecideApproved(\"\") error = %v; want ErrApprovalPending (and ErrApprovalRefused)", err)
	}
	id, _ := d.First().Details["approval"].(string)
	req, gerr := eng.Approvals().Get(id)
	if d.Outcome != decision.Deny || d.First().Code != decision.ConfirmationUnavailable || gerr != nil || req.State != decision.ApprovalPending {
		t.Fatalf("DecideApproved(\"\") = %s %s, request %q %+v (%v); want a ConfirmationUnavailable deny naming a pending request", d.Outcome, d.First().Code, id, req, gerr)
	}
	return d, req
}

// usedOnce holds call's ask out of band and requires the allow of an
// approval a person gave out of band, for request id.
func usedOnce(t *testing.T, eng *mcpxpolicy.Engine, call decision.Call, id string) {
	t.Helper()
	d, err := eng.DecideApproved(context.Background(), call, "")
	if err != nil || d.Outcome != decision.Allow {
		t.Fatalf("DecideApproved(\"\") after the approval = %s %s, %v; want the allow of %s", d.Outcome, d.First().Code, err, id)
	}
	if _, err := eng.Approvals().Get(id); !errors.Is(err, mcpxpolicy.ErrNotFound) {
		t.Fatalf("approval %s after its use: %v; want it spent (ErrNotFound)", id, err)
	}
	if !slices.Contains(codes(d.Reasons), decision.WriteNeedsConfirmation) {
		t.Errorf("the allow does not keep the reason it was asked for: %v", codes(d.Reasons))
	}
}

// TestOutOfBandRunsOnce: the refusal of a held ask names the request,
// the command that approves it (spelled for this state dir) and the page's
// link, and says the same call sent again then runs once; asked again
// before an answer it is the same request (one notification); approved,
// the same call is an allow exactly once, and the next one is asked anew.
func TestOutOfBandRunsOnce(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": askConfig})
	var told []decision.ApprovalRequest
	var toldHeld []decision.Decision
	var mu sync.Mutex
	eng := oobEngine(t, dir, "http://127.0.0.1:8181/approvals", func(r decision.ApprovalRequest, held decision.Decision) {
		mu.Lock()
		told = append(told, r)
		toldHeld = append(toldHeld, held)
		mu.Unlock()
	})
	call := askCall("/workspace/a")
	d, req := held(t, eng, call)
	first := d.First()
	approve := "mcpx-policy approve " + req.ID + " --sha256 " + req.SHA256 + " --state-dir " + filepath.Join(dir, "state")
	link := "http://127.0.0.1:8181/approvals/" + req.ID
	for _, s := range []string{req.ID, "`" + approve + "`", link, "sent again unchanged, runs once", "was not executed"} {
		if !strings.Contains(first.Message, s) {
			t.Errorf("the refusal's message lacks %q:\n%s", s, first.Message)
		}
	}
	if first.Details["approve"] != approve || first.Details["page"] != link || first.Details["approval"] != req.ID || first.Details["sha256"] != req.SHA256 {
		t.Errorf("details %v", first.Details)
	}
	if d.Reasons[1].Code != decision.WriteNeedsConfirmation {
		t.Errorf("the refusal does not keep the ask's reason: %v", codes(d.Reasons))
	}
	// The redacted refusal, as every surface shows it, keeps the command
	// runnable and the link whole.
	shown := mcpxpolicy.Redact(call, d).Decision().First()
	if shown.Details["approve"] != approve || !strings.Contains(shown.Message, approve) || !strings.Contains(shown.Message, link) {
		t.Errorf("redacted, the refusal lost the command or the link: %s %v", shown.Message, shown.Details)
	}

	for range 3 {
		_, again := held(t, eng, call)
		if again.ID != req.ID {
			t.Fatalf("asked again before an answer: request %s; want the one waiting, %s", again.ID, req.ID)
		}
	}
	if list, _ := eng.Approvals().List(); len(list) != 1 {
		t.Fatalf("%d requests for one call; want 1", len(list))
	}
	mu.Lock()
	if len(told) != 1 || told[0].ID != req.ID {
		t.Errorf("OnApprovalRequest was told %d times (%v); want once, of %s", len(told), told, req.ID)
	} else if toldHeld[0].First().Details["approve"] != approve || toldHeld[0].First().Details["page"] != link {
		t.Errorf("OnApprovalRequest's held refusal: %v", toldHeld[0].First().Details)
	}
	mu.Unlock()

	if _, err := eng.Approvals().Approve(req.ID, req.SHA256); err != nil {
		t.Fatal(err)
	}
	usedOnce(t, eng, call, req.ID)
	_, next := held(t, eng, call)
	if next.ID == req.ID {
		t.Fatal("the approval was used twice")
	}
}

// TestOutOfBandBoundToTheCall: an approval given out of band is used
// only by the call it was given for — not by other arguments, another
// principal, or a call decided by another config revision — and a
// decline is a ConfirmationDeclined deny, once.
func TestOutOfBandBoundToTheCall(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": askConfig})
	eng := oobEngine(t, dir, "", nil)
	alice := askCall("/workspace/a")
	alice.Principal = &decision.Principal{ID: "alice"}
	_, req := held(t, eng, alice)
	if _, err := eng.Approvals().Approve(req.ID, req.SHA256); err != nil {
		t.Fatal(err)
	}
	changes := map[string]func(c *decision.Call){
		"argument":  func(c *decision.Call) { c.Args["path"] = "/workspace/b" },
		"added":     func(c *decision.Call) { c.Args["mode"] = "0777" },
		"principal": func(c *decision.Call) { c.Principal = &decision.Principal{ID: "mallory"} },
		"no one":    func(c *decision.Call) { c.Principal = nil },
		"group":     func(c *decision.Call) { c.Principal = &decision.Principal{ID: "alice", Groups: []string{"admins"}} },
		"server":    func(c *decision.Call) { c.Server = "other" },
	}
	for name, change := range changes {
		c := askCall("/workspace/a")
		c.Principal = &decision.Principal{ID: "alice"}
		change(&c)
		if d, other := held(t, eng, c); other.ID == req.ID || d.Outcome == decision.Allow {
			t.Errorf("%s: the changed call used the approval", name)
		}
	}
	// Another revision: the approval is not this config's.
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(askConfig+"  third: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := eng.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, other := held(t, eng, alice); other.ID == req.ID {
		t.Error("a call decided by another config revision used the approval")
	}
	// The revision that asked: it is still there, unused, and runs once.
	if err := os.WriteFile(conf, []byte(askConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := eng.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	usedOnce(t, eng, alice, req.ID)

	// A decline: the same call is a ConfirmationDeclined deny, once.
	_, dreq := held(t, eng, alice)
	if _, err := eng.Approvals().Decline(dreq.ID); err != nil {
		t.Fatal(err)
	}
	d, err := eng.DecideApproved(context.Background(), alice, "")
	if d.Outcome != decision.Deny || d.First().Code != decision.ConfirmationDeclined || d.First().Details["approval"] != dreq.ID || !errors.Is(err, mcpxpolicy.ErrApprovalDeclined) {
		t.Fatalf("after a decline: %s %s, %v, %v; want ConfirmationDeclined of %s", d.Outcome, d.First().Code, d.First().Details, err, dreq.ID)
	}
	if _, again := held(t, eng, alice); again.ID == dreq.ID {
		t.Fatal("the decline was spent twice")
	}
}

// TestOutOfBandConcurrentRetriesOneWins: of many processes' worth of
// Engines retrying the same approved call at once, exactly one gets the
// allow.
func TestOutOfBandConcurrentRetriesOneWins(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": askConfig})
	engines := []*mcpxpolicy.Engine{oobEngine(t, dir, "", nil), oobEngine(t, dir, "", nil), oobEngine(t, dir, "", nil)}
	call := askCall("/workspace/a")
	_, req := held(t, engines[0], call)
	if _, err := engines[1].Approvals().Approve(req.ID, req.SHA256); err != nil {
		t.Fatal(err)
	}
	var allows atomic.Int32
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			eng := engines[i%len(engines)]
			out, _ := eng.DecideApproved(context.Background(), call, "")
			if out.Outcome == decision.Allow {
				allows.Add(1)
			} else if out.Outcome != decision.Deny {
				t.Errorf("retry %d: %s", i, out.Outcome)
			}
		}()
	}
	wg.Wait()
	if n := allows.Load(); n != 1 {
		t.Fatalf("%d retries were allowed; want exactly 1", n)
	}
}

// TestOutOfBandNeverAllowsWithoutAnApproval: a flood of different asks
// fills the store; past its cap an ask is a plain ConfirmationUnavailable
// deny (no request, no allow), and a request that is only pending never
// lets the call through.
func TestOutOfBandNeverAllowsWithoutAnApproval(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": askConfig})
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{
		ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")}, Env: []string{}, StateDir: filepath.Join(dir, "state"), MaxApprovals: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for i := range 5 {
		held(t, eng, askCall(fmt.Sprintf("/workspace/%d", i)))
	}
	call := askCall("/workspace/full")
	d, err := eng.DecideApproved(context.Background(), call, "")
	if !errors.Is(err, mcpxpolicy.ErrApprovalsFull) || d.Outcome != decision.Deny || d.First().Code != decision.ConfirmationUnavailable {
		t.Fatalf("past the cap: %s %s, %v; want a plain ConfirmationUnavailable and ErrApprovalsFull", d.Outcome, d.First().Code, err)
	}
	if _, ok := d.First().Details["approve"]; ok {
		t.Errorf("a refusal without a request names a command: %v", d.First().Details)
	}
	// Pending, the same call stays refused.
	if d, _ := held(t, eng, askCall("/workspace/0")); d.Outcome != decision.Deny {
		t.Fatal("a pending request let the call through")
	}
	// Not an ask: decided as Decide does, nothing is held.
	before, _ := eng.Approvals().List()
	read := decision.Call{Server: "fs", Tool: readFile, Surface: mcpxpolicy.SurfaceDaemon, Args: map[string]any{"path": "/x"}}
	if d, err := eng.DecideApproved(context.Background(), read, ""); err != nil || d.Outcome != decision.Allow {
		t.Fatalf("DecideApproved(\"\") of an allow: %s, %v; want the allow", d.Outcome, err)
	}
	if after, _ := eng.Approvals().List(); len(after) != len(before) {
		t.Fatalf("an allow opened a request: %d then %d", len(before), len(after))
	}
}
