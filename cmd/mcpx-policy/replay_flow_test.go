package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

const replayFlowConfig = `version: 1
policy:
  write: allow
pool:
  labels:
    - {label: untrusted-input, tools: [fetch]}
    - {label: egress, tools: [send]}
  flows:
    - {id: ask-after-untrusted, after: [untrusted-input], calls: [egress], then: ask}
`

// TestReplayReproducesDataFlowDecisions: calls recorded from two sessions
// of one caller (and one of another caller with the same session name)
// replay to the decisions they were recorded with — the send after a
// fetch in its own session asks, the others pass — because each record
// keeps the session it was decided in. Under a config without the rule
// the ask shows as the one change.
func TestReplayReproducesDataFlowDecisions(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(cfg, []byte(replayFlowConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(dir, "loose.yaml")
	if err := os.WriteFile(loose, []byte(strings.Split(replayFlowConfig, "  flows:")[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: []string{cfg}, Env: []string{}, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rec, err := mcpxpolicy.OpenRecorder(mcpxpolicy.RecorderOptions{Dir: filepath.Join(dir, "rec")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{}
	for _, c := range []struct{ caller, session, tool, outcome string }{
		{"daemon:10.0.0.1", "s1", "fetch", "allow"},
		{"daemon:10.0.0.1", "s2", "send", "allow"},
		{"daemon:10.0.0.2", "s1", "send", "allow"},
		{"daemon:10.0.0.1", "s1", "send", "ask"},
		{"daemon:10.0.0.1", "s2", "send", "allow"},
	} {
		doc, _ := json.Marshal(map[string]any{"server": "web", "session": c.session, "args": map[string]any{},
			"tool": map[string]any{"name": c.tool, "annotations": map[string]any{"readOnlyHint": c.tool == "fetch"}}})
		ans := eng.Answer(ctx, doc, mcpxpolicy.AnswerOptions{DefaultSurface: mcpxpolicy.SurfaceDaemon, Caller: c.caller})
		if got := string(ans.Decision.Decision().Outcome); got != c.outcome {
			t.Fatalf("%+v decided %s live", c, got)
		}
		if err := rec.Record(ans.Call, ans.Decision, eng.Revision(), c.outcome == "allow", false); err != nil {
			t.Fatal(err)
		}
		want = append(want, c.outcome)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"replay", "--config", cfg, filepath.Join(dir, "rec")}, &stdout, &stderr); code != 0 {
		t.Fatalf("replay exited %d: %s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "replayed 5 calls: 0 decided differently") {
		t.Errorf("replay: %s", stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"replay", "--config", cfg, "--against", loose, filepath.Join(dir, "rec")}, &stdout, &stderr); code != exitFound ||
		!strings.Contains(stdout.String(), "replayed 5 calls: 1 decided differently") || !strings.Contains(stdout.String(), "web.send: ask (flow FlowNeedsConfirmation) -> allow") {
		t.Errorf("replay --against a config without the rule exited %d: %s", code, stdout.String())
	}
}
