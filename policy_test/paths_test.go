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
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// The quick start's rule (README.md, step 1) must mean what it says on
// every surface: the tricks that fooled a regular-expression prefix are
// denied, the path that is inside stays allowed.

// workspaceTricks are paths outside /workspace, or read as outside, that
// a prefix check lets through: the six and more of ours.
var workspaceTricks = []string{
	"/workspace/../etc/cron.d/x",
	"/workspace/./../etc/passwd",
	"/workspace//../etc/passwd",
	"/workspace/a/../../etc/passwd",
	"/workspace/..",
	"/workspace-evil/x",
	"//workspace/x",
	"/workspace/x\x00.md",
	"workspace/notes.md",
	`/workspace\..\etc\passwd`,
	"C:/workspace/x",
}

const workspaceInside = "/workspace/notes.md"

// readmeBlock returns the fenced block that follows the doc-test marker
// marker in README.md, without the list's indentation.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "<!-- doc-test: "+marker+" -->")
	if !ok {
		t.Fatalf("README.md has no %q block", marker)
	}
	lines := strings.Split(after, "\n")
	var body []string
	in := false
	for _, l := range lines[1:] {
		l = strings.TrimPrefix(l, "   ")
		if strings.HasPrefix(l, "```") {
			if in {
				break
			}
			in = true
			continue
		}
		if in {
			body = append(body, l)
		}
	}
	return strings.Join(body, "\n") + "\n"
}

// quickStart writes README.md's quick-start config, with writes allowed so
// that the argument rule alone stands between a call and the server (as the
// issue that found the hole tried it), and returns its path and the tool of
// README.md's call.json.
func quickStart(t *testing.T) (config string, tool decision.Tool) {
	t.Helper()
	cfg := readmeBlock(t, "file mcpx-policy.yaml")
	if !strings.Contains(cfg, "write: ask") || !strings.Contains(cfg, "fs-writes-in-workspace") {
		t.Fatalf("README.md's quick-start config changed shape:\n%s", cfg)
	}
	cfg = strings.Replace(cfg, "write: ask", "write: allow", 1)
	var call struct {
		Tool decision.Tool `json:"tool"`
	}
	if err := json.Unmarshal([]byte(readmeBlock(t, "file call.json")), &call); err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": cfg})
	return filepath.Join(dir, "mcpx-policy.yaml"), call.Tool
}

// checkWorkspaceDecision holds one surface's decision (decoded JSON) on
// the write of p: allowed for the path inside, else an argument-rule deny
// whose violation names the root and, for a path the standard library
// cleans, where it resolves.
func checkWorkspaceDecision(t *testing.T, surface, p string, d map[string]any) {
	t.Helper()
	if p == workspaceInside {
		if d["outcome"] != "allow" {
			t.Errorf("%s: %q is %v, want allow: %v", surface, p, d["outcome"], d["reasons"])
		}
		return
	}
	reasons, _ := d["reasons"].([]any)
	if d["outcome"] != "deny" || d["step"] != "argument_rules" || len(reasons) == 0 {
		t.Errorf("%s: %q is %v at step %v, want an argument-rule deny: %v", surface, p, d["outcome"], d["step"], d["reasons"])
		return
	}
	r, _ := reasons[0].(map[string]any)
	vs, _ := r["violations"].([]any)
	if r["code"] != "ArgumentRuleViolation" || len(vs) != 1 {
		t.Errorf("%s: %q: first reason %v", surface, p, r)
		return
	}
	v, _ := vs[0].(map[string]any)
	detail, _ := v["detail"].(string)
	if exp, _ := json.Marshal(v["expected"]); v["path"] != "/path" || !strings.Contains(string(exp), `"/workspace"`) {
		t.Errorf("%s: %q: the violation does not name the root /workspace: %v", surface, p, v)
	}
	if strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") && !strings.ContainsAny(p, "\x00\\") {
		if clean := path.Clean(p); !strings.Contains(detail, "resolves to "+clean) {
			t.Errorf("%s: %q: the detail %q does not say it resolves to %s", surface, p, detail, clean)
		}
	}
}

