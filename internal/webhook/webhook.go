// Package webhook tells a person of each new approval request an ask held
// out of band opened: it POSTs the request's summary, its redacted prompt,
// the approvals page's link and the approve command to a URL the operator
// configured (serve's and the proxy's --approval-webhook), as a Slack
// incoming webhook's payload or a generic JSON body, signed with
// HMAC-SHA256 of the body under a shared secret (SignatureHeader).
//
// Delivery is in the background and bounded: one worker, a queue of at
// most QueueSize events (past it an event is dropped and logged), each
// attempt under Timeout, at most Attempts attempts with a doubling pause.
// A failing receiver only loses notifications: an ask stays an ask put on
// hold (the agent's refusal and `mcpx-policy approvals` still name it),
// never an allow. It holds no policy fact.
package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcpx/mcpx-policy/internal/trust"
)

// Defaults of Options' zero values.
const (
	DefaultTimeout   = 5 * time.Second
	DefaultAttempts  = 3
	DefaultBackoff   = time.Second
	DefaultQueueSize = 64
	// MinSecret is the shortest secret ReadSecret accepts.
	MinSecret = 16
	// maxSecretFile caps what ReadSecret reads.
	maxSecretFile = 64 << 10
)

// Options configure a Notifier.
type Options struct {
	// URL is where events are POSTed: http or https. Required.
	URL string
	// Secret signs every body (SignatureHeader). Required, at least
	// MinSecret bytes.
	Secret []byte
	// Format is FormatSlack (the default) or FormatJSON.
	Format string
	// Timeout bounds one attempt (DefaultTimeout); Attempts caps the
	// attempts of one event (DefaultAttempts); Backoff is the pause after
	// the first failed attempt, doubled after each (DefaultBackoff);
	// QueueSize caps the events waiting (DefaultQueueSize).
	Timeout   time.Duration
	Attempts  int
	Backoff   time.Duration
	QueueSize int
	// Logger gets a line per dropped event and per event that could not be
	// delivered; nil discards.
	Logger *slog.Logger
	// Now is the clock of the generic body's "sent"; nil means time.Now.
	Now func() time.Time
}

// Notifier delivers events in the background. Its methods are safe for
// concurrent use.
type Notifier struct {
	opts   Options
	client *http.Client
	queue  chan job

	mu     sync.Mutex
	closed bool
	stop   chan struct{} // closed by Close: no more waiting between attempts
	done   chan struct{} // closed when the worker ends
}

type job struct {
	ev       Event
	delivery string
	sent     time.Time
}

// New checks opts and starts the Notifier's worker; Close stops it.
func New(opts Options) (*Notifier, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webhook: %q is not an http or https URL", opts.URL)
	}
	if len(opts.Secret) < MinSecret {
		return nil, fmt.Errorf("webhook: the signing secret is shorter than %d bytes", MinSecret)
	}
	if _, err := Body(opts.Format, Event{}, "", time.Time{}); err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultAttempts
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	n := &Notifier{
		opts: opts,
		// A redirect would send the signed body where the operator did not
		// say: it is a failed attempt instead.
		client: &http.Client{Timeout: opts.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		queue:  make(chan job, opts.QueueSize),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go n.work()
	return n, nil
}

// Notify queues ev for delivery and returns at once. When the queue is
// full, or the Notifier is closed, ev is dropped (and logged): a
// notification is never worth holding up a decision.
func (n *Notifier) Notify(ev Event) {
	var raw [16]byte
	rand.Read(raw[:]) // never fails (crypto/rand)
	j := job{ev: ev, delivery: hex.EncodeToString(raw[:]), sent: n.opts.Now()}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		n.opts.Logger.Warn("webhook: closed; approval request not notified", "approval", ev.Request.ID)
		return
	}
	select {
	case n.queue <- j:
	default:
		n.opts.Logger.Warn("webhook: queue full; approval request not notified", "approval", ev.Request.ID, "queue", n.opts.QueueSize)
	}
}

// Close stops taking events and waits until those queued are delivered,
// or have failed, or ctx ends (what is left is dropped and logged). It
// returns ctx's error when it ran out of time.
func (n *Notifier) Close(ctx context.Context) error {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.queue)
	}
	n.mu.Unlock()
	select {
	case <-n.done:
		return nil
	case <-ctx.Done():
		n.mu.Lock()
		select {
		case <-n.stop:
		default:
			close(n.stop)
		}
		n.mu.Unlock()
		<-n.done
		return ctx.Err()
	}
}

func (n *Notifier) work() {
	defer close(n.done)
	for j := range n.queue {
		select {
		case <-n.stop:
			n.opts.Logger.Warn("webhook: stopped; approval request not notified", "approval", j.ev.Request.ID)
			continue
		default:
		}
		if err := n.deliver(j); err != nil {
			n.opts.Logger.Warn("webhook: approval request not notified", "approval", j.ev.Request.ID, "attempts", n.opts.Attempts, "err", err)
		}
	}
}

// deliver POSTs j, retrying a failure that may pass (no answer, 408, 429,
// 5xx) up to Attempts times.
func (n *Notifier) deliver(j job) error {
	body, err := Body(n.opts.Format, j.ev, j.delivery, j.sent)
	if err != nil {
		return err
	}
	sig := Sign(n.opts.Secret, body)
	pause := n.opts.Backoff
	for attempt := 1; ; attempt++ {
		retry, err := n.post(body, sig, j.delivery)
		if err == nil {
			return nil
		}
		if !retry || attempt >= n.opts.Attempts {
			return err
		}
		select {
		case <-time.After(pause):
		case <-n.stop:
			return fmt.Errorf("%w (stopped before attempt %d)", err, attempt+1)
		}
		pause *= 2
	}
}

// post makes one attempt; retry says whether another may pass.
func (n *Notifier) post(body []byte, sig, delivery string) (retry bool, err error) {
	req, err := http.NewRequest(http.MethodPost, n.opts.URL, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "mcpx-policy-webhook")
	req.Header.Set(SignatureHeader, sig)
	req.Header.Set(DeliveryHeader, delivery)
	resp, err := n.client.Do(req)
	if err != nil {
		return true, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		return false, nil
	case s == http.StatusRequestTimeout, s == http.StatusTooManyRequests, s >= 500:
		return true, fmt.Errorf("the receiver answered %s", resp.Status)
	default:
		return false, fmt.Errorf("the receiver answered %s", resp.Status)
	}
}

// ReadSecret reads the signing secret from a file the operator trusts with
// a secret (trust.ReadTrusted: a regular file of this user or root that no
// other user may write); exposed warns when others may read it. Its
// content, spaces trimmed, must be at least MinSecret bytes.
func ReadSecret(path string) (secret []byte, exposed string, err error) {
	b, exposed, err := trust.ReadTrusted(path, trust.Secret, maxSecretFile)
	var te *trust.Error
	switch {
	case errors.As(err, &te):
		return nil, "", fmt.Errorf("webhook secret file %w (%s)", te, te.Hint)
	case err != nil:
		return nil, "", fmt.Errorf("webhook secret file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if len(s) < MinSecret {
		return nil, "", fmt.Errorf("%s: the webhook secret is shorter than %d characters (make one with: (umask 077; head -c 32 /dev/urandom | base64 > %s))", path, MinSecret, path)
	}
	return []byte(s), exposed, nil
}
