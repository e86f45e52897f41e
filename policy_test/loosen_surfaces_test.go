package policy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger/pgtest"
)

// copyTree copies the files under src (relative names) into a new temp
// dir, each 0600, and returns it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		to := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEveryLooseningOnEverySurface: the config internal/config generates
// from the field declarations (testdata/loosen-every-field: a first file
// strict in every field a file can set, a conf.d file loosening each one,
// the ledger pointed from one variable to another; TestEveryLooseningAtOnce
// keeps it in step with the declarations) is loaded by the built binary,
// and every loosening the load finds is reported on every surface: by
// `check`, in serve's log at start, in /readyz, in the warnings of a
// decision on the server, and in the decision log line of that decision.
func TestEveryLooseningOnEverySurface(t *testing.T) {
	t.Parallel()
	src := filepath.Join("testdata", "loosen-every-field")
	want, err := os.ReadFile(filepath.Join(src, "warnings.txt"))
	if err != nil {
		t.Fatal(err)
	}
	warnings := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	dir := copyTree(t, src)
	os.Remove(filepath.Join(dir, "warnings.txt"))
	dsn := pgtest.DSN(t)
	env := []string{"LEDGER_A=" + dsn, "LEDGER_B=" + dsn}

	// check
	code, stdout, stderr := cliEnvIn(t, dir, env, "check", "--config", "mcpx-policy.yaml")
	if code != 0 {
		t.Fatalf("check: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, w := range warnings {
		if !strings.Contains(stderr, "mcpx-policy: warning: "+w+"\n") {
			t.Errorf("check does not say %q:\n%s", w, stderr)
		}
	}
	if n := strings.Count(stderr, "mcpx-policy: warning: "); n != len(warnings) {
		t.Errorf("check says %d warnings; want the %d loosenings:\n%s", n, len(warnings), stderr)
	}

	// serve: its log at start, /readyz, a decision and its log line
	addr := freeLoopbackAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	logFile := filepath.Join(dir, "decisions.log")
	cmd := underLimits(t, exec.CommandContext(ctx, filepath.Join(binDir, "mcpx-policy"), "serve", "--addr", addr,
		"--config", "mcpx-policy.yaml", "--state-dir", filepath.Join(dir, "state"), "--decision-log", logFile))
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	srv := startServe(t, cmd, addr)
	for _, w := range warnings {
		if !strings.Contains(srv.stderr.String(), "mcpx-policy: warning: "+w+"\n") {
			t.Errorf("serve's log does not say %q:\n%s", w, srv.stderr.String())
		}
	}
	resp, err := http.Get(srv.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var ready struct {
		Status   string            `json:"status"`
		Checks   map[string]string `json:"checks"`
		Warnings []string          `json:"warnings"`
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(b, &ready); err != nil || resp.StatusCode != 200 || !slices.Equal(ready.Warnings, warnings) ||
		!strings.HasPrefix(ready.Checks["config"], fmt.Sprintf("%d warning(s)", len(warnings))) {
		t.Errorf("/readyz = %d %s; want ready, listing the %d loosenings", resp.StatusCode, b, len(warnings))
	}
	status, _, body := srv.post(t, "/v1/decide", `{"server": "fs", "tool": {"name": "read_file", "annotations": {"readOnlyHint": true}, "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}, "args": {"path": "/a"}}`)
	var d struct {
		Outcome  string `json:"outcome"`
		Warnings []struct {
			Code, Message string
		} `json:"warnings"`
	}
	if err := json.Unmarshal(body, &d); err != nil || status != 200 {
		t.Fatalf("decide: %d %s", status, body)
	}
	var got []string
	for _, w := range d.Warnings {
		if w.Code == "ConfigLoosened" {
			got = append(got, w.Message)
		}
	}
	if !slices.Equal(got, warnings) {
		t.Errorf("the decision's ConfigLoosened warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(warnings, "\n"))
	}
	f, err := os.Open(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	var entry struct {
		Result struct {
			Warnings []struct{ Code string } `json:"warnings"`
		} `json:"result"`
	}
	n := 0
	if err := json.Unmarshal([]byte(line), &entry); err == nil {
		for _, w := range entry.Result.Warnings {
			if w.Code == "ConfigLoosened" {
				n++
			}
		}
	}
	if n != len(warnings) {
		t.Errorf("the decision log line has %d ConfigLoosened warnings; want %d: %s", n, len(warnings), line)
	}
}