// TestQuickStartRuleOnEverySurface decides the tricks and the path inside
// through the SDK, `eval`, `serve` and a stock OPA serving the bundle
// (the proxy: TestQuickStartRuleBeforeTheFilesystemServer).
func TestQuickStartRuleOnEverySurface(t *testing.T) {
	if testing.Short() {
		t.Skip("starts serve and a stock OPA server")
	}
	t.Parallel()
	config, tool := quickStart(t)
	dir := t.TempDir()
	paths := append([]string{workspaceInside}, workspaceTricks...)
	calls := make([]decision.Call, len(paths))
	files := make([]string, len(paths))
	for i, p := range paths {
		calls[i] = decision.Call{Server: "fs", Tool: tool, Args: map[string]any{"path": p, "content": "x"}}
		b, err := json.Marshal(calls[i])
		if err != nil {
			t.Fatal(err)
		}
		files[i] = filepath.Join(dir, fmt.Sprintf("call%d.json", i))
		if err := os.WriteFile(files[i], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := mcpxpolicy.Options{ConfigPaths: []string{config}, Env: []string{}, StateDir: filepath.Join(dir, "sdk-state")}
	eng, err := mcpxpolicy.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("sdk", func(t *testing.T) {
		for i, c := range calls {
			d, err := eng.Decide(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			checkWorkspaceDecision(t, "sdk", paths[i], generic(t, d).(map[string]any))
		}
	})

	t.Run("eval", func(t *testing.T) {
		cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), append([]string{"eval", "--config", config,
			"--state-dir", filepath.Join(dir, "eval-state"), "--format", "json"}, files...)...)
		cmd.Env = cleanEnv()
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("eval: %v, want exit status 2 (a deny among the calls)", err)
		}
		dec := json.NewDecoder(&stdout)
		for i := 0; ; i++ {
			var d map[string]any
			if err := dec.Decode(&d); err == io.EOF {
				if i != len(paths) {
					t.Fatalf("eval printed %d decisions for %d calls", i, len(paths))
				}
				break
			} else if err != nil {
				t.Fatal(err)
			}
			checkWorkspaceDecision(t, "eval", paths[i], d)
		}
	})

	t.Run("serve", func(t *testing.T) {
		addr := freeLoopbackAddr(t)
		cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), "serve", "--config", config,
			"--state-dir", filepath.Join(dir, "serve-state"), "--addr", addr, "--decision-log", "off")
		cmd.Env = cleanEnv()
		cmd.Stdout = io.Discard
		srv := startServe(t, cmd, addr)
		for i, c := range calls {
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Post(srv.base+"/v1/decide", "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var d map[string]any
			err = json.NewDecoder(resp.Body).Decode(&d)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("/v1/decide %q: %d %v", paths[i], resp.StatusCode, err)
			}
			checkWorkspaceDecision(t, "serve", paths[i], d)
		}
	})

	t.Run("stock OPA", func(t *testing.T) {
		tarball := filepath.Join(dir, "bundle.tar.gz")
		writeBundle(t, opts, tarball, nil)
		base := opaServer(t, tarball)
		for i, c := range calls {
			input, err := eng.OPAInput(c)
			if err != nil {
				t.Fatal(err)
			}
			status, result, raw := postDecision(t, base, input)
			if status != http.StatusOK || len(result) == 0 {
				t.Fatalf("opa on %q: %d %s", paths[i], status, raw)
			}
			var d map[string]any
			if err := json.Unmarshal(result, &d); err != nil {
				t.Fatal(err)
			}
			checkWorkspaceDecision(t, "stock OPA", paths[i], d)
			// and the whole document is the engine's
			want, err := eng.Decide(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := eng.ParseDecision(c, result)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := generic(t, got), generic(t, want); fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("%q: stock OPA decided %v, the engine %v", paths[i], g, w)
			}
		}
	})
}

// TestQuickStartRuleBeforeTheFilesystemServer puts the quick start's rule,
// its root moved into a temporary folder, in front of the reference
// filesystem server, which may write anywhere in that folder: every trick
// is refused by the gate and nothing lands outside the workspace, while
// the path inside is written.
func TestQuickStartRuleBeforeTheFilesystemServer(t *testing.T) {
	t.Parallel()
	fsServer := npmServer(t, "mcp-server-filesystem")
	config, _ := quickStart(t)
	root := t.TempDir()
	for _, d := range []string{"workspace/a", "workspace-evil", "etc/cron.d"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.ReplaceAll(string(cfg), "/workspace", root+"/workspace")
	if moved == string(cfg) {
		t.Fatalf("the quick-start config does not name /workspace:\n%s", cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	g := newGate(t, "fs", moved)
	cs := connect(t, ctx, g.command(t, fsServer, root), nil)
	for _, trick := range workspaceTricks[:6] {
		p := root + trick
		res := call(t, ctx, cs, "write_file", map[string]any{"path": p, "content": "pwned"})
		if code := refusal(res); code != "ArgumentRuleViolation" {
			t.Errorf("%s: refusal %q, want ArgumentRuleViolation (result %s)", p, code, text(res))
		}
		// (the temporary folder's name is redacted as high-entropy text:
		// compare from its last component on)
		tail := "/" + filepath.Base(root) + strings.TrimPrefix(path.Clean(p), root)
		if strings.HasPrefix(trick, "/workspace/") && trick != "/workspace/.." && (!strings.Contains(text(res), "it resolves to ") || !strings.Contains(text(res), tail+")")) {
			t.Errorf("%s: the refusal does not say where it resolves:\n%s", p, text(res))
		}
	}
	for _, outside := range []string{"etc/cron.d/x", "etc/passwd", "workspace-evil/x"} {
		if _, err := os.Stat(filepath.Join(root, outside)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v): a trick reached the server", outside, err)
		}
	}
	inside := filepath.Join(root, "workspace", "notes.md")
	if res := call(t, ctx, cs, "write_file", map[string]any{"path": inside, "content": "# Notes\n"}); res.IsError {
		t.Fatalf("the write inside the workspace failed: %s", text(res))
	}
	if b, err := os.ReadFile(inside); err != nil || string(b) != "# Notes\n" {
		t.Errorf("%s = %q, %v", inside, b, err)
	}
}
