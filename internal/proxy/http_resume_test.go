package proxy_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseEvent is one event of a stream, its fields as sent.
type sseEvent struct{ name, id, retry, data string }

// sseReader reads the events of a response one at a time.
type sseReader struct{ r *bufio.Reader }

func (s sseReader) next(t *testing.T) (sseEvent, bool) {
	t.Helper()
	var e sseEvent
	seen := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return e, false
		}
		line = strings.TrimRight(line, "\n")
		if line == "" {
			if seen {
				return e, true
			}
			continue
		}
		seen = true
		k, v, _ := strings.Cut(line, ": ")
		switch k {
		case "event":
			e.name = v
		case "id":
			e.id = v
		case "retry":
			e.retry = v
		case "data":
			e.data = v
		}
	}
}

// open sends req (in session, with Last-Event-ID lastID when not "")
// and returns the response; cancel drops it.
func (r *httpRig) open(t *testing.T, method, session, lastID, body string) (*http.Response, sseReader, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, r.url, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return resp, sseReader{bufio.NewReader(resp.Body)}, cancel
}

// TestHTTPResumablePOSTStreams: a --listen session's POST answering a
// call is an event stream that starts with a priming event (an id, no
// data) and can be resumed with Last-Event-ID: a client that dropped the
// stream before the answer gets it on the GET that resumes it — kept
// while it was away, or sent when it comes —, the call having run once;
// a resumption after the answer replays only what came after the id; and
// no session can resume another session's stream.
func TestHTTPResumablePOSTStreams(t *testing.T) {
	t.Parallel()
	r := newHTTPRig(t, time.Minute)
	a := r.initialize(t)
	b := r.initialize(t)

	// A call answered on its POST: the priming event first, then the
	// answer with the next id.
	resp, events, _ := r.open(t, "POST", a, "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("a call's POST: Content-Type %q", ct)
	}
	prime, _ := events.next(t)
	name, ok := strings.CutSuffix(prime.id, "_0")
	if !ok || len(name) < 26 || prime.data != "" || prime.retry == "" {
		t.Fatalf("the first event %+v; want a priming event: an id <stream>_0, a retry, no data", prime)
	}
	answer, _ := events.next(t)
	if answer.id != name+"_1" || !strings.Contains(answer.data, `"id":2`) || !strings.Contains(answer.data, `echo`) {
		t.Fatalf("the answer event %+v; want id %s_1 and the call's result", answer, name)
	}
	// Resumed after the answer: from the priming event, the answer again;
	// from the answer, nothing.
	_, again, _ := r.open(t, "GET", a, prime.id, "")
	if e, _ := again.next(t); e != answer {
		t.Fatalf("resumed from the priming event: %+v; want the answer %+v", e, answer)
	}
	if e, more := again.next(t); more {
		t.Fatalf("resumed from the priming event: %+v after the answer; want the stream to end", e)
	}
	_, after, _ := r.open(t, "GET", a, answer.id, "")
	if e, more := after.next(t); more {
		t.Fatalf("resumed from the answer: %+v; want nothing", e)
	}

	// The client drops the stream of a call still running; the answer
	// comes while it is away and is kept for it.
	_, events, drop := r.open(t, "POST", a, "", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gate","arguments":{}}}`)
	prime, _ = events.next(t)
	drop()
	r.gate <- struct{}{}
	_, resumed, _ := r.open(t, "GET", a, prime.id, "")
	if e, _ := resumed.next(t); !strings.Contains(e.data, `"id":3`) || !strings.Contains(e.data, "opened") || !strings.HasSuffix(e.id, "_1") {
		t.Fatalf("resumed after the answer came: %+v; want the kept answer", e)
	}

	// Resumed while the call still runs: the answer comes on the GET.
	_, events, drop = r.open(t, "POST", a, "", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"gate","arguments":{}}}`)
	prime, _ = events.next(t)
	drop()
	resp, resumed, _ = r.open(t, "GET", a, prime.id, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resuming a running call's stream: %s", resp.Status)
	}
	r.gate <- struct{}{}
	if e, _ := resumed.next(t); !strings.Contains(e.data, `"id":4`) || !strings.Contains(e.data, "opened") {
		t.Fatalf("resumed before the answer came: %+v; want the answer when it comes", e)
	}
	if n := r.gateRuns.Load(); n != 2 {
		t.Fatalf("the server ran %d calls; want 2: a resumption never sends the call again", n)
	}

	// Another session cannot resume the stream, nor can anyone resume a
	// made-up one: 400, and none of the events.
	for _, tc := range []struct{ session, id string }{{b, prime.id}, {b, answer.id}, {a, "AAAAAAAAAAAAAAAAAAAAAAAAAA_0"}, {a, "nonsense"}, {a, name + "_9"}} {
		resp, _, _ := r.open(t, "GET", tc.session, tc.id, "")
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), "opened") || strings.Contains(string(body), "echo") {
			t.Errorf("GET with Last-Event-ID %q in session %s: %s %q; want 400 and no events", tc.id, tc.session[:6], resp.Status, body)
		}
	}
}
