package policy_test

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// TestServeDecodesBodiesStrictly: serve decoded bodies with Go's
// case-insensitive, last-wins matching, so {"server":"fs","SERVER":"fs2"}
// on POST /v1/writes/clear cleared fs2's entries. Now a case variant or a
// duplicate key in any body is a 400 InvalidInput, and nothing is cleared
// or decided.
func TestServeDecodesBodiesStrictly(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"mcpx-policy.yaml": "version: 1\npolicy:\n  write: allow\n",
		"token":            "0123456789abcdef0123\n",
	})
	cfg, state := filepath.Join(dir, "mcpx-policy.yaml"), filepath.Join(dir, "state")
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{cfg}, Env: []string{}, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	for _, server := range []string{"fs", "fs2"} {
		w, err := eng.Writes().Begin(decision.Call{Server: server, Tool: writeFile, Args: map[string]any{"path": "/a"}, Surface: "mcp"})
		if err != nil {
			t.Fatal(err)
		}
		w.Sent()
		if err := w.Unknown("lost in the test"); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeLoopbackAddr(t)
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), "serve", "--config", cfg, "--state-dir", state,
		"--addr", addr, "--token-file", filepath.Join(dir, "token"))
	cmd.Env = cleanEnv()
	base := startServe(t, cmd, addr).base
	post := func(path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer 0123456789abcdef0123")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	listed := func() string {
		t.Helper()
		resp, err := http.Get(base + "/v1/writes")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	for _, body := range []string{
		`{"server":"fs","SERVER":"fs2"}`,
		`{"server":"fs","server":"fs2"}`,
		`{"Server":"fs2"}`,
		`{"server":"fs2","reason":"x"} {"server":"fs"}`,
	} {
		code, resp := post("/v1/writes/clear", body)
		if code != 400 || !strings.Contains(resp, `"code":"InvalidInput"`) {
			t.Errorf("clear %s: %d %s; want 400 InvalidInput", body, code, resp)
		}
	}
	if w := listed(); !strings.Contains(w, `"server":"fs"`) || !strings.Contains(w, `"server":"fs2"`) {
		t.Fatalf("after refused clears the ledger lists %s; want both entries", w)
	}
	if code, resp := post("/v1/writes/clear", `{"server":"fs2"}`); code != 200 || !strings.Contains(resp, `"server":"fs2"`) {
		t.Fatalf("a plain clear of fs2: %d %s", code, resp)
	}
	if w := listed(); !strings.Contains(w, `"server":"fs"`) || strings.Contains(w, `"server":"fs2"`) {
		t.Errorf("after clearing fs2 the ledger lists %s; want fs's entry only", w)
	}

	for _, body := range []string{
		`{"server":"fs3","tool":{"name":"write_file"},"args":{"path":"/etc/x"},"Args":{"path":"/ws/a"}}`,
		`{"server":"fs3","tool":{"name":"write_file"},"args":{"path":"/etc/x","path":"/ws/a"}}`,
		`{"server":"fs3","tool":{"name":"write_file","annotations":{"readOnlyHint":false,"ReadOnlyHint":true}},"args":{}}`,
		`{"server":"fs3","tool":{"Name":"read_file","name":"write_file"},"args":{}}`,
	} {
		code, resp := post("/v1/decide", body)
		if code != 400 || !strings.Contains(resp, `"outcome":"deny"`) || !strings.Contains(resp, `"code":"InvalidInput"`) {
			t.Errorf("decide %s: %d %s; want a 400 InvalidInput deny", body, code, resp)
		}
	}
}

// TestEvalDecodesCallFilesStrictly: a call file with a duplicate key or a
// case variant of a field is an input error (exit 1), not a decision on
// one of its readings; with --format json it prints an InvalidInput deny.
func TestEvalDecodesCallFilesStrictly(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"mcpx-policy.yaml": "version: 1\npolicy:\n  write: allow\n",
		"dup.json":         `{"server":"fs","tool":{"name":"write_file"},"args":{"path":"/ws/a","path":"/etc/x"}}`,
		"case.json":        `{"server":"fs","tool":{"name":"write_file","annotations":{"readOnlyHint":false,"ReadOnlyHint":true}},"args":{}}`,
	})
	cfg := filepath.Join(dir, "mcpx-policy.yaml")
	for file, want := range map[string]string{"dup.json": `duplicate key \"path\"`, "case.json": `key \"ReadOnlyHint\" is not \"readOnlyHint\"`} {
		code, stdout, stderr := cli(t, "eval", "--config", cfg, "--state-dir", filepath.Join(dir, "state"), "--format", "json", filepath.Join(dir, file))
		if code != 1 || !strings.Contains(stderr, "not a call file") || !strings.Contains(stdout, `"code":"InvalidInput"`) || !strings.Contains(stdout, want) {
			t.Errorf("eval %s: exit %d\nstdout %s\nstderr %s\nwant exit 1 and an InvalidInput deny saying %s", file, code, stdout, stderr, want)
		}
	}
}
