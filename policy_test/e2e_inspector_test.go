package policy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The MCP Inspector CLI (npm @modelcontextprotocol/inspector, pinned in
// e2e/package.json) is a client nobody here wrote: the TypeScript SDK's,
// which validates structuredContent against the tool's outputSchema, on
// error results too. These tests drive the built proxy with it in front of
// server-filesystem, whose tools declare an outputSchema, as a new user
// would: an inspector config file naming the proxy command.

// inspectorGate is a proxy config and an Inspector config file naming it.
type inspectorGate struct {
	inspector, config string
}

func newInspectorGate(t *testing.T, policy, root string) *inspectorGate {
	t.Helper()
	inspector := npmServer(t, "mcp-inspector")
	fsServer := npmServer(t, "mcp-server-filesystem")
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	// The proxy's own `--` is left out: the Inspector passes the method
	// options after the config's args, and a `--` would hand them to the
	// server. Flag parsing stops at the server command all the same.
	servers := map[string]any{"mcpServers": map[string]any{"fs": map[string]any{
		"command": filepath.Join(binDir, "mcpx-policy"),
		"args":    []string{"proxy", "--config", conf, "--server", "fs", "--state-dir", filepath.Join(dir, "state"), fsServer, root},
	}}}
	b, _ := json.Marshal(servers)
	insp := filepath.Join(dir, "inspector.json")
	if err := os.WriteFile(insp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return &inspectorGate{inspector: inspector, config: insp}
}

// call runs `mcp-inspector --cli --config … --method tools/call` and returns
// its exit status, stdout and stderr.
func (g *inspectorGate) call(t *testing.T, tool string, args ...string) (int, string, string) {
	t.Helper()
	argv := []string{"--cli", "--config", g.config, "--server", "fs", "--method", "tools/call", "--tool-name", tool}
	for _, a := range args {
		argv = append(argv, "--tool-arg", a)
	}
	cmd := exec.Command(g.inspector, argv...)
	cmd.Env = cleanEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// inspectorResult is the CallToolResult the Inspector printed.
type inspectorResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Meta              map[string]any  `json:"_meta"`
}

func (r inspectorResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// result requires exit status 0 and a CallToolResult on stdout.
func (g *inspectorGate) result(t *testing.T, what, tool string, args ...string) inspectorResult {
	t.Helper()
	code, out, errb := g.call(t, tool, args...)
	if code != 0 {
		t.Fatalf("%s: the Inspector exited %d; want 0 and the result\nstdout: %s\nstderr: %s", what, code, out, errb)
	}
	var r inspectorResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%s: stdout is not a CallToolResult: %v\n%s", what, err, out)
	}
	return r
}

// refusal requires a refusal of code, shown as text, with nothing in
// structuredContent and the decision in _meta.
func (r inspectorResult) refusal(t *testing.T, what, code string, texts ...string) {
	t.Helper()
	if !r.IsError || len(r.StructuredContent) != 0 {
		t.Errorf("%s: isError %v, structuredContent %s; want a refusal without structuredContent", what, r.IsError, r.StructuredContent)
	}
	d, _ := r.Meta["mcpx-policy/decision"].(map[string]any)
	reasons, _ := d["reasons"].([]any)
	if len(reasons) == 0 || reasons[0].(map[string]any)["code"] != code {
		t.Errorf("%s: _meta decision %v; want %s first", what, r.Meta, code)
	}
	for _, s := range append([]string{"was not executed", code}, texts...) {
		if !strings.Contains(r.text(), s) {
			t.Errorf("%s: text lacks %q:\n%s", what, s, r.text())
		}
	}
}

// TestInspectorWarnGate: under unknownArgs warn and writes allowed, a rule
// refusal reaches the Inspector as the refusal (not a schema error), and
// an allowed write with an ignored option as a success whose
// structuredContent still validates; the file system shows what ran.
func TestInspectorWarnGate(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	g := newInspectorGate(t, fmt.Sprintf(`version: 1
policy: {write: ask, unknownArgs: warn}
servers:
  fs:
    writePolicy: allow
    argumentRules:
      - id: no-dotfiles
        tools: ["write_file"]
        description: no dotfiles
        schema: {properties: {path: {type: string, pattern: "^%s/[^.][^/]*$"}}}
`, root), root)

	r := g.result(t, "a rule refusal", "write_file", "path="+root+"/.env", "content=SECRET=1")
	r.refusal(t, "a rule refusal", "ArgumentRuleViolation", "no-dotfiles", "Retry only with arguments")

	r = g.result(t, "an allowed write with an ignored option", "write_file", "path="+root+"/a.txt", "content=hello", "colour=red")
	if r.IsError || !strings.Contains(r.text(), "Successfully wrote to "+root+"/a.txt") || !strings.Contains(r.text(), `{"_ignored_options":["colour"]}`) {
		t.Errorf("allowed write: isError %v, text:\n%s", r.IsError, r.text())
	}
	var sc bytes.Buffer
	json.Compact(&sc, r.StructuredContent)
	if sc.String() != `{"content":"Successfully wrote to `+root+`/a.txt"}` {
		t.Errorf("structuredContent %s; want the server's, unchanged", r.StructuredContent)
	}

	if b, err := os.ReadFile(filepath.Join(root, "a.txt")); err != nil || string(b) != "hello" {
		t.Errorf("a.txt = %q, %v; want the allowed write on disk", b, err)
	}
	if _, err := os.Stat(filepath.Join(root, ".env")); !os.IsNotExist(err) {
		t.Errorf(".env exists (%v): the refused write ran", err)
	}
}

// TestInspectorAskApprovedOutOfBand: the Inspector cannot show an ask, so
// the proxy holds it for a person: the refusal the agent reads names the
// request and the exact `mcpx-policy approve …` command for this state
// dir, and says the same call sent again then runs once. A person runs
// that command as printed (through a shell, from the text alone); the
// Inspector's retry of the same call runs — the file is written — and a
// second retry is refused again, for a new request: the approval was used
// once. A changed call never uses it. Under unknownArgs reject, an
// unknown-argument refusal reaches the Inspector as what it is, and a read
// runs. (One test: each Inspector call starts three processes, two of them
// node.)
func TestInspectorAskApprovedOutOfBand(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := newInspectorGate(t, `version: 1
policy: {write: ask, unknownArgs: reject}
servers:
  fs: {}
`, root)
	target := root + "/b.txt"

	r := g.result(t, "an unknown-argument refusal", "read_text_file", "path="+root+"/notes.txt", "lines=1")
	r.refusal(t, "an unknown-argument refusal", "UnknownArguments", "Unknown arguments: lines", "Valid arguments: head, path, tail")

	r = g.result(t, "an ask the client cannot show", "write_file", "path="+target, "content=x")
	r.refusal(t, "an ask the client cannot show", "ConfirmationUnavailable", "needs a person's approval", "mcpx-policy approve ",
		"sent again unchanged, runs once", "--state-dir ")
	approve, id := heldCommand(t, r)
	if !strings.Contains(r.text(), "`"+approve+"`") {
		t.Fatalf("the refusal's text does not show the command %q whole:\n%s", approve, r.text())
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("b.txt exists (%v): the unconfirmed write ran", err)
	}

	// Asked again before anyone answered: the same request, still refused.
	r = g.result(t, "the same ask, unanswered", "write_file", "path="+target, "content=x")
	r.refusal(t, "the same ask, unanswered", "ConfirmationUnavailable", id)
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("b.txt exists (%v): a pending request let the write run", err)
	}

	// A person runs the command, as printed, in a shell.
	sh := exec.Command("sh", "-c", approve)
	sh.Env = append(cleanEnv(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := sh.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "approved "+id) || !strings.Contains(string(out), "the same call sent again") {
		t.Fatalf("%s: %v\n%s", approve, err, out)
	}

	// Another call does not use it.
	r = g.result(t, "another content", "write_file", "path="+target, "content=y")
	r.refusal(t, "another content", "ConfirmationUnavailable")
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("b.txt exists (%v): a changed call used the approval", err)
	}

	r = g.result(t, "the retry after the approval", "write_file", "path="+target, "content=x")
	if r.IsError || !strings.Contains(r.text(), "Successfully wrote to "+target) {
		t.Fatalf("the retry after the approval: isError %v\n%s", r.IsError, r.text())
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "x" {
		t.Fatalf("b.txt = %q, %v; want the approved write on disk", b, err)
	}
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}

	r = g.result(t, "a second retry", "write_file", "path="+target, "content=x")
	r.refusal(t, "a second retry", "ConfirmationUnavailable", "mcpx-policy approve ")
	if _, again := heldCommand(t, r); again == id {
		t.Errorf("the second retry names the used request %s again", id)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("b.txt exists again (%v): the approval ran the call twice", err)
	}

	r = g.result(t, "a read", "read_text_file", "path="+root+"/notes.txt")
	if r.IsError || !strings.Contains(r.text(), "one\ntwo") {
		t.Errorf("a read: %s", r.text())
	}
}

// heldCommand is the approve command and the request id a held refusal's
// decision (in _meta) names.
func heldCommand(t *testing.T, r inspectorResult) (approve, id string) {
	t.Helper()
	d, _ := r.Meta["mcpx-policy/decision"].(map[string]any)
	reasons, _ := d["reasons"].([]any)
	if len(reasons) == 0 {
		t.Fatalf("no decision in _meta: %v", r.Meta)
	}
	details, _ := reasons[0].(map[string]any)["details"].(map[string]any)
	approve, _ = details["approve"].(string)
	id, _ = details["approval"].(string)
	if !strings.HasPrefix(approve, "mcpx-policy approve "+id+" ") || id == "" {
		t.Fatalf("the held refusal's details name no approve command: %v", details)
	}
	return approve, id
}

// TestProxyPageClientConfigs: every client config docs/proxy.md shows — the
// JSON mcpServers entries, the TOML [mcp_servers] ones and `claude mcp
// add` — names mcpx-policy and npx by absolute paths, as the page tells
// the reader to: a client does not start servers from the reader's shell,
// and a bare name its PATH lacks fails at the client's start.
func TestProxyPageClientConfigs(t *testing.T) {
	src, err := os.ReadFile("../docs/proxy.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseDocBlocks(string(src))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	check := func(line int, what, command string, args []string) {
		t.Helper()
		checked++
		if !filepath.IsAbs(command) {
			t.Errorf("docs/proxy.md:%d: %s runs %q, not an absolute path", line, what, command)
		}
		for _, a := range args {
			if a == "npx" || a == "mcpx-policy" {
				t.Errorf("docs/proxy.md:%d: %s runs %q by its bare name", line, what, a)
			}
		}
	}
	tomlCommand := regexp.MustCompile(`(?m)^command = "([^"]*)"`)
	tomlArgs := regexp.MustCompile(`(?s)\nargs = \[(.*?)\]`)
	for _, b := range blocks {
		switch {
		case b.info == "json" && strings.Contains(b.body, `"mcpServers"`):
			var cfg struct {
				MCPServers map[string]struct {
					Command string   `json:"command"`
					Args    []string `json:"args"`
				} `json:"mcpServers"`
			}
			if err := json.Unmarshal([]byte(b.body), &cfg); err != nil {
				t.Errorf("docs/proxy.md:%d: %v", b.line, err)
				continue
			}
			for name, s := range cfg.MCPServers {
				check(b.line, "mcpServers."+name, s.Command, s.Args)
			}
		case b.info == "toml" && strings.Contains(b.body, "[mcp_servers."):
			m := tomlCommand.FindStringSubmatch(b.body)
			a := tomlArgs.FindStringSubmatch(b.body)
			if m == nil || a == nil {
				t.Errorf("docs/proxy.md:%d: a TOML server without command or args", b.line)
				continue
			}
			var args []string
			if err := json.Unmarshal([]byte("["+a[1]+"]"), &args); err != nil {
				t.Errorf("docs/proxy.md:%d: args: %v", b.line, err)
			}
			check(b.line, "mcp_servers", m[1], args)
		case b.info == "console":
			for _, cmd := range strings.Split(strings.ReplaceAll(b.body, "\\\n", " "), "\n") {
				_, rest, ok := strings.Cut(cmd, " -- ")
				if !strings.HasPrefix(cmd, "$ claude mcp add ") || !ok {
					continue // not a command Claude Code runs
				}
				words := strings.Fields(rest)
				check(b.line, "claude mcp add", words[0], words[1:])
			}
		}
	}
	if checked < 3 {
		t.Errorf("checked %d client configs on docs/proxy.md; want the three it shows (Claude Desktop, Claude Code, Codex)", checked)
	}
}
