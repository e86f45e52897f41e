package approvalpage

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

// css is the page's only style, inline; the Content-Security-Policy allows
// exactly it, by its hash, and nothing else: no script, no image, no font,
// no frame, nothing from elsewhere.
const css = `body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:1.5rem auto;padding:0 1rem;color:#1a1a1a}` +
	`h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}` +
	`pre{background:#f4f4f4;border:1px solid #ccc;padding:.75rem;white-space:pre-wrap;overflow-wrap:anywhere}` +
	`code{overflow-wrap:anywhere}table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #ddd}` +
	`.state{font-weight:bold}.pending{color:#8a5a00}.approved{color:#0a6b2d}.declined{color:#a01c1c}` +
	`form.inline{display:inline}button{font:inherit;padding:.35rem .9rem;margin:.25rem .5rem .25rem 0}` +
	`button.approve{background:#0a6b2d;color:#fff;border:1px solid #064d20}button.decline{background:#fff;color:#a01c1c;border:1px solid #a01c1c}` +
	`.note{color:#555}`

// csp is the page's Content-Security-Policy.
var csp = func() string {
	sum := sha256.Sum256([]byte(css))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}()

// secureHeaders are set on every answer of the page.
func secureHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // not no-referrer: with it, a form's POST carries "Origin: null" and is refused as cross-origin
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

const head = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
	`<meta name="referrer" content="same-origin"><title>mcpx-policy approvals</title><style>` + css + `</style></head><body>`

const tail = `</body></html>`

const logoutForm = `<form class="inline" method="post" action="/approvals/logout"><input type="hidden" name="csrf" value="{{.CSRF}}"><button>Log out</button></form>`

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"when": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"in":   func(t, now time.Time) string { return t.Sub(now).Round(time.Second).String() },
}).Parse(`
{{define "login"}}` + head + `<h1>mcpx-policy approvals: log in</h1>
{{if .Failed}}<p class="declined">That is not the token.</p>{{end}}
<p>Give the operator token (the file serve or the proxy was started with, <code>--token-file</code>) to answer approval requests. It is sent once; a session cookie keeps you logged in.</p>
<form method="post" action="/approvals/login"><input type="hidden" name="next" value="{{.Next}}">
<label>Token <input type="password" name="token" autocomplete="current-password" required autofocus></label>
<button>Log in</button></form>` + tail + `{{end}}

{{define "list"}}` + head + `<h1>Approval requests</h1>
<h2>Waiting for an answer</h2>
{{if .Pending}}<table><tr><th>call</th><th>sha256</th><th>asked</th><th>expires</th></tr>
{{range .Pending}}<tr><td><a href="/approvals/{{.ID}}">{{.Server}}.{{.Tool}}</a></td><td><code>{{.SHA256}}</code></td><td>{{when .Created}}</td><td>{{when .Expires}}</td></tr>
{{end}}</table>{{else}}<p class="note">Nothing is waiting.</p>{{end}}
<h2>Answered, not used yet</h2>
{{if .Answered}}<table><tr><th>call</th><th>state</th><th>answered</th><th>expires</th></tr>
{{range .Answered}}<tr><td><a href="/approvals/{{.ID}}">{{.Server}}.{{.Tool}}</a></td><td class="state {{.State}}">{{.State}}</td><td>{{when .Answered}}</td><td>{{when .Expires}}</td></tr>
{{end}}</table>{{else}}<p class="note">None.</p>{{end}}
<h2>Answered on this page</h2>
{{if .History}}<table><tr><th>when</th><th>call</th><th>answer</th><th>sha256</th><th>from</th></tr>
{{range .History}}<tr><td>{{when .At}}</td><td>{{.Server}}.{{.Tool}} <span class="note">({{.ID}})</span></td><td class="state {{.State}}">{{.State}}</td><td><code>{{.SHA256}}</code></td><td>{{.Remote}}</td></tr>
{{end}}</table>{{else}}<p class="note">No answer was given here since the process started.</p>{{end}}
<p>` + logoutForm + `</p>` + tail + `{{end}}

{{define "request"}}` + head + `<h1>Confirm this call to {{.R.Server}}.{{.R.Tool}}?</h1>
<p class="state {{.R.State}}">{{if eq .R.State "pending"}}Waiting for your answer{{else if eq .R.State "approved"}}Approved: the same call, sent again before {{when .R.Expires}}, runs once{{else}}Declined: the call will not run with it{{end}}</p>
<p>This is exactly what approving lets run (secret values redacted):</p>
<pre id="prompt">{{.R.Text}}</pre>
<table>
<tr><th>request</th><td><code id="request-id">{{.R.ID}}</code></td></tr>
<tr><th>sha256</th><td><code id="sha256">{{.R.SHA256}}</code></td></tr>
{{if .R.Surface}}<tr><th>asked over</th><td>{{.R.Surface}}</td></tr>{{end}}
<tr><th>asked</th><td>{{when .R.Created}}</td></tr>
<tr><th>expires</th><td>{{when .R.Expires}} (in {{in .R.Expires .Now}})</td></tr>
</table>
{{if eq .R.State "pending"}}
<form class="inline" method="post" action="/approvals/{{.R.ID}}"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="sha256" value="{{.R.SHA256}}"><input type="hidden" name="action" value="approve"><button class="approve" id="approve">Approve this exact call, once</button></form>
{{end}}{{if ne .R.State "declined"}}<form class="inline" method="post" action="/approvals/{{.R.ID}}"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="action" value="decline"><button class="decline" id="decline">Decline</button></form>{{end}}
<p><a href="/approvals">All requests</a> ` + logoutForm + `</p>` + tail + `{{end}}

{{define "gone"}}` + head + `<h1>Approval request {{.ID}}</h1>
{{if eq .Answered "approved"}}<p class="state approved">Approved, and already used: the call ran once.</p>
{{else if .Expired}}<p class="state declined">It expired: the call did not run. Have the agent send it again for a new request.</p>
{{else}}<p>No such request is waiting: it was used (the call ran), it expired, or it was never made here.</p>{{end}}
<p><a href="/approvals">All requests</a> ` + logoutForm + `</p>` + tail + `{{end}}
`))

type loginPage struct {
	Next   string
	Failed bool
}

type listPage struct {
	CSRF     string
	Pending  []decision.ApprovalRequest
	Answered []decision.ApprovalRequest
	History  []answer
}

type requestPage struct {
	R    decision.ApprovalRequest
	CSRF string
	Now  time.Time
}

type gonePage struct {
	ID       string
	Expired  bool
	Answered string
	CSRF     string
}

// render writes page p with status.
func (h *Handler) render(w http.ResponseWriter, status int, p any) {
	var tmpl string
	switch p.(type) {
	case loginPage:
		tmpl = "login"
	case listPage:
		tmpl = "list"
	case requestPage:
		tmpl = "request"
	case gonePage:
		tmpl = "gone"
	}
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, tmpl, p); err != nil {
		h.opts.Logger.Error("approvals page: rendering failed", "err", err)
		h.plain(w, http.StatusInternalServerError, "the page could not be rendered")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// plain answers with a short text.
func (h *Handler) plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(msg + "\n"))
}
