package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/oauth2"
)

// wire is the HTTP round tripper under the SDK's Streamable HTTP client
// transport (ConnectRemote). It adds the bearer token, for the endpoint's
// origin only, and the MCP-Protocol-Version an initialize negotiated; and it checks
// every frame of every successful answer strictly (decodeFrame) before the
// SDK reads it. A refused frame is handed to the SDK as a stand-in: a
// notification whose method (marker) holds 128 random bits the server
// never sees, with the number of the refusal; remoteConn.Read turns it
// back into the *FrameError, which the proxy handles as it does a stdio
// server's. An event stream is re-written in a canonical form the SDK
// reads exactly as the check read it.
type wire struct {
	base    http.RoundTripper
	scheme  string // the endpoint's: the token goes there only
	host    string
	token   string
	tokens  oauth2.TokenSource // instead of token: OAuth client credentials
	marker  string
	version atomic.Pointer[string] // the negotiated protocol version
	fail    func(error)            // ends the connection (remoteConn.fail)
	sse     bool                   // the legacy HTTP+SSE transport: its endpoint event passes (endpoint)

	mu      sync.Mutex
	refused map[int64]*FrameError
	next    int64
}

// maxRefusedWaiting bounds the refused frames the SDK holds before
// remoteConn.Read takes them; past it the connection ends.
const maxRefusedWaiting = 64

// maxErrorBody caps the body of an answer that is not a success (the SDK
// reads it for an error message).
const maxErrorBody = 64 << 10

// maxRetryMillis caps the reconnection delay a server may ask for with an
// event's retry field; a longer one is dropped.
const maxRetryMillis = 60_000

var errTooManyRefused = errors.New("the server sent too many frames that were refused")

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Del("Authorization")
	if req.URL.Scheme == w.scheme && req.URL.Host == w.host {
		switch {
		case w.tokens != nil:
			tok, err := w.tokens.Token()
			if err != nil {
				return nil, fmt.Errorf("getting a token from the OAuth token endpoint: %w", err)
			}
			req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		case w.token != "":
			req.Header.Set("Authorization", "Bearer "+w.token)
		}
	}
	if v := w.version.Load(); v != nil && req.Header.Get("Mcp-Protocol-Version") == "" {
		req.Header.Set("Mcp-Protocol-Version", *v)
	}
	resp, err := w.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	switch {
	case ok && ct == "application/json":
		body, err := readFrameBody(resp.Body)
		resp.Body.Close()
		if err != nil {
			if errors.Is(err, errFrameTooLarge) {
				w.fail(err)
			}
			return nil, err
		}
		body = w.check(body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
	case ok && ct == "text/event-stream":
		resp.Body = &eventStream{w: w, body: resp.Body, r: bufio.NewReaderSize(resp.Body, 64<<10)}
	default:
		resp.Body = cappedBody{io.LimitReader(resp.Body, maxErrorBody), resp.Body}
	}
	return resp, nil
}

// check returns frame when the strict check passes it, else the stand-in
// for its refusal.
func (w *wire) check(frame []byte) []byte {
	_, err := decodeFrame(frame)
	if err == nil {
		return frame
	}
	var fe *FrameError
	if !errors.As(err, &fe) {
		fe = &FrameError{Err: err}
	}
	w.mu.Lock()
	if len(w.refused) >= maxRefusedWaiting {
		w.mu.Unlock()
		w.fail(errTooManyRefused)
		return []byte(`{"jsonrpc":"2.0","method":"` + w.marker + `","params":{"n":-1}}`)
	}
	n := w.next
	w.next++
	w.refused[n] = fe
	w.mu.Unlock()
	return []byte(`{"jsonrpc":"2.0","method":"` + w.marker + `","params":{"n":` + strconv.FormatInt(n, 10) + `}}`)
}

// refusal takes the refusal the stand-in numbered n stands for.
func (w *wire) refusal(n int64) *FrameError {
	w.mu.Lock()
	defer w.mu.Unlock()
	fe := w.refused[n]
	delete(w.refused, n)
	if fe == nil {
		fe = &FrameError{Err: errTooManyRefused}
	}
	return fe
}

// readFrameBody reads a JSON answer of at most MaxFrame bytes.
func readFrameBody(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxFrame+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFrame {
		return nil, errFrameTooLarge
	}
	return b, nil
}

