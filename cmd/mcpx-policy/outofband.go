package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/approvalpage"
	"github.com/mcpx/mcpx-policy/internal/webhook"
)

// The flags of asks held out of band (docs/approvals.md), shared by serve
// and proxy: the approvals page, the link refusals and webhooks name, and
// the webhook.
type outOfBandFlags struct {
	page          *bool
	pageURL       *string
	webhook       *string
	webhookSecret *string
	webhookFormat *string
}

func addOutOfBandFlags(fs *flag.FlagSet) *outOfBandFlags {
	return &outOfBandFlags{
		page:          fs.Bool("approvals-page", false, "serve the approvals page at /approvals (needs --token-file)"),
		pageURL:       fs.String("approvals-url", "", "the approvals page's URL that refusals and webhooks link to (default with --approvals-page: http://ADDR/approvals)"),
		webhook:       fs.String("approval-webhook", "", "POST each new approval request held out of band to this URL"),
		webhookSecret: fs.String("approval-webhook-secret-file", "", "file holding the secret the webhook's bodies are signed with (HMAC-SHA256)"),
		webhookFormat: fs.String("approval-webhook-format", webhook.FormatSlack, "the webhook's body: slack (text and blocks) or json (the generic shape)"),
	}
}

// check reports a usage problem of the flags; listens says whether the
// process serves HTTP (serve, proxy --listen), token whether it has an
// operator token.
func (f *outOfBandFlags) check(listens, token bool) error {
	switch {
	case *f.page && !listens:
		return errors.New("--approvals-page needs an HTTP listener (--listen): over stdio, run 'mcpx-policy serve --approvals-page' on the same state dir and give the proxy --approvals-url")
	case *f.page && !token:
		return errors.New("--approvals-page needs --token-file: the page is never open to whoever reaches it")
	case *f.webhook != "" && *f.webhookSecret == "":
		return errors.New("--approval-webhook needs --approval-webhook-secret-file: every body is signed")
	case *f.webhook == "" && *f.webhookSecret != "":
		return errors.New("--approval-webhook-secret-file without --approval-webhook")
	case *f.webhookFormat != webhook.FormatSlack && *f.webhookFormat != webhook.FormatJSON:
		return fmt.Errorf("unknown --approval-webhook-format %q (want slack or json)", *f.webhookFormat)
	}
	if *f.pageURL != "" {
		u, err := url.Parse(*f.pageURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--approvals-url %q is not an http or https URL", *f.pageURL)
		}
	}
	return nil
}

// link is the approvals page's URL refusals and webhooks name: the
// --approvals-url given, else with --approvals-page the page on the
// listener ln; "" when neither.
func (f *outOfBandFlags) link(ln net.Listener) string {
	switch {
	case *f.pageURL != "":
		return strings.TrimRight(*f.pageURL, "/")
	case *f.page && ln != nil:
		return "http://" + ln.Addr().String() + approvalpage.Path
	}
	return ""
}

// outOfBand is what the flags make: the webhook's Notifier (nil without
// one) and the Options fields it sets.
type outOfBand struct {
	link     string
	notifier *webhook.Notifier
}

// open reads the webhook's secret and starts its Notifier, and sets opts'
// ApprovalsPage and OnApprovalRequest (the webhook's event takes the
// command and the link from the held refusal).
func (f *outOfBandFlags) open(ln net.Listener, opts *mcpxpolicy.Options, logger *slog.Logger, stderr io.Writer) (*outOfBand, error) {
	o := &outOfBand{link: f.link(ln)}
	opts.ApprovalsPage = o.link
	if *f.webhook == "" {
		return o, nil
	}
	secret, exposed, err := webhook.ReadSecret(*f.webhookSecret)
	if err != nil {
		return nil, err
	}
	if exposed != "" {
		fmt.Fprintf(stderr, "mcpx-policy: warning: webhook secret file %s\n", exposed)
	}
	n, err := webhook.New(webhook.Options{URL: *f.webhook, Secret: secret, Format: *f.webhookFormat, Logger: logger})
	if err != nil {
		return nil, err
	}
	o.notifier = n
	opts.OnApprovalRequest = func(req decision.ApprovalRequest, held decision.Decision) {
		// The held refusal's own command and link: what the agent shows.
		first := held.First()
		ev := webhook.Event{Request: req}
		ev.Approve, _ = first.Details["approve"].(string)
		ev.Link, _ = first.Details["page"].(string)
		n.Notify(ev)
	}
	return o, nil
}

// close delivers what the webhook still has queued, for at most a few
// seconds (a stdio proxy ends when its client does, often right after the
// refusal that opened a request).
func (o *outOfBand) close() {
	if o == nil || o.notifier == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*webhook.DefaultTimeout)
	defer cancel()
	o.notifier.Close(ctx)
}

// handler is the approvals page over eng's approvals, or nil without
// --approvals-page.
func (f *outOfBandFlags) handler(eng *mcpxpolicy.Engine, token string, logger *slog.Logger) (http.Handler, error) {
	if !*f.page {
		return nil, nil
	}
	return approvalpage.New(approvalpage.Options{Approvals: eng.Approvals(), Token: token, Logger: logger,
		SessionTTL: approvalpage.DefaultSessionTTL, Now: time.Now})
}
