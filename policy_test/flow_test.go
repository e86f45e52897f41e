package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/metrics"
	"github.com/mcpx/mcpx-policy/internal/server"
)

// flowConfig labels three tools of every server — fetch reads untrusted
// content and can send data out, read_secrets holds private data,
// send_email sends data out — and has two flow rules: after untrusted
// input, a call that can send data out asks; after untrusted input and
// private data both, it is denied. Server "trial" runs in shadow mode.
const flowConfig = `version: 1
policy:
  write: allow
  unknownArgs: reject
pool:
  labels:
    - label: untrusted-input
      tools: [fetch]
    - label: egress
      tools: [fetch, send_email]
    - label: private-data
      tools: [read_secrets]
  flows:
    - id: ask-after-untrusted
      after: [untrusted-input]
      calls: [egress]
      then: ask
    - id: no-exfiltration
      after: [private-data, untrusted-input]
      calls: [egress]
      then: deny
servers:
  trial:
    enforce: shadow
`

func flowTool(name string) decision.Tool {
	return decision.Tool{Name: name, Annotations: &decision.Annotations{ReadOnlyHint: ptr(name != "send_email"), DestructiveHint: ptr(false)},
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}
}

func flowCall(server, caller, session, tool string) decision.Call {
	return decision.Call{Surface: mcpxpolicy.SurfaceDaemon, Server: server, Caller: caller, Session: session,
		Tool: flowTool(tool), Args: map[string]any{"q": "x"}}
}

// TestFlowRulesThroughTheSDK: a session remembers the labels of the calls
// it was let make, and flow rules judge its later calls by them — the
// first fetch passes, the send after it asks, the send after private data
// too is denied with both findings; another session, and the same session
// name from another caller, start clean; a refused call touches nothing;
// in shadow mode the call runs and the decision says what was refused.
func TestFlowRulesThroughTheSDK(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, flowConfig)
	defer eng.Close()
	want := func(c decision.Call, outcome decision.Outcome, codes ...decision.Code) decision.Decision {
		t.Helper()
		d := decide(t, eng, c)
		if d.Outcome != outcome || !equalCodes(d.Reasons, codes) {
			t.Fatalf("%s %s/%s: got %s %v, want %s %v", c.Tool.Name, c.Caller, c.Session, d.Outcome, codesOf(d.Reasons), outcome, codes)
		}
		return d
	}
	want(flowCall("web", "sdk:a", "s1", "send_email"), decision.Allow)
	want(flowCall("web", "sdk:a", "s1", "fetch"), decision.Allow) // touches untrusted-input (and egress, which no rule remembers)
	d := want(flowCall("web", "sdk:a", "s1", "send_email"), decision.Ask, decision.FlowNeedsConfirmation)
	if d.Step != decision.StepFlow || d.First().Details["flow"] != "ask-after-untrusted" {
		t.Errorf("ask: %+v", d)
	}
	want(flowCall("web", "sdk:a", "s1", "read_secrets"), decision.Allow)
	d = want(flowCall("web", "sdk:a", "s1", "send_email"), decision.Deny, decision.FlowDenied, decision.FlowNeedsConfirmation)
	if !bytes.Contains([]byte(d.First().Message), []byte("lifted only in a new session")) {
		t.Errorf("the deny does not say what lifts it: %q", d.First().Message)
	}
	// labels span servers: the session touched them on "web"
	want(flowCall("mail", "sdk:a", "s1", "send_email"), decision.Deny, decision.FlowDenied, decision.FlowNeedsConfirmation)
	// another session, and the same session name from another caller
	want(flowCall("web", "sdk:a", "s2", "send_email"), decision.Allow)
	want(flowCall("web", "sdk:b", "s1", "send_email"), decision.Allow)
	// a refused call touches nothing
	bad := flowCall("web", "sdk:c", "s1", "fetch")
	bad.Args = map[string]any{"qq": "x"}
	want(bad, decision.Deny, decision.UnknownArguments)
	want(flowCall("web", "sdk:c", "s1", "send_email"), decision.Allow)
	// shadow mode: the call goes ahead, the decision keeps the would-be refusal
	want(flowCall("trial", "sdk:d", "s1", "fetch"), decision.Allow)
	want(flowCall("trial", "sdk:d", "s1", "read_secrets"), decision.Allow)
	d = want(flowCall("trial", "sdk:d", "s1", "send_email"), decision.Allow)
	if !d.Relaxed() || d.Enforced().First().Code != decision.FlowDenied {
		t.Errorf("shadow: %+v", d.Enforced())
	}
}

// TestFlowRulesThroughServe: serve keys a session by its HTTP caller and
// the call document's "session"; the refusal is a 403 whose body names the
// rule and what lifts it, and the ask a 428 (held for a person); /metrics
// counts each rule's findings by its id.
func TestFlowRulesThroughServe(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": flowConfig})
	met := metrics.New(metrics.Options{})
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")},
		Env: []string{}, StateDir: filepath.Join(dir, "state"), Observer: met})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := httptest.NewServer(server.New(eng, server.Options{DecisionLog: io.Discard, Metrics: met}))
	defer srv.Close()
	post := func(session, tool string) (int, map[string]any) {
		t.Helper()
		doc := map[string]any{"server": "web", "tool": flowTool(tool), "args": map[string]any{"q": "x"}}
		if session != "" {
			doc["session"] = session
		}
		b, _ := json.Marshal(doc)
		resp, err := http.Post(srv.URL+"/v1/decide", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}
	for i, step := range []struct {
		session, tool string
		status        int
		code          string
	}{
		{"s1", "fetch", 200, ""},
		{"s1", "send_email", 428, "FlowNeedsConfirmation"},
		{"s2", "send_email", 200, ""},
		{"s1", "read_secrets", 200, ""},
		{"s1", "send_email", 403, "FlowDenied"},
		{"", "send_email", 200, ""},
	} {
		status, body := post(step.session, step.tool)
		raw, _ := json.Marshal(body)
		rendered, _ := body["rendered"].(map[string]any)
		if status != 200 || rendered["status"] != float64(step.status) || (step.code != "" && !bytes.Contains(raw, []byte(`"code":"`+step.code+`"`))) {
			t.Fatalf("step %d (%s %s): %d %s; want %d %s", i, step.session, step.tool, status, raw, step.status, step.code)
		}
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	exposition, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`mcpx_policy_policy_findings_total{id="ask-after-untrusted",kind="flow",outcome="ask",shadow="false"} 2`,
		`mcpx_policy_policy_findings_total{id="no-exfiltration",kind="flow",outcome="deny",shadow="false"} 1`,
	} {
		if !bytes.Contains(exposition, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func equalCodes(rs []decision.Reason, want []decision.Code) bool {
	got := codesOf(rs)
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func codesOf(rs []decision.Reason) []decision.Code {
	out := []decision.Code{}
	for _, r := range rs {
		out = append(out, r.Code)
	}
	return out
}
