package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The end-to-end tests run real MCP servers from npm (e2e/package.json,
// installed by `npm ci --prefix e2e` in .ci/run) behind the built proxy,
// driven by the official MCP Go SDK client. A missing install fails them:
// CI installs the servers, so a skip would hide a broken pipeline.

// npmServer returns the path of an npm-installed MCP server binary.
func npmServer(t testing.TB, bin string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "e2e", "node_modules", ".bin", bin))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: the end-to-end tests need the MCP servers from npm; run `npm ci --prefix e2e` (as .ci/run does)", p)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH: the end-to-end tests run MCP servers from npm (install Node.js 20 or later)")
	}
	return p
}

// goServer returns the binary of a Go MCP server of the module (under
// e2e/), which TestMain built into binDir with mcpx-policy (testBinaries,
// cachedBuild).
func goServer(t testing.TB, pkg string) string {
	t.Helper()
	name, ok := testBinaries[pkg]
	if !ok {
		t.Fatalf("goServer(%q): not a package TestMain builds: add it to testBinaries", pkg)
	}
	return filepath.Join(binDir, name)
}

// syncBuffer collects a process's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// await reports whether the buffer holds substr within ten seconds. A
// child's stderr reaches the buffer through a goroutine that copies its
// pipe, so a line the child wrote before it answered may not be here yet
// when the answer is.
func (s *syncBuffer) await(substr string) bool {
	for until := time.Now().Add(10 * time.Second); !strings.Contains(s.String(), substr); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(until) {
			return false
		}
	}
	return true
}

// gate is one proxy setup: a config and a state dir.
type gate struct {
	config, state, server string
	flags                 []string
	stderr                *syncBuffer // the stderr of the last command
}

func newGate(t testing.TB, server, config string, flags ...string) *gate {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return &gate{config: path, state: filepath.Join(dir, "state"), server: server, flags: flags}
}

// command is the proxy command in front of serverCmd.
func (g *gate) command(t testing.TB, serverCmd ...string) *exec.Cmd {
	args := []string{"proxy", "--config", g.config, "--server", g.server, "--state-dir", g.state}
	args = append(args, g.flags...)
	args = append(args, "--")
	args = append(args, serverCmd...)
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), args...)
	cmd.Env = cleanEnv()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	g.stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("proxy stderr:\n%s", stderr)
		}
	})
	return cmd
}

// cleanEnv is the environment without MCPX_POLICY_* settings.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPX_POLICY_") {
			env = append(env, kv)
		}
	}
	return env
}

// direct is serverCmd run without the proxy.
func direct(serverCmd ...string) *exec.Cmd {
	cmd := exec.Command(serverCmd[0], serverCmd[1:]...)
	cmd.Env = cleanEnv()
	return cmd
}

// connect starts cmd and connects an MCP Go SDK client to it.
func connect(t testing.TB, ctx context.Context, cmd *exec.Cmd, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpx-policy-e2e", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and fails the test on a protocol error. Like the
// TypeScript SDK's client (the Go SDK's does not), it validates a result's
// structuredContent against the outputSchema the tool is listed with, and
// fails the test as that client would fail the call.
func call(t testing.TB, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if res.StructuredContent != nil {
		if err := validOutput(ctx, cs, name, res.StructuredContent); err != nil {
			t.Fatalf("tools/call %s: structured content does not match the tool's output schema (a validating client shows this error instead of the result): %v", name, err)
		}
	}
	return res
}

// validOutput validates structuredContent against the outputSchema of tool
// name as the session lists it (none: anything goes).
func validOutput(ctx context.Context, cs *mcp.ClientSession, name string, structured any) error {
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	for _, tool := range tools.Tools {
		if tool.Name != name || tool.OutputSchema == nil {
			continue
		}
		schema, _ := json.Marshal(tool.OutputSchema)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
		if err != nil {
			return err
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("output.json", doc); err != nil {
			return err
		}
		s, err := c.Compile("output.json")
		if err != nil {
			return err
		}
		b, _ := json.Marshal(structured)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return err
		}
		return s.Validate(v)
	}
	return nil
}

// text is a result's text content, joined.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// refusal returns the code of the first reason of a proxy refusal (from
// _meta["mcpx-policy/decision"]), or "" when res is not one.
func refusal(res *mcp.CallToolResult) string {
	if !res.IsError || res.Meta["mcpx-policy/decision"] == nil {
		return ""
	}
	b, _ := json.Marshal(res.Meta["mcpx-policy/decision"])
	var d struct {
		Reasons []struct {
			Code string `json:"code"`
		} `json:"reasons"`
	}
	if json.Unmarshal(b, &d) != nil || len(d.Reasons) == 0 {
		return ""
	}
	return d.Reasons[0].Code
}

func toolNames(t testing.TB, ctx context.Context, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	out := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

var interrupt = os.Interrupt

// freeLoopbackAddr returns a loopback address with a port free right now.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// memoryCapped rewrites cmd to run under an address-space cap of kb KiB
// (bash's ulimit -v), so a runaway fails the test, not the machine; the
// processes cmd starts inherit the cap.
func memoryCapped(t testing.TB, cmd *exec.Cmd, kb int) *exec.Cmd {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to cap the binary's memory")
	}
	cmd.Args = append([]string{"bash", "-c", "ulimit -v " + strconv.Itoa(kb) + ` && exec "$0" "$@"`, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = bash
	return cmd
}
