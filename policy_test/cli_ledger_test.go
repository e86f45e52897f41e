package policy_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// cli runs the built binary and returns its exit code, stdout and stderr.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), args...)
	// mcpx-policy on the PATH, as for a person who installed it: the
	// commands it prints name it so
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "MCPX_POLICY_STATE_DIR=/nonexistent-use-the-flag")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// TestLedgerThroughTheCLI: a write lost by a daemon (through the SDK) makes
// `eval` deny further writes with the exact clear command; `writes` lists
// it; `writes clear` clears it; the write is decided normally again.
func TestLedgerThroughTheCLI(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"mcpx-policy.yaml": "version: 1\npolicy:\n  write: allow\n",
		"write.json":       `{"server": "fs", "tool": {"name": "write_file", "annotations": {"readOnlyHint": false}}, "args": {"path": "/a"}}`,
		"read.json":        `{"server": "fs", "tool": {"name": "read_file", "annotations": {"readOnlyHint": true}}, "args": {"path": "/a"}}`,
	})
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "mcpx-policy.yaml")
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{cfg}, Env: []string{}, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	w, err := eng.Writes().Begin(decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/a"}, Surface: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	w.Sent()
	if err := w.Unknown("server exited"); err != nil {
		t.Fatal(err)
	}

	code, _, stderr := cli(t, "eval", "--config", cfg, "--state-dir", state, filepath.Join(dir, "write.json"))
	if code != 2 || !strings.Contains(stderr, "UnknownOutcomePending") || !strings.Contains(stderr, "mcpx-policy writes clear fs") {
		t.Fatalf("eval of a write after a lost one: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := cli(t, "eval", "--config", cfg, "--state-dir", state, filepath.Join(dir, "read.json")); code != 0 {
		t.Fatalf("eval of a read after a lost write: exit %d\n%s", code, stderr)
	}
	code, stdout, _ := cli(t, "writes", "--state-dir", state)
	if code != 0 || !strings.Contains(stdout, w.ID) || !strings.Contains(stdout, "write_file") {
		t.Fatalf("writes: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := cli(t, "writes", "clear", "fs", "--id", w.ID, "--reason", "checked by hand", "--state-dir", state); code != 0 {
		t.Fatalf("writes clear: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := cli(t, "eval", "--config", cfg, "--state-dir", state, filepath.Join(dir, "write.json")); code != 0 {
		t.Fatalf("eval after clear: exit %d\n%s", code, stderr)
	}
	code, stdout, _ = cli(t, "writes", "--state-dir", state, "--format", "json")
	if code != 0 || !strings.Contains(stdout, `"reason": "checked by hand"`) {
		t.Fatalf("cleared entry not kept: %s", stdout)
	}
}
