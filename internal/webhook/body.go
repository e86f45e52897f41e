package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpx/mcpx-policy/decision"
)

// Event is one approval request a person is told of: the request as the
// store gives it (its prompt redacted), the approvals page's link to it
// ("" when no page answers it) and the command that approves it.
type Event struct {
	Request decision.ApprovalRequest
	Link    string
	Approve string
}

// The body formats a Notifier sends.
const (
	// FormatSlack is what a Slack incoming webhook (and the chat tools
	// that take its payloads) accepts: {"text", "blocks"}.
	FormatSlack = "slack"
	// FormatJSON is the generic shape (Generic), for any other receiver.
	FormatJSON = "json"
)

// EventType is the generic body's "type".
const EventType = "mcpx-policy.approval.requested"

// Generic is the body of FormatJSON (docs/approvals.md#webhook): the
// delivery's id (the same on every retry, for a receiver to drop
// duplicates), when it was first sent, a one-line summary, the approval
// request (with its redacted prompt, and the prompt's text), the page's
// link and the approve command.
type Generic struct {
	Type     string                   `json:"type"`
	Delivery string                   `json:"delivery"`
	Sent     time.Time                `json:"sent"`
	Text     string                   `json:"text"`
	Approval decision.ApprovalRequest `json:"approval"`
	Prompt   string                   `json:"prompt_text"`
	Link     string                   `json:"link,omitempty"`
	Approve  string                   `json:"approve"`
}

// Slack limits a body keeps within: a header's text, a section's, the
// number of blocks.
const (
	slackHeader   = 150
	slackSection  = 2900
	slackSections = 40
)

// Summary is the one-line text of an event: what waits, and until when.
func Summary(ev Event) string {
	r := ev.Request
	return fmt.Sprintf("Approval requested: %s.%s (request %s, sha256 %s) waits for a person until %s",
		r.Server, r.Tool, r.ID, r.SHA256, r.Expires.UTC().Format(time.RFC3339))
}

// Body is the JSON body of ev in format, its delivery id and time given.
// It carries the redacted prompt the store keeps, never an argument as
// sent: nothing secret the prompt hides.
func Body(format string, ev Event, delivery string, sent time.Time) ([]byte, error) {
	switch format {
	case FormatJSON:
		return json.Marshal(Generic{Type: EventType, Delivery: delivery, Sent: sent.UTC(), Text: Summary(ev),
			Approval: ev.Request, Prompt: ev.Request.Text, Link: ev.Link, Approve: ev.Approve})
	case FormatSlack, "":
		return json.Marshal(slackBody(ev))
	}
	return nil, fmt.Errorf("webhook: unknown format %q (want %s or %s)", format, FormatSlack, FormatJSON)
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

// slackBody is {"text", "blocks"}: a header, the prompt as plain text (so
// nothing in it is read as markup or a link) in sections of at most
// slackSection characters, what to do (the link, the command), and the
// request's facts. Every mrkdwn string is escaped (&, <, >).
func slackBody(ev Event) map[string]any {
	r := ev.Request
	blocks := []slackBlock{{Type: "header", Text: &slackText{Type: "plain_text", Text: clip("Approval requested: "+r.Server+"."+r.Tool, slackHeader)}}}
	chunks := split(strings.TrimRight(r.Text, "\n"), slackSection)
	if len(chunks) > slackSections {
		chunks = append(chunks[:slackSections-1], "… (the prompt is longer: see the approvals page, or `mcpx-policy approvals`)")
	}
	for _, c := range chunks {
		blocks = append(blocks, slackBlock{Type: "section", Text: &slackText{Type: "plain_text", Text: c}})
	}
	var do []string
	if ev.Link != "" {
		do = append(do, "<"+mrkdwn(ev.Link)+"|Open it on the approvals page>")
	}
	if ev.Approve != "" {
		do = append(do, "or run `"+mrkdwn(ev.Approve)+"`")
	}
	if len(do) > 0 {
		blocks = append(blocks, slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: strings.Join(do, " ")}})
	}
	blocks = append(blocks, slackBlock{Type: "context", Elements: []slackText{{Type: "mrkdwn",
		Text: mrkdwn(fmt.Sprintf("request %s · sha256 %s · expires %s", r.ID, r.SHA256, r.Expires.UTC().Format(time.RFC3339)))}}})
	return map[string]any{"text": mrkdwn(Summary(ev)), "blocks": blocks}
}

// mrkdwn escapes what Slack reads as markup in mrkdwn text.
func mrkdwn(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// clip cuts s to at most n characters, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// split cuts s into pieces of at most n characters, at line ends where it
// can.
func split(s string, n int) []string {
	var out []string
	for utf8.RuneCountInString(s) > n {
		r := []rune(s)
		cut := string(r[:n])
		if i := strings.LastIndexByte(cut, '\n'); i > 0 {
			cut = cut[:i+1]
		}
		out = append(out, cut)
		s = s[len(cut):]
	}
	if s != "" || len(out) == 0 {
		out = append(out, s)
	}
	return out
}

// SignatureHeader is the header that signs a body: "sha256=" and the hex
// HMAC-SHA256 of the body with the shared secret.
const SignatureHeader = "X-Mcpx-Policy-Signature"

// DeliveryHeader names the delivery (the generic body's "delivery"), the
// same on every retry of it.
const DeliveryHeader = "X-Mcpx-Policy-Delivery"

// Sign is the SignatureHeader value of body with secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig (a SignatureHeader value) signs body with
// secret, in constant time: what a receiver checks.
func Verify(secret, body []byte, sig string) bool {
	return hmac.Equal([]byte(sig), []byte(Sign(secret, body)))
}
