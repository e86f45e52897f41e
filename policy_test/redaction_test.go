package policy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// The redaction regressions: calls that once put a secret on some output,
// run through every output there is — the proxy (MCP), serve (/v1/decide
// and its decision log), eval --format json and text, and a stock OPA
// serving the bundle. Each output must hide every leak.

// leakConfig gates fs.write_file: content must start with "safe", the
// arguments are path, content and password only, and an operator override
// refuses any call with a password, quoting it in its message and details.
const leakConfig = `version: 1
policy:
  write: ask
  unknownArgs: warn
  overrides: [overrides/]
servers:
  fs:
    writePolicy: allow
    argumentRules:
      - id: content-is-safe
        tools: ["write_file"]
        argument: content
        description: content starts with safe
        schema: {type: string, pattern: "^safe"}
      - id: known-keys-only
        tools: ["write_file"]
        description: only path, content and password
        schema:
          properties: {path: {}, content: {}, password: {}}
          additionalProperties: false
`

const leakOverride = `package mcpx.overrides

deny contains {
	"code": "BannedPassword",
	"message": sprintf("login refused: password %s is on the banned list (%s)", [input.args.password, json.marshal(input.args.password)]),
	"attempt": input.args.password,
} if is_string(input.args.password)
`

// leakCase is one call that put a secret on an output of 61467f1.
type leakCase struct {
	name  string
	args  func(dir string) map[string]any // dir: where the file would go
	leaks []string
	code  decision.Code // the deciding reason
}

var leakCases = []leakCase{
	{
		// The proxy sent the override's message as it was; eval and serve
		// printed it in the raw decision beside the rendering.
		name: "override quoting args.password",
		args: func(dir string) map[string]any {
			return map[string]any{"path": dir + "/a.txt", "content": "safe", "password": "Hunter2-Correct-Horse"}
		},
		leaks: []string{"Hunter2-Correct-Horse"},
		code:  decision.OverrideDeny,
	},
	{
		// A secret used as an object key was kept in violation paths, the
		// decision log and every rendering.
		name: "secret as an argument key",
		args: func(dir string) map[string]any {
			return map[string]any{"path": dir + "/a.txt", "content": "safe", "ghp_16C7e42F292c6912E7710c838347Ae178B4a": "x"}
		},
		leaks: []string{"ghp_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c838347Ae178B4a"},
		code:  decision.ArgumentRuleViolation,
	},
	{
		name: "JSON text in a string",
		args: func(dir string) map[string]any {
			return map[string]any{"path": dir + "/a.txt", "content": `{"user": "app", "password": "Hunter3-Json-String"}`}
		},
		leaks: []string{"Hunter3-Json-String"},
		code:  decision.ArgumentRuleViolation,
	},
	{
		name: "mysql -pPASS",
		args: func(dir string) map[string]any {
			return map[string]any{"path": dir + "/a.sh", "content": "mysql -h db -u root -pHunter4GluedFlag shop"}
		},
		leaks: []string{"Hunter4GluedFlag"},
		code:  decision.ArgumentRuleViolation,
	},
	{
		name: "PGP private key block",
		args: func(dir string) map[string]any {
			return map[string]any{"path": dir + "/key.asc", "content": "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGR1c2VyAQgAq3k9Zp2WmXr7\n=Ab12\n-----END PGP PRIVATE KEY BLOCK-----\n"}
		},
		leaks: []string{"lQOYBGR1c2VyAQgAq3k9Zp2WmXr7"},
		code:  decision.ArgumentRuleViolation,
	},
	{
		// The policy cut the value to 120 characters before it looked for
		// secrets: the AWS key across the cut lost its shape and its first
		// characters were shown.
		name: "AWS key across the cut",
		args: func(dir string) map[string]any {
			return map[string]any{"path": dir + "/a.txt", "content": strings.Repeat("x", 109) + " AKIAIOSFODNN7EXAMPLE " + strings.Repeat("y", 100)}
		},
		leaks: []string{"AKIAIOSF"},
		code:  decision.ArgumentRuleViolation,
	},
}

