package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpx/mcpx-policy/internal/loopback"
)

// RemoteOptions configure ConnectRemote.
type RemoteOptions struct {
	// Token is the bearer token sent to the endpoint's origin (never to
	// another, never after a redirect, which is not followed); "" sends
	// none. It appears in no error, log line or decision.
	Token string
	// OAuth, when set, obtains the bearer token with the OAuth 2.0 client
	// credentials grant instead of Token (which must then be "").
	OAuth *ClientCredentials
	// RootCAs verify the server's certificate; nil means the system's
	// roots (SSL_CERT_FILE and SSL_CERT_DIR are honoured). Verification
	// cannot be turned off.
	RootCAs *x509.CertPool
	// PassClientAuthorization sends, instead of Token or OAuth (which
	// must then be unset), the bearer token the proxy's own client gave
	// for this connection: for a --listen session, the one its initialize
	// carried; for a stateless request, its own (HTTPHandler with
	// PassAuthorization puts it on ConnectRemote's ctx). None is sent when
	// the client gave none. It is treated as Token is: sent to the
	// endpoint's origin only, in no error, log line or decision.
	PassClientAuthorization bool
	// SSE speaks the legacy HTTP+SSE transport (MCP 2024-11-05) instead
	// of Streamable HTTP: the endpoint is the server's event stream (GET),
	// whose first event names the URL messages are POSTed to, which must
	// be on the endpoint's origin (the token goes nowhere else); the
	// answers come on the stream. A POST that fails loses its request's
	// answer; the stream's end ends the connection, as a process's exit
	// does.
	SSE bool
}

// clientTokenKey carries the bearer token of the proxy's client on a
// context (withClientToken).
type clientTokenKey struct{}

// withClientToken returns ctx carrying token, the bearer token of the
// client a connection is made for.
func withClientToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, clientTokenKey{}, token)
}

// bearerToken is the token of an Authorization header "Bearer <token>"
// given once; "" for anything else.
func bearerToken(h http.Header) string {
	v := h.Values("Authorization")
	if len(v) != 1 {
		return ""
	}
	scheme, token, ok := strings.Cut(v[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// ClientCredentials obtain a remote upstream's bearer token with the
// OAuth 2.0 client credentials grant (RFC 6749, section 4.4): a POST to
// TokenURL (https, or http to loopback; TLS verified, no redirect
// followed, 30 s) with ClientID and ClientSecret in HTTP Basic
// authentication and the Scopes, if any. The token is kept until it
// expires and then asked for again. The secret and the tokens appear in
// no error, log line or decision.
type ClientCredentials struct {
	TokenURL     string
	ClientID     string
	ClientSecret string
	Scopes       []string
}

// Timeouts of a remote upstream's connections. No answer has a deadline
// of its own: a call may run long (Options.CallTimeout bounds writes).
const (
	RemoteDialTimeout = 10 * time.Second
	// RemoteNoticeTimeout bounds the POST of a notification or of an
	// answer to the server's request, which the server acknowledges at
	// once (202).
	RemoteNoticeTimeout = 30 * time.Second
)

// ErrInsecureURL is matched by the error of a remote upstream URL that
// would send calls (and a token) in clear beyond loopback, or carries
// credentials.
var ErrInsecureURL = errors.New("insecure MCP server URL")

// CheckRemoteURL checks the URL of a remote MCP server: https, or http to
// a loopback address; no user:password part (a token goes in a file or
// the environment); no fragment. It returns the URL as logs may show it
// (the query, which may hold a key, replaced by "?…").
func CheckRemoteURL(endpoint string) (shown string, err error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInsecureURL, err)
	}
	shown = u.Scheme + "://" + u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		shown += "?…"
	}
	switch {
	case u.Host == "":
		return "", fmt.Errorf("%w: %s names no host", ErrInsecureURL, shown)
	case u.User != nil:
		return "", fmt.Errorf("%w: %s carries a user or password: give a bearer token in a file or the environment instead", ErrInsecureURL, shown)
	case u.Fragment != "" || u.RawFragment != "":
		return "", fmt.Errorf("%w: %s has a fragment", ErrInsecureURL, shown)
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback.Is(u.Host):
	case u.Scheme == "http":
		return "", fmt.Errorf("%w: %s is plain http beyond loopback: calls and the token would travel in clear; use https", ErrInsecureURL, shown)
	default:
		return "", fmt.Errorf("%w: %s: the scheme must be https (or http to a loopback address)", ErrInsecureURL, shown)
	}
	return shown, nil
}

