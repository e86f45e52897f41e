package approvalpage

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// The page's guards, request by request: the end-to-end test in Chromium
// (policy_test) shows the page works for a person; these show what it
// refuses to anyone else.

const (
	testToken = "a-token-of-the-operator-0123456789"
	testID    = "0123456789abcdef0123456789abcdef"
	testSHA   = "5704d6494d324a534e1fba5fa4416f6431e0ecd31868bcfacd31780c8ad2f073"
)

// store is an approval store of one request that records its answers.
type store struct {
	mu      sync.Mutex
	req     decision.ApprovalRequest
	answers []string
}

func (s *store) List() ([]decision.ApprovalRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []decision.ApprovalRequest{s.req}, nil
}

func (s *store) Get(id string) (decision.ApprovalRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.req.ID {
		return decision.ApprovalRequest{}, mcpxpolicy.ErrNotFound
	}
	return s.req, nil
}

func (s *store) Approve(id, sha256 string) (decision.ApprovalRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.req.ID {
		return decision.ApprovalRequest{}, mcpxpolicy.ErrNotFound
	}
	if sha256 != s.req.SHA256 {
		return decision.ApprovalRequest{}, mcpxpolicy.ErrMismatch
	}
	s.answers = append(s.answers, "approve")
	s.req.State = decision.ApprovalApproved
	return s.req, nil
}

func (s *store) Decline(id string) (decision.ApprovalRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, "decline")
	s.req.State = decision.ApprovalDeclined
	return s.req, nil
}

func (s *store) answered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.answers...)
}

func newPage(t *testing.T, text string) (*Handler, *store) {
	t.Helper()
	s := &store{req: decision.ApprovalRequest{ID: testID, SHA256: testSHA, Server: "fs", Tool: "write_file",
		State: decision.ApprovalPending, Created: time.Now(), Expires: time.Now().Add(5 * time.Minute), Text: text}}
	h, err := New(Options{Approvals: s, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	return h, s
}

// serve runs r through h as a request that arrived on a loopback
// listener, and returns the response.
func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8181}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func form(path string, v url.Values) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8181"+path, strings.NewReader(v.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "http://127.0.0.1:8181")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	return r
}

// login logs in and returns the session cookie and the form token.
func login(t *testing.T, h *Handler, token string) (*http.Cookie, string) {
	t.Helper()
	w := serve(h, form("/approvals/login", url.Values{"token": {token}, "next": {"/approvals/" + testID}}))
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/approvals/"+testID {
		t.Fatalf("login: %d %s", w.Code, w.Header().Get("Location"))
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != Path {
		t.Fatalf("the session cookie %+v is not HttpOnly, SameSite=Strict, on %s", cookies, Path)
	}
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8181/approvals/"+testID, nil)
	r.AddCookie(cookies[0])
	page := serve(h, r)
	if page.Code != http.StatusOK {
		t.Fatalf("the request's page after login: %d", page.Code)
	}
	body := page.Body.String()
	i := strings.Index(body, `name="csrf" value="`)
	if i < 0 {
		t.Fatalf("no form token on the page:\n%s", body)
	}
	rest := body[i+len(`name="csrf" value="`):]
	return cookies[0], rest[:strings.IndexByte(rest, '"')]
}

// TestPageNeedsTheToken: without a session every page is the login form
// (401) and nothing is shown; a wrong token logs no one in; a login never
// redirects off the page (next=//elsewhere).
func TestPageNeedsTheToken(t *testing.T) {
	h, s := newPage(t, "the exact call\n")
	for _, path := range []string{"/approvals", "/approvals/" + testID} {
		w := serve(h, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8181"+path, nil))
		if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), `name="token"`) || strings.Contains(w.Body.String(), "the exact call") {
			t.Errorf("GET %s without a session: %d\n%s", path, w.Code, w.Body)
		}
	}
	w := serve(h, form("/approvals/login", url.Values{"token": {"wrong"}}))
	if w.Code != http.StatusUnauthorized || len(w.Result().Cookies()) != 0 {
		t.Errorf("a wrong token: %d, cookies %v", w.Code, w.Result().Cookies())
	}
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/approvals/../x", "/elsewhere", "/approvals/\\evil"} {
		w := serve(h, form("/approvals/login", url.Values{"token": {testToken}, "next": {next}}))
		if loc := w.Header().Get("Location"); w.Code != http.StatusSeeOther || (loc != Path && !strings.HasPrefix(loc, Path+"/")) || strings.Contains(loc, "evil") || strings.Contains(loc, "..") {
			t.Errorf("login with next %q redirects to %q", next, loc)
		}
	}
	if got := s.answered(); len(got) != 0 {
		t.Errorf("answers without a session: %v", got)
	}
}