type cappedBody struct {
	io.Reader
	io.Closer
}

// eventStream re-writes a text/event-stream body as it is read: each event
// is parsed as the SDK parses it (lines ending in "\n", "field: value"
// with the value's spaces trimmed, consecutive data lines joined by "\n",
// a blank line or the end dispatching it) and written again with only the
// fields the SDK reads: id, retry (a delay up to maxRetryMillis), and
// data — for an event named "message" or unnamed, its frame checked
// (wire.check). A line that is not a field, or an event above MaxFrame,
// ends the connection, as an oversized stdio line does.
type eventStream struct {
	w        *wire
	body     io.ReadCloser
	r        *bufio.Reader
	out      bytes.Buffer
	err      error
	endpoint bool // the endpoint event passed (legacy SSE)
}

func (s *eventStream) Read(p []byte) (int, error) {
	for s.out.Len() == 0 {
		if s.err != nil {
			return 0, s.err
		}
		s.err = s.event()
	}
	return s.out.Read(p)
}

func (s *eventStream) Close() error { return s.body.Close() }

// event reads one event into out; it returns io.EOF after the last.
func (s *eventStream) event() error {
	var id, retry, name string
	var data []byte
	hasID, hasData := false, false
	size := 0
	for {
		line, err := readLine(s.r)
		line = bytes.TrimRight(line, "\r\n")
		end := errors.Is(err, io.EOF)
		if err != nil && !end {
			if errors.Is(err, errFrameTooLarge) {
				s.w.fail(err)
			}
			return err
		}
		size += len(line)
		if size > MaxFrame {
			s.w.fail(errFrameTooLarge)
			return errFrameTooLarge
		}
		if len(line) == 0 {
			if err := s.emit(id, hasID, retry, name, data, hasData); err != nil {
				s.w.fail(err)
				return err
			}
			if end {
				return io.EOF
			}
			return nil
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if !found {
			err := fmt.Errorf("the server's event stream has a line that is not a field (%d bytes)", len(line))
			s.w.fail(err)
			return err
		}
		value = bytes.TrimSpace(value)
		switch string(field) {
		case "id":
			id, hasID = string(value), true
		case "event":
			name = string(value)
		case "retry":
			retry = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		}
	}
}

// emit writes one parsed event in canonical form; with the legacy SSE
// transport, the first endpoint event too (messageEndpoint), and an
// endpoint it refuses ends the connection.
func (s *eventStream) emit(id string, hasID bool, retry, name string, data []byte, hasData bool) error {
	if name == "endpoint" && s.w.sse {
		if s.endpoint {
			return nil // the messages' URL is the first one's
		}
		if err := s.w.messageEndpoint(data); err != nil {
			return err
		}
		s.endpoint = true
		fmt.Fprintf(&s.out, "event: endpoint\ndata: %s\n\n", data)
		return nil
	}
	if hasID {
		fmt.Fprintf(&s.out, "id: %s\n", id)
	}
	if n, err := strconv.ParseUint(retry, 10, 32); err == nil && n <= maxRetryMillis {
		fmt.Fprintf(&s.out, "retry: %d\n", n)
	}
	if hasData && len(data) > 0 && (name == "" || name == "message") {
		for _, line := range bytes.Split(s.w.check(data), []byte{'\n'}) {
			s.out.WriteString("data: ")
			s.out.Write(line)
			s.out.WriteByte('\n')
		}
	}
	if s.out.Len() > 0 {
		s.out.WriteByte('\n')
	}
	return nil
}

// messageEndpoint checks the URL of the legacy SSE transport's endpoint
// event, which the SDK resolves against the endpoint's URL and POSTs every
// message to: it must be on the endpoint's origin, where the token goes
// and nowhere else, so that a server cannot send the calls (or have the
// proxy send them) elsewhere.
func (w *wire) messageEndpoint(data []byte) error {
	u, err := url.Parse(string(data))
	if err == nil && (u.Scheme == "" && u.Host == "" || u.Scheme == w.scheme && u.Host == w.host) && u.User == nil {
		return nil
	}
	return fmt.Errorf("the server's message endpoint (%d bytes) is not on %s://%s, the origin of its URL", len(data), w.scheme, w.host)
}