// ConnectRemote returns the Conn to the MCP server at endpoint over
// Streamable HTTP (or, with opts.SSE, the legacy HTTP+SSE transport),
// through the official SDK's client transport: each request is a POST,
// answered with JSON or an event stream (with SSE, on the one stream). Nothing is
// sent until the first Write. The connection checks every frame the
// server sends strictly, as a stdio connection does (wire), and turns what
// HTTP loses into what the proxy already handles: a request whose HTTP
// exchange fails, or whose event stream ends without its answer, is read
// as a *FrameError with its id (a write's outcome is then unknown); a
// session the server dropped (404) or any other failure of the
// connection ends it, as a server process's exit ends a stdio one. Close
// ends the server's session (DELETE, at most 5 s) and every exchange in
// progress. Once the client has sent notifications/initialized, the
// session's standalone stream (GET) is read too (standalone).
func ConnectRemote(ctx context.Context, endpoint string, opts RemoteOptions) (Conn, error) {
	shown, err := CheckRemoteURL(endpoint)
	if err != nil {
		return nil, err
	}
	if opts.PassClientAuthorization {
		if opts.Token != "" || opts.OAuth != nil {
			return nil, errors.New("pass the client's bearer token or give one, not both")
		}
		opts.Token, _ = ctx.Value(clientTokenKey{}).(string)
	}
	if strings.ContainsAny(opts.Token, "\r\n\x00") {
		return nil, errors.New("the bearer token holds a line break or a NUL")
	}
	if opts.OAuth != nil {
		if opts.Token != "" {
			return nil, errors.New("give a bearer token or OAuth client credentials, not both")
		}
		if _, err := CheckRemoteURL(opts.OAuth.TokenURL); err != nil {
			return nil, fmt.Errorf("the OAuth token URL: %w", err)
		}
	}
	u, _ := url.Parse(endpoint)
	marker := make([]byte, 16)
	rand.Read(marker)
	pairs := []string{endpoint, shown, u.String(), shown}
	if u.RawQuery != "" {
		pairs = append(pairs, u.RawQuery, "…")
	}
	if opts.Token != "" {
		pairs = append(pairs, opts.Token, "[token]")
	}
	if opts.OAuth != nil && opts.OAuth.ClientSecret != "" {
		pairs = append(pairs, opts.OAuth.ClientSecret, "[secret]")
	}
	c := &remoteConn{
		shown:  shown,
		scrubs: strings.NewReplacer(pairs...),
		msgs:   make(chan readResult),
		lost:   make(chan *FrameError),
		failed: make(chan struct{}),
		done:   make(chan struct{}),
		side:   make(chan jsonrpc.Message),
		posts:  make(chan struct{}, maxPending+maxDeciding),
	}
	dialer := &net.Dialer{Timeout: RemoteDialTimeout, KeepAlive: 30 * time.Second}
	base := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    RemoteDialTimeout,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	c.base = base
	c.wire = &wire{base: base, scheme: u.Scheme, host: u.Host, token: opts.Token,
		marker: "mcpx-policy/refused/" + hex.EncodeToString(marker), fail: c.fail, refused: map[int64]*FrameError{}, sse: opts.SSE}
	client := &http.Client{Transport: c.wire, CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("the MCP server redirected: give the URL it redirects to (redirects are not followed, so that the token goes nowhere else)")
	}}
	c.client, c.endpoint = client, endpoint
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if o := opts.OAuth; o != nil {
		tokenClient := &http.Client{Transport: base, Timeout: RemoteNoticeTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the OAuth token endpoint redirected: give the URL it redirects to (redirects are not followed, so that the secret goes nowhere else)")
		}}
		cc := &clientcredentials.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: o.TokenURL, Scopes: o.Scopes, AuthStyle: oauth2.AuthStyleInHeader}
		c.wire.tokens = cc.TokenSource(context.WithValue(c.ctx, oauth2.HTTPClient, tokenClient))
	}
	var t mcp.Transport = &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client, DisableStandaloneSSE: true}
	if opts.SSE {
		// The wire caps an event at MaxFrame as it reads it; its canonical
		// form adds a "data: " per line.
		t = &mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: client, MaxEventSize: 2 * MaxFrame}
	}
	c.sdk, err = t.Connect(c.ctx)
	if err != nil {
		c.cancel()
		return nil, c.scrub(err)
	}
	go c.pump()
	return c, nil
}

