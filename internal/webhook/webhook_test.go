package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

var secret = []byte("a-shared-secret-of-the-operator")

// receiver is a local webhook receiver that answers with the statuses in
// order (the last one from then on) and keeps what it got.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	got      []delivery
}

type delivery struct {
	body          []byte
	sig, delivery string
	contentType   string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, delivery{b, r.Header.Get(SignatureHeader), r.Header.Get(DeliveryHeader), r.Header.Get("Content-Type")})
	status := rc.statuses[min(len(rc.got), len(rc.statuses))-1]
	rc.mu.Unlock()
	w.WriteHeader(status)
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

func event() Event {
	return Event{
		Request: decision.ApprovalRequest{ID: "0123456789abcdef0123456789abcdef", SHA256: strings.Repeat("ab", 32), Server: "fs", Tool: "write_file",
			State: decision.ApprovalPending, Expires: time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC),
			Text: "Confirm this call to fs.write_file?\n  arguments: {\"api_key\":\"[REDACTED]\",\"note\":\"<!channel> *bold*\"}\n"},
		Link:    "http://127.0.0.1:8181/approvals/0123456789abcdef0123456789abcdef",
		Approve: "mcpx-policy approve 0123456789abcdef0123456789abcdef --sha256 " + strings.Repeat("ab", 32),
	}
}

// notify delivers ev through a Notifier to a receiver answering statuses,
// and returns what the receiver got once the Notifier is closed.
func notify(t *testing.T, format string, statuses ...int) []delivery {
	t.Helper()
	rc := &receiver{statuses: statuses}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	n, err := New(Options{URL: srv.URL, Secret: secret, Format: format, Backoff: time.Millisecond, Attempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	n.Notify(event())
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rc.deliveries()
}

// TestWebhookSignedGenericBody: the generic body names the request, its
// redacted prompt, the link and the command; it is signed with the
// secret (a receiver's Verify takes it, and refuses it altered or under
// another secret).
func TestWebhookSignedGenericBody(t *testing.T) {
	got := notify(t, FormatJSON, 200)
	if len(got) != 1 {
		t.Fatalf("%d deliveries; want 1", len(got))
	}
	d := got[0]
	if !Verify(secret, d.body, d.sig) || Verify([]byte("another-secret-of-someone-else"), d.body, d.sig) ||
		Verify(secret, append(d.body, ' '), d.sig) || d.contentType != "application/json" {
		t.Fatalf("signature %q over %s does not verify as it should", d.sig, d.body)
	}
	var g Generic
	if err := json.Unmarshal(d.body, &g); err != nil {
		t.Fatal(err)
	}
	ev := event()
	if g.Type != EventType || g.Delivery != d.delivery || g.Approval.ID != ev.Request.ID || g.Link != ev.Link || g.Approve != ev.Approve ||
		g.Prompt != ev.Request.Text || !strings.Contains(g.Text, ev.Request.SHA256) {
		t.Fatalf("generic body %+v", g)
	}
}

// TestWebhookSlackBody: the Slack shape is {"text", "blocks"}; the prompt
// is plain text (a mention or markup in an argument is not read as such),
// and the link and the command are given.
func TestWebhookSlackBody(t *testing.T) {
	got := notify(t, FormatSlack, 200)
	var body struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
			Text *struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"text"`
		} `json:"blocks"`
	}
	if len(got) != 1 || json.Unmarshal(got[0].body, &body) != nil || body.Text == "" || len(body.Blocks) < 3 {
		t.Fatalf("slack body %s", got[0].body)
	}
	var prompt, do string
	for _, b := range body.Blocks {
		if b.Text == nil {
			continue
		}
		if strings.Contains(b.Text.Text, "<!channel>") {
			prompt = b.Text.Type
		}
		if strings.Contains(b.Text.Text, "approvals page") {
			do = b.Text.Text
		}
	}
	if prompt != "plain_text" {
		t.Errorf("the prompt is in a %q block; want plain_text", prompt)
	}
	ev := event()
	if !strings.Contains(do, "<"+ev.Link+"|") || !strings.Contains(do, ev.Approve) {
		t.Errorf("what to do: %q", do)
	}
}

// TestWebhookRetriesBounded: a failure that may pass (5xx) is retried,
// the same delivery each time, at most Attempts times; one that will not
// (4xx) is not retried; a redirect is not followed.
func TestWebhookRetriesBounded(t *testing.T) {
	if got := notify(t, FormatJSON, 503, 200); len(got) != 2 || got[0].delivery != got[1].delivery || string(got[0].body) != string(got[1].body) {
		t.Errorf("503 then 200: %d deliveries", len(got))
	}
	if got := notify(t, FormatJSON, 500); len(got) != 3 {
		t.Errorf("always 500: %d attempts; want 3", len(got))
	}
	if got := notify(t, FormatJSON, 400); len(got) != 1 {
		t.Errorf("400: %d attempts; want 1", len(got))
	}
	if got := notify(t, FormatJSON, 302); len(got) != 1 {
		t.Errorf("302: %d attempts; want 1 (not followed)", len(got))
	}
}

// TestWebhookNeverBlocks: a receiver that never answers costs at most the
// timeout per attempt, and Notify returns at once whatever the queue
// holds; past the queue's size an event is dropped, not waited for.
func TestWebhookNeverBlocks(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	defer srv.Close()
	defer close(hang)
	n, err := New(Options{URL: srv.URL, Secret: secret, Timeout: 50 * time.Millisecond, Attempts: 1, QueueSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		n.Notify(event()) // returns at once: the test would hang otherwise
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatalf("Close: %v; the queued events should have timed out and ended", err)
	}
}

// TestWebhookOptions: no URL, a URL of another scheme, a short secret or
// an unknown format is refused.
func TestWebhookOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"no url":       {Secret: secret},
		"file url":     {URL: "file:///etc/passwd", Secret: secret},
		"short secret": {URL: "http://127.0.0.1:1/", Secret: []byte("short")},
		"format":       {URL: "http://127.0.0.1:1/", Secret: secret, Format: "xml"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
