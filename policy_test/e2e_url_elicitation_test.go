package policy_test

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// URL-mode elicitation (MCP 2025-11-25): a client that declares it, and
// not form elicitation, is sent to the approvals page for the ask; the
// call completes when the person answers there.

// urlPerson is the person behind a client with URL elicitation only: it
// consents to open the page (or declines to), and, having opened it,
// approves the call there.
type urlPerson struct {
	base    string // the approvals page's origin
	decline bool

	mu       sync.Mutex
	asked    []*mcp.ElicitParams
	complete []string
	errs     []error
	done     sync.WaitGroup
}

var shaInMessage = regexp.MustCompile(`sha256 ([0-9a-f]{64})`)

func (p *urlPerson) handler(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p.mu.Lock()
	p.asked = append(p.asked, req.Params)
	p.mu.Unlock()
	if p.decline {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	m := shaInMessage.FindStringSubmatch(req.Params.Message)
	link := req.Params.URL
	p.done.Add(1)
	go func() { // the person opens the page after consenting
		defer p.done.Done()
		var err error
		if m == nil {
			err = io.ErrUnexpectedEOF
		} else {
			err = approveOnPage(p.base, link, approvalToken, m[1])
		}
		if err != nil {
			p.mu.Lock()
			p.errs = append(p.errs, err)
			p.mu.Unlock()
		}
	}()
	return &mcp.ElicitResult{Action: "accept"}, nil
}

func (p *urlPerson) completed(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
	p.mu.Lock()
	p.complete = append(p.complete, req.Params.ElicitationID)
	p.mu.Unlock()
}

// TestE2EAskURLElicitation: the stdio proxy, given the page of a `serve
// --approvals-page` on the same state dir (--approvals-url), sends a
// client that declares only URL elicitation to the page of the held
// request; the person approves there and the call runs, once, and the
// client is told the elicitation is complete. A person who declines to
// open the page declines the call.
func TestE2EAskURLElicitation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := writeFiles(t, map[string]string{"token": approvalToken + "\n"})
	addr := freeLoopbackAddr(t)
	base := "http://" + addr
	g := &notesGate{gate: newGate(t, "notes", notesConfig, "--approvals-url", base+"/approvals"),
		server: goServer(t, "../e2e/notesserver"), file: filepath.Join(t.TempDir(), "notes.txt")}
	serve := exec.Command(filepath.Join(binDir, "mcpx-policy"), "serve", "--config", g.config, "--state-dir", g.state,
		"--addr", addr, "--token-file", filepath.Join(dir, "token"), "--decision-log", "off", "--approvals-page")
	serve.Env = cleanEnv()
	serve.Stdout = io.Discard
	startServe(t, serve, addr)

	person := &urlPerson{base: base}
	cs := g.connectAt(t, ctx, "2025-11-25", &mcp.ClientOptions{
		Capabilities:               &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler:         person.handler,
		ElicitationCompleteHandler: person.completed,
	})
	if res := call(t, ctx, cs, "add_note", map[string]any{"text": "one"}); res.IsError || text(res) != "added one" {
		t.Fatalf("the write approved on the page: %s", text(res))
	}
	person.done.Wait()
	person.mu.Lock()
	asked, errs := person.asked, person.errs
	person.mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("on the page: %v", errs)
	}
	if len(asked) != 1 || asked[0].Mode != "url" || !strings.HasPrefix(asked[0].URL, base+"/approvals/") || asked[0].ElicitationID == "" ||
		!strings.Contains(asked[0].Message, "notes.add_note") {
		t.Fatalf("the elicitation: %+v", asked)
	}
	if got := g.notes(t); got != "one\n" {
		t.Fatalf("notes = %q; want the approved write once", got)
	}
	// The completion notification may trail the result.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		person.mu.Lock()
		complete := append([]string(nil), person.complete...)
		person.mu.Unlock()
		if len(complete) == 1 && complete[0] == asked[0].ElicitationID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("notifications/elicitation/complete: %q; want %q", complete, asked[0].ElicitationID)
		}
	}

	person.decline = true
	if res := call(t, ctx, cs, "add_note", map[string]any{"text": "two"}); refusal(res) != "ConfirmationDeclined" {
		t.Fatalf("declined to open the page: %s", text(res))
	}
	if got := g.notes(t); got != "one\n" {
		t.Fatalf("notes = %q; the declined write ran", got)
	}
}