// remoteConn is the Conn of ConnectRemote.
type remoteConn struct {
	sdk    mcp.Connection
	wire   *wire
	base   *http.Transport
	shown  string
	scrubs *strings.Replacer // never shown: the URL as given (its query), the token
	ctx    context.Context
	cancel context.CancelFunc

	client   *http.Client
	endpoint string
	listen   sync.Once            // the standalone stream is opened once
	side     chan jsonrpc.Message // from the standalone stream (listen)
	msgs     chan readResult      // from pump
	lost     chan *FrameError     // requests whose HTTP exchange failed
	posts    chan struct{}        // a slot per request being posted
	wg       sync.WaitGroup       // the posts

	failOnce sync.Once
	failErr  error
	failed   chan struct{}

	closeOnce sync.Once
	closeErr  error
	done      chan struct{}

	mu    sync.Mutex
	inits map[jsonrpc.ID]bool // initialize requests sent
	ended error               // the error Read returned last
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// pump hands the SDK's messages to Read until the connection ends.
func (c *remoteConn) pump() {
	for {
		msg, err := c.sdk.Read(c.ctx)
		select {
		case c.msgs <- readResult{msg, err}:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *remoteConn) fail(err error) {
	c.failOnce.Do(func() {
		c.failErr = err
		close(c.failed)
	})
}

// scrub rewrites err without the URL as given (the query may hold a key)
// or the token.
func (c *remoteConn) scrub(err error) error {
	if err == nil {
		return nil
	}
	return &scrubbedError{msg: c.scrubs.Replace(err.Error()), err: err}
}

// scrubbedError keeps err's identity (errors.Is) with a text that shows no
// secret.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }

func (e *scrubbedError) Is(target error) bool { return errors.Is(e.err, target) }

func (c *remoteConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.mu.Lock()
	ended := c.ended
	c.mu.Unlock()
	if ended != nil {
		return nil, ended
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, io.EOF
		case <-c.failed:
			return nil, c.end(c.failErr)
		case fe := <-c.lost:
			return nil, fe
		case m := <-c.side:
			msg, err := c.inspect(m)
			if msg == nil && err == nil {
				continue
			}
			return msg, err
		case r := <-c.msgs:
			if r.err != nil {
				select {
				case <-c.failed:
					return nil, c.end(c.failErr)
				default:
				}
				return nil, c.end(r.err)
			}
			msg, err := c.inspect(r.msg)
			if msg == nil && err == nil {
				continue
			}
			return msg, err
		}
	}
}

// end records the error that ended the connection.
func (c *remoteConn) end(err error) error {
	err = c.scrub(fmt.Errorf("the MCP server at %s: %w", c.shown, err))
	c.mu.Lock()
	if c.ended == nil {
		c.ended = err
	}
	err = c.ended
	c.mu.Unlock()
	return err
}

// inspect turns a stand-in back into its refusal and an answer the SDK
// made up (its event stream ended without it) into a refusal of that
// answer; it learns the protocol version from initialize's answer.
func (c *remoteConn) inspect(msg jsonrpc.Message) (jsonrpc.Message, error) {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.Method == c.wire.marker {
			var p struct{ N int64 }
			json.Unmarshal(m.Params, &p)
			return nil, c.wire.refusal(p.N)
		}
	case *jsonrpc.Response:
		var wireErr *jsonrpc.Error
		if m.Error != nil && !errors.As(m.Error, &wireErr) {
			return nil, &FrameError{ID: m.ID, Err: fmt.Errorf("the answer was lost: %v", c.scrub(m.Error))}
		}
		c.mu.Lock()
		init := c.inits[m.ID]
		delete(c.inits, m.ID)
		c.mu.Unlock()
		if init && m.Error == nil {
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(m.Result, &r) == nil && validVersion(r.ProtocolVersion) {
				c.wire.version.Store(&r.ProtocolVersion)
			}
		}
	}
	return msg, nil
}

// validVersion: a protocol version fit for a header (2025-06-18).
func validVersion(v string) bool {
	if v == "" || len(v) > 32 {
		return false
	}
	for _, r := range v {
		if !(r >= '0' && r <= '9' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.') {
			return false
		}
	}
	return true
}

// Write posts msg. A request is posted off the caller's goroutine (its
// answer may come only when the call ends): Write returns once it is on
// its way, and a failure comes back from Read as a *FrameError with the
// request's id. A notification or an answer is posted before Write
// returns, within RemoteNoticeTimeout.
func (c *remoteConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-c.done:
		return io.ErrClosedPipe
	case <-c.failed:
		return c.scrub(c.failErr)
	default:
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		wctx, cancel := context.WithTimeout(c.ctx, RemoteNoticeTimeout)
		defer cancel()
		err := c.sdk.Write(wctx, msg)
		if err == nil && ok && req.Method == "notifications/initialized" {
			c.listen.Do(func() {
				if sid := sessionID(c.sdk); sid != "" {
					c.wg.Add(1)
					go c.standalone(sid)
				}
			})
		}
		return c.scrub(err)
	}
	if req.Method == "initialize" {
		c.mu.Lock()
		if c.inits == nil {
			c.inits = map[jsonrpc.ID]bool{}
		}
		if len(c.inits) < 4 {
			c.inits[req.ID] = true
		}
		c.mu.Unlock()
	}
	select {
	case c.posts <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return io.ErrClosedPipe
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() { <-c.posts }()
		err := c.sdk.Write(c.ctx, req)
		if err == nil {
			return
		}
		if errors.Is(err, mcp.ErrSessionMissing) {
			c.fail(err)
		}
		fe := &FrameError{ID: req.ID, Err: fmt.Errorf("the HTTP exchange failed: %v", c.scrub(err))}
		select {
		case c.lost <- fe:
		case <-c.done:
		}
	}()
	return nil
}