// TestPageRefusesForgedAnswers: an answer is taken only with the session
// cookie, the session's form token, from the page's own origin, over a
// loopback Host; a forged, altered or foreign cookie is no session; each
// refusal leaves the request unanswered. With everything right, the
// answer is taken once.
func TestPageRefusesForgedAnswers(t *testing.T) {
	h, s := newPage(t, "the exact call\n")
	cookie, csrf := login(t, h, testToken)
	good := url.Values{"csrf": {csrf}, "action": {"approve"}, "sha256": {testSHA}}
	const otherToken = "another-token-of-another-operator-0123"
	other, _ := New(Options{Approvals: s, Token: otherToken})
	foreign, _ := login(t, other, otherToken)
	cases := map[string]func(r *http.Request){
		"no cookie":    func(r *http.Request) { r.Header.Del("Cookie") },
		"altered":      func(r *http.Request) { r.Header.Set("Cookie", cookieName+"="+"9"+cookie.Value[1:]) },
		"foreign":      func(r *http.Request) { r.Header.Set("Cookie", cookieName+"="+foreign.Value) },
		"other origin": func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") },
		"null origin":  func(r *http.Request) { r.Header.Set("Origin", "null") },
		"cross-site":   func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
		"same-site":    func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") },
		"rebinding": func(r *http.Request) {
			r.Host = "evil.example:8181"
			r.Header.Set("Origin", "http://evil.example:8181")
		},
		"not a form":    func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") },
		"no form token": func(r *http.Request) {},
	}
	for name, change := range cases {
		v := good
		if name == "no form token" {
			v = url.Values{"action": {"approve"}, "sha256": {testSHA}}
		}
		r := form("/approvals/"+testID, v)
		r.AddCookie(cookie)
		change(r)
		w := serve(h, r)
		if w.Code < 400 {
			t.Errorf("%s: %d; want a refusal", name, w.Code)
		}
	}
	if got := s.answered(); len(got) != 0 {
		t.Fatalf("forged answers were taken: %v", got)
	}
	// Another sha256 than the one shown: nothing is approved.
	r := form("/approvals/"+testID, url.Values{"csrf": {csrf}, "action": {"approve"}, "sha256": {strings.Repeat("0", 64)}})
	r.AddCookie(cookie)
	if w := serve(h, r); w.Code != http.StatusConflict {
		t.Errorf("approving another sha256: %d", w.Code)
	}
	r = form("/approvals/"+testID, good)
	r.AddCookie(cookie)
	if w := serve(h, r); w.Code != http.StatusSeeOther {
		t.Fatalf("the person's answer: %d %s", w.Code, w.Body)
	}
	if got := s.answered(); len(got) != 1 || got[0] != "approve" {
		t.Fatalf("answers: %v; want one approval", got)
	}
}

// TestPageShowsTheCallInert: the call's text is shown escaped (markup in
// an argument is text, not markup), every answer carries a strict
// Content-Security-Policy that allows no script and nothing from
// elsewhere, and the page names no other origin.
func TestPageShowsTheCallInert(t *testing.T) {
	h, _ := newPage(t, "arguments: {\"content\":\"<script>alert(1)</script><img src=x onerror=alert(2)>\"}\n")
	cookie, _ := login(t, h, testToken)
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8181/approvals/"+testID, nil)
	r.AddCookie(cookie)
	w := serve(h, r)
	body := w.Body.String()
	if strings.Contains(body, "<script") || strings.Contains(body, "<img") || !strings.Contains(body, "&lt;script&gt;") {
		t.Errorf("the call's text is not escaped:\n%s", body)
	}
	csp := w.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "form-action 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "script-src") || strings.Contains(body, "http://") || strings.Contains(body, "https://") {
		t.Errorf("the page allows a script or names another origin: %s\n%s", csp, body)
	}
	if w.Header().Get("X-Frame-Options") != "DENY" || w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("headers %v", w.Header())
	}
}
