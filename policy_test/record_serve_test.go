package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpx/mcpx-policy/internal/server"
)

// recordedFiles lists the recorded calls of dir (the *.json files), oldest
// first, with their total size; it fails the test on a file that is not
// 0600 or a dir that is not 0700.
func recordedFiles(t *testing.T, dir string) ([]string, int64) {
	t.Helper()
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("record dir mode %04o, want 0700", st.Mode().Perm())
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var total int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", e.Name(), info.Mode().Perm())
		}
		names = append(names, e.Name())
		total += info.Size()
	}
	sort.Strings(names)
	return names, total
}

// TestServeRecordsCallsForReplay runs the built binary's serve with
// --record: every decided call lands in the record dir as a 0600 call
// document with its decision, the arguments the setting names redacted;
// a record past the age cap is removed, and the oldest go to keep the
// directory under its size cap; what was recorded replays with the
// decisions it was recorded with, and a loosened config shows each change.
func TestServeRecordsCallsForReplay(t *testing.T) {
	t.Parallel()
	root, _ := filepath.Abs("..")
	config := filepath.Join(root, "examples", "mcpx-policy.yaml")
	secretCall := `{"server": "fs", "tool": {"name": "write_file", "annotations": {"readOnlyHint": false}},
	  "args": {"path": "/workspace/notes.md", "content": "the quarterly numbers", "api_token": "tok-9f8e7d6c5b4a3210"}}`
	cases := []struct {
		name     string
		redact   []string // --record-redact values; none: the default
		redacted []string // the values that must not reach the disk
		kept     []string // the values that must
	}{
		{"default: the secret table's key names", nil, []string{"tok-9f8e7d6c5b4a3210"}, []string{"the quarterly numbers", "/workspace/notes.md"}},
		{"secrets and the content", []string{"@secrets", "/content"}, []string{"tok-9f8e7d6c5b4a3210", "the quarterly numbers"}, []string{"/workspace/notes.md"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := writeFiles(t, map[string]string{"pr.yaml": "version: 1\nservers:\n  fs:\n    writePolicy: allow\n    unknownArgs: warn\n"})
			rec := filepath.Join(dir, "rec")
			if err := os.Mkdir(rec, 0o700); err != nil {
				t.Fatal(err)
			}
			// A record a month old, and a file the recorder did not write.
			old := time.Now().Add(-30*24*time.Hour).UTC().Format("20060102T150405.000000000Z") + "-00000000.json"
			for name, body := range map[string]string{old: "{}", "notes.txt": "mine"} {
				if err := os.WriteFile(filepath.Join(rec, name), []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			addr := freeLoopbackAddr(t)
			args := []string{"serve", "--config", config, "--state-dir", filepath.Join(dir, "state"), "--addr", addr, "--decision-log", "off",
				"--record", rec, "--record-max-age", "24h", "--record-max-bytes", "8KiB"}
			for _, r := range tc.redact {
				args = append(args, "--record-redact", r)
			}
			cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), args...)
			cmd.Env = cleanEnv()
			cmd.Stdout = io.Discard
			srv := startServe(t, cmd, addr)
			if _, err := os.Stat(filepath.Join(rec, old)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the month-old record is still there after serve started (age cap 24h): %v", err)
			}
			if _, err := os.Stat(filepath.Join(rec, "notes.txt")); err != nil {
				t.Errorf("a file the recorder did not write was touched: %v", err)
			}
			post := func(body []byte) {
				t.Helper()
				resp, err := http.Post(srv.base+"/v1/decide", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			calls, _ := filepath.Glob(filepath.Join(root, "examples", "calls", "*.json"))
			for _, c := range calls {
				b, err := os.ReadFile(c)
				if err != nil {
					t.Fatal(err)
				}
				post(b)
			}
			post([]byte(secretCall))
			names, _ := recordedFiles(t, rec)
			if len(names) != len(calls)+1 {
				t.Fatalf("%d records after %d calls: %v", len(names), len(calls)+1, names)
			}
			last, err := os.ReadFile(filepath.Join(rec, names[len(names)-1]))
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range tc.redacted {
				if bytes.Contains(last, []byte(v)) {
					t.Errorf("the record holds %q, which the setting redacts:\n%s", v, last)
				}
			}
			for _, v := range tc.kept {
				if !bytes.Contains(last, []byte(v)) {
					t.Errorf("the record lost %q, which the setting keeps:\n%s", v, last)
				}
			}
			if !bytes.Contains(last, []byte(`"outcome": "ask"`)) || !bytes.Contains(last, []byte(`"code": "WriteNeedsConfirmation"`)) {
				t.Errorf("the record lacks its decision:\n%s", last)
			}

			// What was recorded replays with the decisions it was recorded
			// with; a loosened config shows each change (exit 2).
			out, code := runBin(t, "replay", "--config", config, rec)
			if code != 0 || !strings.Contains(out, fmt.Sprintf("replayed %d calls: 0 decided differently (its recorded decision), 0 not comparable", len(names))) {
				t.Errorf("replay under the recording config: exit %d\n%s", code, out)
			}
			out, code = runBin(t, "replay", "--config", filepath.Join(dir, "pr.yaml"), rec)
			if code != 2 || !strings.Contains(out, "fs.write_file: ask (write_mode WriteNeedsConfirmation) -> allow") || !strings.Contains(out, "fs.move_file: deny (hidden HiddenTool) -> allow") {
				t.Errorf("replay under a loosened config: exit %d\n%s", code, out)
			}

			// The size cap: many more calls, and the directory stays under
			// 8 KiB, the oldest records gone first.
			first := names[0]
			for i := 0; i < 12; i++ {
				post([]byte(secretCall))
			}
			names, total := recordedFiles(t, rec)
			if total > 8<<10 {
				t.Errorf("the records hold %d bytes, above the 8 KiB cap", total)
			}
			if len(names) == 0 || names[0] <= first {
				t.Errorf("the oldest record %s is still there after the cap was reached: %v", first, names)
			}
			if _, err := os.Stat(filepath.Join(rec, "notes.txt")); err != nil {
				t.Errorf("a file the recorder did not write was removed: %v", err)
			}
		})
	}
}

// runBin runs the built binary and returns its stdout and stderr together
// and its exit code.
func runBin(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), args...)
	cmd.Env = append(cleanEnv(), "MCPX_POLICY_STATE_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

// runSplit runs the built binary with the test's environment and returns
// its stdout, its stderr and its exit code.
func runSplit(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), args...)
	cmd.Env = cleanEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// TestProxyRecordsCallsForReplay: proxy --record in front of a real MCP
// server writes every tools/call with the policy's decision (a hidden
// tool's too), the secret argument redacted; the recording replays. With
// --decision-log the proxy logs each decision as serve does: OPA's
// decision-log shape, the arguments as a hash only.
func TestProxyRecordsCallsForReplay(t *testing.T) {
	t.Parallel()
	fsServer := npmServer(t, "mcp-server-filesystem")
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(t.TempDir(), "rec")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	decisions := filepath.Join(t.TempDir(), "decisions.log")
	g := newGate(t, "fs", fsConfig(root), "--record", rec, "--decision-log", decisions)
	cs := connect(t, ctx, g.command(t, fsServer, root), nil)
	call(t, ctx, cs, "write_file", map[string]any{"path": filepath.Join(root, "outside.txt"), "content": "no"})
	call(t, ctx, cs, "write_file", map[string]any{"path": filepath.Join(root, "workspace", "a.txt"), "content": "yes"})
	call(t, ctx, cs, "read_text_file", map[string]any{"path": filepath.Join(root, "workspace", "a.txt"), "password": "hunter2-hunter2"})
	_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "move_file", Arguments: map[string]any{"source": "a", "destination": "b"}})
	cs.Close()

	names, _ := recordedFiles(t, rec)
	if len(names) != 4 {
		t.Fatalf("%d records, want 4 (every tools/call): %v", len(names), names)
	}
	var all []byte
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(rec, n))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	for _, want := range []string{`"code": "ArgumentRuleViolation"`, `"code": "HiddenTool"`, `"surface": "mcp"`, `"password": "[REDACTED]"`} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("the records lack %s", want)
		}
	}
	if bytes.Contains(all, []byte("hunter2")) {
		t.Errorf("a secret argument reached the disk")
	}
	out, code := runBin(t, "replay", "--config", g.config, rec)
	if code != 0 || !strings.Contains(out, "replayed 4 calls: 0 decided differently") {
		t.Errorf("replay of the proxy's recording: exit %d\n%s", code, out)
	}

	log, err := os.ReadFile(decisions)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d decision log lines, want 4 (every tools/call):\n%s", len(lines), log)
	}
	codes := map[string]bool{}
	for _, l := range lines {
		var e server.LogEntry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("a decision log line is not a LogEntry: %v\n%s", err, l)
		}
		if e.Path != "mcpx/decision" || e.RequestedBy != "proxy:fs" || e.Input.Server != "fs" || len(e.Input.ArgsSHA256) != 64 || e.DecisionID == "" {
			t.Errorf("decision log line %s", l)
		}
		for _, r := range e.Result.Reasons {
			codes[string(r.Code)] = true
		}
	}
	if !codes["ArgumentRuleViolation"] || !codes["HiddenTool"] {
		t.Errorf("the decision log lacks the deny codes: %v", codes)
	}
	for _, leak := range []string{"hunter2", `"content"`, `"args":`} {
		if strings.Contains(string(log), leak) {
			t.Errorf("the decision log holds %s:\n%s", leak, log)
		}
	}
}
