package policy_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The approvals page in a real browser: Debian's Chromium, driven over the
// DevTools protocol (chromedp), as a person would use it.

// chromium is the Chromium binary the page tests drive.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium on PATH: the approvals page is tested in a real browser (apt-get install chromium)")
	return ""
}

// browser is a headless Chromium tab, closed with the test.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()))
	alloc, cancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancel)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	return tab
}

// heldDetails are the details of a held refusal's first reason (from
// _meta["mcpx-policy/decision"]).
func heldDetails(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(res.Meta["mcpx-policy/decision"])
	var d struct {
		Reasons []struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"reasons"`
	}
	if err := json.Unmarshal(b, &d); err != nil || len(d.Reasons) == 0 || d.Reasons[0].Code != "ConfirmationUnavailable" {
		t.Fatalf("not a ConfirmationUnavailable refusal: %v %s\n%s", err, b, text(res))
	}
	return d.Reasons[0].Details
}

// TestApprovalsPageInChromium: an MCP client without elicitation (the Go
// SDK's, over `proxy --listen --approvals-page`) asks for a write; the
// refusal links the approvals page for its request. A person opens the
// link in Chromium, is asked for the operator token, logs in, sees the
// exact call (without the secret in its arguments, which the prompt
// redacts), and approves it; the agent's retry of the same call runs,
// once. /metrics counts what the client got for each ask (two refusals,
// one allow), not just that the policy asked.
func TestApprovalsPageInChromium(t *testing.T) {
	t.Parallel()
	fsServer := npmServer(t, "mcp-server-filesystem")
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	token := rand.Text()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	g := newGate(t, "fs", "version: 1\npolicy: {write: ask}\nservers:\n  fs: {}\n",
		"--listen", addr, "--approvals-page", "--token-file", tokenFile)
	cmd := g.command(t, fsServer, root)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(interrupt)
		cmd.Wait()
	})
	base := "http://" + addr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpx-policy-e2e", Version: "1"}, nil)
	var cs *mcp.ClientSession
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("connecting over HTTP: %v", err)
	}
	defer cs.Close()
	target := filepath.Join(root, "page.txt")
	write := func(what string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": target, "content": "from the page " + aJWT}})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return res
	}

	res := write("the ask")
	details := heldDetails(t, res)
	id, _ := details["approval"].(string)
	link, _ := details["page"].(string)
	if want := base + "/approvals/" + id; id == "" || link != want {
		t.Fatalf("the refusal links %q; want %q (details %v)", link, want, details)
	}
	if !strings.Contains(text(res), link) || !strings.Contains(text(res), "sent again unchanged, runs once") {
		t.Fatalf("the refusal's text does not give the link and the retry:\n%s", text(res))
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the write ran before anyone approved it (%v)", err)
	}

	// A person opens the link: the page asks for the token first.
	tab := browser(t, ctx)
	if err := chromedp.Do(tab,
		chromedp.Navigate(link),
		chromedp.WaitVisible(`input[name=token]`),
		chromedp.SendKeys(`input[name=token]`, "not the token"),
		chromedp.Submit(`input[name=token]`),
		chromedp.WaitVisible(`p.declined`),
		chromedp.SendKeys(`input[name=token]`, token),
		chromedp.Submit(`input[name=token]`),
		chromedp.WaitVisible(`#approve`),
	); err != nil {
		t.Fatalf("logging in on the page: %v", err)
	}
	prompt, err := chromedp.Run(tab, chromedp.Text(`#prompt`))
	if err != nil {
		t.Fatal(err)
	}
	// The prompt as every surface shows it (the temp dir's random name is
	// redacted as high-entropy), with the sha256 the refusal named.
	for _, s := range []string{"fs.write_file", "/page.txt", `"content":"from the page`, details["sha256"].(string)} {
		if !strings.Contains(prompt, s) {
			t.Errorf("the page's prompt lacks %q:\n%s", s, prompt)
		}
	}
	if html, err := chromedp.Run(tab, chromedp.OuterHTML(`html`)); err != nil || strings.Contains(html, aJWT) || strings.Contains(html, "dozjgNryP4J3jVmNHl0w5N") {
		t.Fatalf("the page shows the secret the prompt hides (%v):\n%s", err, html)
	}
	// Not approved yet: the retry is still refused, naming the same request.
	if again := heldDetails(t, write("a retry before the approval")); again["approval"] != id {
		t.Fatalf("a retry before the approval names %v; want %s", again["approval"], id)
	}
	if err := chromedp.Do(tab, chromedp.Click(`#approve`), chromedp.WaitVisible(`p.state.approved`)); err != nil {
		t.Fatalf("approving on the page: %v", err)
	}
	state, err := chromedp.Run(tab, chromedp.Text(`p.state`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(state, "runs once") {
		t.Errorf("after approving, the page says %q", state)
	}

	res = write("the retry after the approval")
	if res.IsError {
		t.Fatalf("the retry after the approval was refused:\n%s", text(res))
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "from the page "+aJWT {
		t.Fatalf("%s = %q, %v; want the approved write", target, b, err)
	}
	os.Remove(target)
	if next := heldDetails(t, write("a second retry")); next["approval"] == id {
		t.Fatal("the approval was used twice")
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the second retry ran the write (%v)", err)
	}

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := readAll(resp)
	for _, want := range []string{
		`mcpx_policy_ask_answers_total{code="ConfirmationUnavailable",outcome="deny"} 3`,
		`mcpx_policy_ask_answers_total{code="none",outcome="allow"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(metrics, "ask_answers"))
		}
	}
}