// leakGate writes the config and its override into a new dir.
func leakGate(t *testing.T) string {
	t.Helper()
	return writeFiles(t, map[string]string{"mcpx-policy.yaml": leakConfig, "overrides/banned.rego": leakOverride})
}

// leakTool is write_file as the filesystem server publishes it.
var leakTool = decision.Tool{Name: "write_file", Annotations: destructive, InputSchema: map[string]any{
	"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}},
	"required": []any{"path", "content"},
}}

// assertHidden fails when out holds a leak, raw or escaped as in JSON.
func assertHidden(t *testing.T, where, out string, leaks []string) {
	t.Helper()
	for _, leak := range leaks {
		q, _ := json.Marshal(leak)
		if strings.Contains(out, leak) || strings.Contains(out, strings.Trim(string(q), `"`)) {
			t.Errorf("%s shows %q:\n%s", where, leak, out)
		}
	}
}

// callFile writes the call document of c for surface into dir.
func callFile(t *testing.T, dir string, i int, c leakCase, surface string) string {
	t.Helper()
	doc := map[string]any{"server": "fs", "tool": leakTool, "args": c.args("/workspace"), "surface": surface}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, fmt.Sprintf("call-%d-%s.json", i, surface))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRedactionEval runs the calls through the built binary's eval, as
// JSON (the decision document and "rendered", a line per call) and as
// text, on every surface: one eval per surface and format, every call in
// it, as an operator replays a batch.
func TestRedactionEval(t *testing.T) {
	t.Parallel()
	dir := leakGate(t)
	var all []string
	for _, c := range leakCases {
		all = append(all, c.leaks...)
	}
	for _, surface := range []string{"daemon", "mcp", "cli"} {
		var paths []string
		for i, c := range leakCases {
			paths = append(paths, callFile(t, dir, i, c, surface))
		}
		for _, format := range []string{"json", "text"} {
			args := append([]string{"eval", "--config", filepath.Join(dir, "mcpx-policy.yaml"),
				"--state-dir", filepath.Join(dir, "state"), "--format", format}, paths...)
			stdout, stderr, code := runSplit(t, args...)
			if code != 2 {
				t.Fatalf("(%s, %s): eval exited %d, want 2 (deny)\n%s", surface, format, code, stderr)
			}
			out := stdout + stderr
			assertHidden(t, fmt.Sprintf("eval --surface %s --format %s", surface, format), out, all)
			if format == "json" {
				// A line per call, in the order given: each names its code.
				lines := strings.Split(strings.TrimSpace(stdout), "\n")
				if len(lines) != len(leakCases) {
					t.Fatalf("(%s, json): %d lines for %d calls:\n%s", surface, len(lines), len(leakCases), out)
				}
				for i, c := range leakCases {
					if !strings.Contains(lines[i], string(c.code)) {
						t.Errorf("%s (%s, json): the decision does not name %s:\n%s", c.name, surface, c.code, lines[i])
					}
				}
				continue
			}
			for _, c := range leakCases {
				if !strings.Contains(out, string(c.code)) {
					t.Errorf("%s (%s, text): the output does not name %s:\n%s", c.name, surface, c.code, out)
				}
			}
		}
	}
}

