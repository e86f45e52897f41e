package policy_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An ask held for a person, told of by a webhook: `serve` POSTs each new
// approval request to a local receiver, signed; a person follows the
// link it carries to the approvals page, logs in and approves; the
// daemon's same call, sent again, is an allow once.

const webhookSecret = "webhook-secret-of-the-operator-0123"

// aJWT is a secret-shaped value an argument carries: the prompt redacts
// it, so nothing the webhook sends may carry it.
const aJWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"

type hook struct {
	body []byte
	sig  string
}

// webhookReceiver is a local receiver answering status, handing each
// body it gets to the returned channel.
func webhookReceiver(t *testing.T, status int) (string, <-chan hook) {
	t.Helper()
	got := make(chan hook, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- hook{b, r.Header.Get("X-Mcpx-Policy-Signature")}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// startHookServe runs serve with the approvals page and a webhook to url.
func startHookServe(t *testing.T, url string) *serveFixture {
	t.Helper()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": askConfig, "token": approvalToken + "\n", "hook.secret": webhookSecret + "\n"})
	f := &serveFixture{dir: dir, state: filepath.Join(dir, "state"), config: filepath.Join(dir, "mcpx-policy.yaml")}
	addr := freeLoopbackAddr(t)
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), "serve", "--config", f.config, "--state-dir", f.state,
		"--addr", addr, "--token-file", filepath.Join(dir, "token"), "--decision-log", "off", "--approvals-page",
		"--approval-webhook", url, "--approval-webhook-secret-file", filepath.Join(dir, "hook.secret"), "--approval-webhook-format", "json")
	cmd.Env = cleanEnv()
	cmd.Stdout = io.Discard
	srv := startServe(t, cmd, addr)
	f.base, f.stderr = srv.base, srv.stderr
	return f
}

// wait is the next delivery, or a failure after a minute (a hang guard).
func wait(t *testing.T, got <-chan hook) hook {
	t.Helper()
	select {
	case h := <-got:
		return h
	case <-time.After(time.Minute):
		t.Fatal("no webhook delivery")
		return hook{}
	}
}

// TestWebhookLinkApproves: the webhook's body is signed (HMAC-SHA256 of
// the body under the secret, as a receiver checks it), names the request,
// its link and its command, and carries no secret the prompt hides; the
// link, followed by a person with the token, approves the call; the same
// call sent again is an allow once. One request, one delivery: the call
// asked again before the answer is the same request and no new message.
func TestWebhookLinkApproves(t *testing.T) {
	t.Parallel()
	hookURL, got := webhookReceiver(t, http.StatusOK)
	f := startHookServe(t, hookURL)
	doc := callDoc("/workspace/a", "")
	doc["args"].(map[string]any)["content"] = "Authorization: Bearer " + aJWT

	outcome, status, _, out := f.decideHTTP(t, doc)
	if outcome != "ask" || status != http.StatusPreconditionRequired {
		t.Fatalf("decide = %s %d; want the ask held (428)", outcome, status)
	}
	id := out["approval"].(map[string]any)["id"].(string)
	h := wait(t, got)
	mac := hmac.New(sha256.New, []byte(webhookSecret))
	mac.Write(h.body)
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(h.sig), []byte(want)) {
		t.Fatalf("signature %q; want %q", h.sig, want)
	}
	if strings.Contains(string(h.body), aJWT) || strings.Contains(string(h.body), "dozjgNryP4J3jVmNHl0w5N") {
		t.Fatalf("the webhook carries the secret value:\n%s", h.body)
	}
	var body struct {
		Type     string `json:"type"`
		Approval struct {
			ID, SHA256 string
		} `json:"approval"`
		Link    string `json:"link"`
		Approve string `json:"approve"`
	}
	if err := json.Unmarshal(h.body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Approval.ID != id || body.Link != f.base+"/approvals/"+id || !strings.HasPrefix(body.Approve, "mcpx-policy approve "+id+" --sha256 ") {
		t.Fatalf("webhook body: %s", h.body)
	}
	// Asked again before an answer: the same request, no second message.
	if _, _, _, again := f.decideHTTP(t, doc); again["approval"].(map[string]any)["id"] != id {
		t.Fatalf("asked again: %v; want request %s", again["approval"], id)
	}

	// A person follows the link.
	if err := approveOnPage(f.base, body.Link, approvalToken, body.Approval.SHA256); err != nil {
		t.Fatal(err)
	}

	if outcome, status, _, _ := f.decideHTTP(t, doc); outcome != "allow" || status != http.StatusOK {
		t.Fatalf("the same call after the approval: %s %d; want the allow", outcome, status)
	}
	outcome, _, _, out = f.decideHTTP(t, doc)
	if outcome != "ask" || out["approval"].(map[string]any)["id"] == id {
		t.Fatalf("the call again: %s %v; want a new ask (the approval is used once)", outcome, out["approval"])
	}
	if next := wait(t, got); !strings.Contains(string(next.body), out["approval"].(map[string]any)["id"].(string)) {
		t.Fatalf("the second delivery is not the new request's:\n%s", next.body)
	}
	select {
	case extra := <-got:
		t.Fatalf("an extra delivery:\n%s", extra.body)
	default:
	}
}

// TestWebhookFailingNeverAllows: a receiver that always fails changes
// nothing for the call: it stays an ask held for a person.
func TestWebhookFailingNeverAllows(t *testing.T) {
	t.Parallel()
	hookURL, got := webhookReceiver(t, http.StatusInternalServerError)
	f := startHookServe(t, hookURL)
	doc := callDoc("/workspace/b", "")
	for range 3 {
		if outcome, status, _, _ := f.decideHTTP(t, doc); outcome != "ask" || status != http.StatusPreconditionRequired {
			t.Fatalf("with a failing webhook: %s %d; want the ask held", outcome, status)
		}
	}
	wait(t, got) // it was tried
}

// approveOnPage is a person following link to the approvals page at base:
// the page asks for the token, shows the call of sha256 after the login,
// and takes the approval. It reports what went wrong (it may run off the
// test's goroutine).
func approveOnPage(base, link, token, sha256 string) error {
	jar, _ := cookiejar.New(nil)
	person := &http.Client{Jar: jar}
	post := func(path string, v url.Values) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		return person.Do(req)
	}
	if !strings.HasPrefix(link, base+"/approvals/") {
		return fmt.Errorf("the link %q is not a request's page at %s", link, base)
	}
	resp, err := person.Get(link)
	if err != nil {
		return err
	}
	page, _ := readAll(resp)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(page, `name="token"`) {
		return fmt.Errorf("the link without a session: %d\n%s", resp.StatusCode, page)
	}
	if resp, err = post("/approvals/login", url.Values{"token": {token}, "next": {strings.TrimPrefix(link, base)}}); err != nil {
		return err
	}
	page, _ = readAll(resp)
	i := strings.Index(page, `name="csrf" value="`)
	if resp.StatusCode != http.StatusOK || i < 0 || !strings.Contains(page, sha256) {
		return fmt.Errorf("the request's page after login: %d\n%s", resp.StatusCode, page)
	}
	csrf := page[i+len(`name="csrf" value="`):]
	csrf = csrf[:strings.IndexByte(csrf, '"')]
	if resp, err = post(strings.TrimPrefix(link, base), url.Values{"csrf": {csrf}, "action": {"approve"}, "sha256": {sha256}}); err != nil {
		return err
	}
	page, _ = readAll(resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "runs once") {
		return fmt.Errorf("approving: %d\n%s", resp.StatusCode, page)
	}
	return nil
}
