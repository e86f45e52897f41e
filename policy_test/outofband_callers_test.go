package policy_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// TestOutOfBandAsksAreEachCallers: two callers (two proxy sessions) hold
// the identical ask out of band. Each gets a request of its own, counted
// against its own quota; a person approving the first caller's request
// lets the first caller's call run once and not the second's, which stays
// held for its own answer.
func TestOutOfBandAsksAreEachCallers(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": askConfig})
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{
		ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")}, Env: []string{}, StateDir: filepath.Join(dir, "state"),
		MaxApprovalsPerCaller: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	callA, callB := askCall("/workspace/a"), askCall("/workspace/a")
	callA.Caller, callB.Caller = "mcp:session-a", "mcp:session-b"

	_, reqA := held(t, eng, callA)
	_, reqB := held(t, eng, callB)
	if reqB.ID == reqA.ID || reqA.Caller != "mcp:session-a" || reqB.Caller != "mcp:session-b" {
		t.Fatalf("the identical asks of two callers: %s (%s) and %s (%s); want a request each", reqA.ID, reqA.Caller, reqB.ID, reqB.Caller)
	}
	// each caller's one place is taken by its own request
	for _, c := range []decision.Call{callA, callB} {
		other := askCall("/workspace/other")
		other.Caller = c.Caller
		if d, err := eng.DecideApproved(context.Background(), other, ""); !errors.Is(err, mcpxpolicy.ErrApprovalsFull) || d.Outcome != decision.Deny {
			t.Fatalf("%s's second ask with a quota of 1: %s, %v; want a deny, its quota full", c.Caller, d.Outcome, err)
		}
	}

	if _, err := eng.Approvals().Approve(reqA.ID, reqA.SHA256); err != nil {
		t.Fatal(err)
	}
	if _, again := held(t, eng, callB); again.ID != reqB.ID {
		t.Fatalf("the second caller's ask after the first's approval: request %s; want its own, %s, still held", again.ID, reqB.ID)
	}
	usedOnce(t, eng, callA, reqA.ID)
	if got, err := eng.Approvals().Get(reqB.ID); err != nil || got.State != decision.ApprovalPending {
		t.Fatalf("the second caller's request after the first's use: %+v, %v; want pending", got, err)
	}
}
