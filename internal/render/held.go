package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

// Hold is an ask put on hold for a person to answer out of band — on a
// terminal, on the approvals page, from a webhook's link — because the
// surface that got it cannot put it to one: the approval request it waits
// as and how a person answers it.
type Hold struct {
	// ID, SHA256 and Expires are the approval request's.
	ID      string
	SHA256  string
	Expires time.Time
	// Approve is the command that approves it, as the process that holds
	// it spells it (with its state dir or config files).
	Approve string
	// Page is the approvals page's link to it; "" when no page is served.
	Page string
}

// Details keys of a held ask's ConfirmationUnavailable reason.
const (
	// HeldApproval is the approval request's id.
	HeldApproval = "approval"
	// HeldApprove is the command that approves it.
	HeldApprove = "approve"
	// HeldPage is the approvals page's link to it.
	HeldPage = "page"
)

// Held turns the ask d, held out of band as h, into the deny the surface
// that could not ask answers with: ConfirmationUnavailable (step
// confirmation, the ask reasons after it, as Unavailable), whose message
// says that the call waits for a person, how they approve it — h.Approve,
// and h.Page when there is one — and that the same call sent again after
// that runs once. Its details carry "approval", "sha256", "expires",
// "approve" and, with a page, "page". A decision that is not an ask is
// returned unchanged.
func Held(d decision.Decision, h Hold) decision.Decision {
	out := Unavailable(d)
	if d.Outcome != decision.Ask || len(out.Reasons) == 0 {
		return out
	}
	r := out.Reasons[0]
	codes, _ := r.Details["asked"].([]string)
	how := "run `" + h.Approve + "`"
	if h.Page != "" {
		how += " or open " + h.Page
	}
	r.Message = fmt.Sprintf("%s needs confirmation (%s) and this client cannot ask for it: it waits for a person as approval request %s until %s. "+
		"To approve, %s; then the same call, sent again unchanged, runs once. The call was not executed",
		callName(d.Call), strings.Join(codes, ", "), h.ID, h.Expires.UTC().Format(time.RFC3339), how)
	r.Details = map[string]any{
		"asked":      r.Details["asked"],
		HeldApproval: h.ID,
		"sha256":     h.SHA256,
		"expires":    h.Expires.UTC().Format(time.RFC3339),
		HeldApprove:  h.Approve,
	}
	if h.Page != "" {
		r.Details[HeldPage] = h.Page
	}
	out.Reasons = append([]decision.Reason{r}, out.Reasons[1:]...)
	return out
}

// heldHint is what an MCP refusal of a held ask tells the model to do:
// the ConfirmationUnavailable hint when the ask is held for a person.
const heldHint = "This call needs a person's approval and this client cannot ask for it. Tell the user: they approve it by running the command above" +
	"%s. Once they have, send exactly the same call again, unchanged: it runs once. Do not retry before the user says it is approved, and do not change the arguments (that needs a new approval)."

// isHeld reports whether the ConfirmationUnavailable reason r is a held
// ask's (Held).
func isHeld(r decision.Reason) bool {
	return r.Code == decision.ConfirmationUnavailable && stringIn(r.Details, HeldApprove) != ""
}

// URLElicitParams are the params of an MCP 2025-11-25 URL-mode
// elicitation/create: the client shows message and, with the person's
// consent, opens url; elicitationID names it in the
// notifications/elicitation/complete that says the person is done.
type URLElicitParams struct {
	Mode          string `json:"mode"`
	Message       string `json:"message"`
	URL           string `json:"url"`
	ElicitationID string `json:"elicitationId"`
}

// HeldURLElicitation is the URL-mode elicitation that sends the person
// behind an MCP client to the approvals page of the ask held as d (a Held
// deny), to answer it there. ok is false when d links no page.
func HeldURLElicitation(d decision.Decision, elicitationID string) (p URLElicitParams, ok bool) {
	first := d.First()
	page := stringIn(first.Details, HeldPage)
	if !isHeld(first) || page == "" {
		return URLElicitParams{}, false
	}
	msg := fmt.Sprintf("%s needs your approval before it runs. Open the approvals page to see the exact call "+
		"(approval request %s, sha256 %s) and approve or decline it there; it runs once when you approve.",
		callName(d.Call), stringIn(first.Details, HeldApproval), stringIn(first.Details, "sha256"))
	return URLElicitParams{Mode: "url", Message: msg, URL: page, ElicitationID: elicitationID}, true
}