// TestRedactionServe runs each call through the built binary's serve: the
// /v1/decide body (the decision document and "rendered") on every surface,
// and the decision log, which keeps violation paths.
func TestRedactionServe(t *testing.T) {
	t.Parallel()
	dir := leakGate(t)
	logPath := filepath.Join(dir, "decisions.log")
	addr := freeLoopbackAddr(t)
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), "serve", "--config", filepath.Join(dir, "mcpx-policy.yaml"),
		"--state-dir", filepath.Join(dir, "state"), "--addr", addr, "--decision-log", logPath)
	cmd.Env = cleanEnv()
	cmd.Stdout = io.Discard
	srv := startServe(t, cmd, addr)
	base := srv.base
	var allLeaks []string
	for _, surface := range []string{"daemon", "mcp", "cli"} {
		for _, c := range leakCases {
			allLeaks = append(allLeaks, c.leaks...)
			body, err := json.Marshal(map[string]any{"server": "fs", "tool": leakTool, "args": c.args("/workspace"), "surface": surface})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Post(base+"/v1/decide", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var d struct {
				Outcome string `json:"outcome"`
				Step    string `json:"step"`
			}
			if resp.StatusCode != http.StatusOK || json.Unmarshal(out, &d) != nil || d.Outcome != "deny" || !strings.Contains(string(out), string(c.code)) {
				t.Fatalf("%s (%s): /v1/decide answered %d %s; want a %s deny", c.name, surface, resp.StatusCode, out, c.code)
			}
			assertHidden(t, fmt.Sprintf("/v1/decide (%s, %s)", surface, c.name), string(out), c.leaks)
		}
	}
	// The log is written before the answer: every line is there.
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines++
	}
	if lines != 3*len(leakCases) {
		t.Fatalf("the decision log has %d lines, want %d:\n%s", lines, 3*len(leakCases), b)
	}
	if !strings.Contains(string(b), `"path":"/[REDACTED github-token, 40 chars]"`) {
		t.Errorf("the decision log does not keep the (redacted) violation path of the secret key:\n%s", b)
	}
	assertHidden(t, "the decision log", string(b), allLeaks)
}

// TestRedactionProxy runs each call through the built proxy in front of
// the filesystem MCP server, with the official Go SDK client: the refusal's
// text, structuredContent and _meta hide every leak, and nothing was written.
func TestRedactionProxy(t *testing.T) {
	t.Parallel()
	fsServer := npmServer(t, "mcp-server-filesystem")
	root := t.TempDir()
	dir := leakGate(t)
	g := &gate{config: filepath.Join(dir, "mcpx-policy.yaml"), state: filepath.Join(dir, "state"), server: "fs"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connect(t, ctx, g.command(t, fsServer, root), nil)
	for _, c := range leakCases {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: c.args(root)})
		if err != nil {
			t.Fatalf("%s: tools/call: %v", c.name, err)
		}
		if code := refusal(res); code != string(c.code) {
			t.Fatalf("%s: refusal code %q, want %s (result %s)", c.name, code, c.code, text(res))
		}
		sc, _ := json.Marshal(res.StructuredContent)
		meta, _ := json.Marshal(res.Meta)
		assertHidden(t, "the proxy's refusal ("+c.name+")", text(res)+"\n"+string(sc)+"\n"+string(meta), c.leaks)
	}
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != 0 {
		t.Errorf("the refused writes reached the server: %v %v", entries, err)
	}
}

// TestRedactionStockOPA serves the bundle of the same config from a stock
// OPA: its decision document — all a fleet gets, with no rendering after
// it — hides every leak, and is the embedded engine's decision.
func TestRedactionStockOPA(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a stock OPA server")
	}
	t.Parallel()
	dir := leakGate(t)
	opts := mcpxpolicy.Options{ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")}, Env: []string{}, StateDir: filepath.Join(dir, "state")}
	eng, err := mcpxpolicy.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(dir, "bundle.tar.gz")
	writeBundle(t, opts, tarball, nil)
	base := opaServer(t, tarball)
	seen := map[decision.Code]bool{}
	for _, c := range leakCases {
		call := decision.Call{Server: "fs", Tool: leakTool, Args: c.args("/workspace")}
		input, err := eng.OPAInput(call)
		if err != nil {
			t.Fatal(err)
		}
		status, result, raw := postDecision(t, base, input)
		if status != http.StatusOK || !strings.Contains(string(result), string(c.code)) {
			t.Fatalf("%s: stock OPA answered %d %s; want a %s deny", c.name, status, raw, c.code)
		}
		assertHidden(t, "stock OPA's decision ("+c.name+")", string(result), c.leaks)
		compareOne(t, eng, base, c.name, call, false, seen)
	}
}
