package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/redact"
)

// TestEvalRedactsEachAnswerOnce: eval redacts each call's decision once —
// in text and in JSON, for a deny, an ask it puts on hold, an allow and an
// unreadable call file — and prints only what it redacted. Not parallel:
// it reads the process's count of redactions.
func TestEvalRedactsEachAnswerOnce(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"mcpx-policy.yaml": "version: 1\npolicy:\n  write: ask\nservers:\n  fs:\n    hiddenTools: [\"move_*\"]\n",
		"deny.json":        `{"server": "fs", "tool": {"name": "move_file"}, "args": {"token": "ghp_16C7e42F292c6912E7710c838347Ae178B4a"}}`,
		"ask.json":         `{"server": "fs", "tool": {"name": "write_file", "annotations": {"readOnlyHint": false}}, "args": {"path": "/a"}}`,
		"allow.json":       `{"server": "fs", "tool": {"name": "read_file", "annotations": {"readOnlyHint": true}}, "args": {"path": "/a"}}`,
		"bad.json":         `{"server": "fs", "server": "git"}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	calls := []string{"deny.json", "ask.json", "allow.json", "bad.json"}
	for _, format := range []string{"text", "json"} {
		args := []string{"eval", "--config", filepath.Join(dir, "mcpx-policy.yaml"), "--state-dir", filepath.Join(dir, "state"), "--format", format}
		for _, c := range calls {
			args = append(args, filepath.Join(dir, c))
		}
		var out, errb bytes.Buffer
		before := redact.Count()
		run(args, &out, &errb)
		if n := redact.Count() - before; n != uint64(len(calls)) {
			t.Errorf("--format %s: %d redactions for %d calls; want one per answer\n%s%s", format, n, len(calls), out.String(), errb.String())
		}
		if bytes.Contains(out.Bytes(), []byte("ghp_16C7e42F")) || bytes.Contains(errb.Bytes(), []byte("ghp_16C7e42F")) {
			t.Errorf("--format %s printed a secret of the arguments", format)
		}
	}
}