// Close ends the server's session and every exchange in progress.
func (c *remoteConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.scrub(c.sdk.Close())
		c.cancel()
		close(c.done)
		c.wg.Wait()
		c.base.CloseIdleConnections()
	})
	return c.closeErr
}

func (c *remoteConn) checksFrames() {}

// sessionID is the session the server gave the SDK's connection ("" for
// none).
func sessionID(conn mcp.Connection) string {
	if c, ok := conn.(interface{ SessionID() string }); ok {
		return c.SessionID()
	}
	return ""
}

// standaloneTries is how many times in a row the standalone stream is
// opened again without an event coming on it.
const standaloneTries = 5

// standalone reads the session's standalone stream (GET), which carries
// what the server sends outside a call's answer (list_changed, its own
// requests), once the client has initialized: through the wire, so each
// event is checked as a call's are, and resumed with Last-Event-ID when it
// ends. A server that offers none (405, another answer) is left alone; a
// session the server dropped (404) ends the connection.
func (c *remoteConn) standalone(sid string) {
	defer c.wg.Done()
	lastID := ""
	for tries := 0; tries < standaloneTries; {
		req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, c.endpoint, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := c.client.Do(req)
		switch {
		case c.ctx.Err() != nil:
			if err == nil {
				resp.Body.Close()
			}
			return
		case err != nil:
			tries++
		case resp.StatusCode == http.StatusNotFound:
			resp.Body.Close()
			c.fail(fmt.Errorf("the standalone stream: %w", mcp.ErrSessionMissing))
			return
		case resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
			resp.Body.Close()
			return
		default:
			if c.events(resp.Body, &lastID) {
				tries = 0
			} else {
				tries++
			}
			resp.Body.Close()
		}
		select {
		case <-c.done:
			return
		case <-time.After(time.Second):
		}
	}
}

// events hands the events of a stream the wire re-wrote (canonical: "id: ",
// "data: " lines, a blank line after each event) to Read; it reports
// whether any came.
func (c *remoteConn) events(body io.Reader, lastID *string) bool {
	br := bufio.NewReaderSize(body, 64<<10)
	var data []byte
	any := false
	for {
		line, err := readLine(br)
		switch {
		case err != nil:
			return any
		case bytes.HasPrefix(line, []byte("id: ")):
			*lastID = string(line[len("id: "):])
		case bytes.HasPrefix(line, []byte("data: ")):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, line[len("data: "):]...)
		case len(line) == 0 && data != nil:
			any = true
			msg, err := jsonrpc.DecodeMessage(data)
			data = nil
			if err != nil {
				continue // the wire checked it: it decodes
			}
			select {
			case c.side <- msg:
			case <-c.done:
				return any
			}
		}
	}
}
