// Package approvalpage is the approvals page that `serve --approvals-page`
// and `proxy --listen --approvals-page` serve at /approvals: the approval
// requests of the state dir, each with the exact call as its prompt shows
// it (redacted, every byte it binds), a form to approve or decline it,
// and the answers given on the page. A person opens it from the link a
// refused agent, a webhook or a URL elicitation showed them, logs in once
// with the operator token, and answers; the agent's same call, sent
// again, then runs once (docs/approvals.md).
//
// It is a small HTML page with no script and no external asset (inline
// CSS allowed by its hash in a strict Content-Security-Policy), served
// same-origin only: every page but the login form needs the session
// cookie the token grants (HttpOnly, SameSite=Strict), every form carries
// a token bound to the session, a POST from another origin is refused,
// and a loopback listener refuses a Host that is not a loopback name (DNS
// rebinding). It holds no policy fact: it shows and answers requests
// through the SDK's Approvals handle.
package approvalpage

import (
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/loopback"
)

// Path is where the page is served: Path lists the requests, Path/ID shows
// and answers one, Path/login and Path/logout start and end a session.
const Path = "/approvals"

// Defaults of Options' zero values.
const (
	// DefaultSessionTTL is how long a login lasts.
	DefaultSessionTTL = 8 * time.Hour
	// MaxHistory is how many answers given on the page it remembers (in
	// memory, newest first; the oldest goes).
	MaxHistory = 100
	// maxForm caps a form's body.
	maxForm = 16 << 10
)

// Store is what the page reads and answers: *mcpxpolicy.Approvals.
type Store interface {
	List() ([]decision.ApprovalRequest, error)
	Get(id string) (decision.ApprovalRequest, error)
	Approve(id, sha256 string) (decision.ApprovalRequest, error)
	Decline(id string) (decision.ApprovalRequest, error)
}

// Options configure a Handler.
type Options struct {
	// Approvals is the store the page shows and answers. Required.
	Approvals Store
	// Token is the operator token a person logs in with (serve's and the
	// proxy's --token-file). Required: the page is never open.
	Token string
	// Logger gets a line per login and per answer; nil discards.
	Logger *slog.Logger
	// SessionTTL is how long a login lasts; 0 means DefaultSessionTTL.
	SessionTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Handler serves the page. It is safe for concurrent use.
type Handler struct {
	opts Options
	keys keys

	mu      sync.Mutex
	history []answer // newest first, at most MaxHistory
}

// answer is one answer given on the page.
type answer struct {
	At     time.Time
	ID     string
	Server string
	Tool   string
	SHA256 string
	State  decision.ApprovalState
	Remote string
}

// New returns the page's handler. It fails without a store or a token.
func New(opts Options) (*Handler, error) {
	if opts.Approvals == nil {
		return nil, errors.New("approvalpage: no approval store")
	}
	if strings.TrimSpace(opts.Token) == "" {
		return nil, errors.New("approvalpage: the approvals page needs the operator token (--token-file)")
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{opts: opts, keys: newKeys(strings.TrimSpace(opts.Token))}, nil
}

// Link is the page's link to request id under base, the page's URL
// (http://HOST:PORT/approvals).
func Link(base, id string) string { return strings.TrimRight(base, "/") + "/" + url.PathEscape(id) }

var idRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

var crossOrigin = http.NewCrossOriginProtection()

// ServeHTTP serves Path and everything under it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secureHeaders(w)
	if loopback.Rebound(r) {
		h.plain(w, http.StatusForbidden, "Host "+r.Host+" is not a loopback name")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, Path)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		h.plain(w, http.StatusNotFound, "not found")
		return
	}
	rest = strings.TrimPrefix(rest, "/")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost:
		if err := sameOrigin(r); err != nil {
			h.plain(w, http.StatusForbidden, err.Error())
			return
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
			h.plain(w, http.StatusUnsupportedMediaType, "a form is application/x-www-form-urlencoded")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			h.plain(w, http.StatusBadRequest, "the form does not read: "+err.Error())
			return
		}
	default:
		w.Header().Set("Allow", "GET, POST")
		h.plain(w, http.StatusMethodNotAllowed, "GET or POST")
		return
	}
	switch {
	case rest == "login" && r.Method == http.MethodPost:
		h.login(w, r)
		return
	case rest == "login":
		h.render(w, http.StatusOK, loginPage{Next: safeNext(r.URL.Query().Get("next"))})
		return
	}
	session := h.keys.session(r, h.opts.Now())
	if session == "" {
		next := r.URL.Path
		if r.Method != http.MethodGet {
			next = Path
		}
		h.render(w, http.StatusUnauthorized, loginPage{Next: safeNext(next)})
		return
	}
	if r.Method == http.MethodPost && !h.keys.csrfOK(session, r.PostForm.Get("csrf")) {
		h.plain(w, http.StatusForbidden, "the form's token is not this session's: reload the page and answer again")
		return
	}
	switch {
	case rest == "logout" && r.Method == http.MethodPost:
		clearSession(w, r)
		http.Redirect(w, r, Path+"/login", http.StatusSeeOther)
	case rest == "" && r.Method != http.MethodPost:
		h.list(w, session)
	case idRE.MatchString(rest) && r.Method == http.MethodPost:
		h.answer(w, r, rest)
	case idRE.MatchString(rest):
		h.request(w, session, rest, r.URL.Query().Get("answered"))
	default:
		h.plain(w, http.StatusNotFound, "no such page")
	}
}

// sameOrigin refuses a POST a page of another origin made: an Origin that
// is not this host, or a Sec-Fetch-Site that is not same-origin (Go's
// CrossOriginProtection), besides the SameSite=Strict cookie and the
// form's token.
func sameOrigin(r *http.Request) error {
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != r.Host {
			return fmt.Errorf("cross-origin request refused: Origin %q is not this page's", origin)
		}
	}
	if err := crossOrigin.Check(r); err != nil {
		return fmt.Errorf("cross-origin request refused: %v", err)
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin":
	default:
		return fmt.Errorf("cross-origin request refused: Sec-Fetch-Site %q", site)
	}
	return nil
}

// safeNext is where a login goes on to: a path of the page, else the list.
func safeNext(next string) string {
	if next == Path || (strings.HasPrefix(next, Path+"/") && !strings.ContainsAny(next, "\\?#") && path.Clean(next) == next) {
		return next
	}
	return Path
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostForm.Get("next"))
	if !h.keys.tokenOK(r.PostForm.Get("token")) {
		h.opts.Logger.Warn("approvals page: login refused (wrong token)", "remote", r.RemoteAddr)
		h.render(w, http.StatusUnauthorized, loginPage{Next: next, Failed: true})
		return
	}
	exp := h.opts.Now().Add(h.opts.SessionTTL)
	setSession(w, r, h.keys.newSession(exp), exp)
	h.opts.Logger.Info("approvals page: logged in", "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *Handler) list(w http.ResponseWriter, session string) {
	rs, err := h.opts.Approvals.List()
	if err != nil {
		h.storeError(w, err)
		return
	}
	p := listPage{CSRF: h.keys.csrf(session), History: h.recent()}
	for _, r := range rs {
		if r.State == decision.ApprovalPending {
			p.Pending = append(p.Pending, r)
		} else {
			p.Answered = append(p.Answered, r)
		}
	}
	h.render(w, http.StatusOK, p)
}

func (h *Handler) request(w http.ResponseWriter, session, id, answered string) {
	r, err := h.opts.Approvals.Get(id)
	if err != nil {
		if errors.Is(err, mcpxpolicy.ErrNotFound) || errors.Is(err, mcpxpolicy.ErrApprovalExpired) {
			h.render(w, http.StatusNotFound, gonePage{ID: id, Expired: errors.Is(err, mcpxpolicy.ErrApprovalExpired),
				Answered: answered, CSRF: h.keys.csrf(session)})
			return
		}
		h.storeError(w, err)
		return
	}
	h.render(w, http.StatusOK, requestPage{R: r, CSRF: h.keys.csrf(session),
		Now: h.opts.Now()})
}

// answer approves (action=approve, with the sha256 the person was shown)
// or declines (action=decline) request id, and shows it again.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, id string) {
	var req decision.ApprovalRequest
	var err error
	switch r.PostForm.Get("action") {
	case "approve":
		req, err = h.opts.Approvals.Approve(id, r.PostForm.Get("sha256"))
	case "decline":
		req, err = h.opts.Approvals.Decline(id)
	default:
		h.plain(w, http.StatusBadRequest, "the form says neither approve nor decline")
		return
	}
	switch {
	case errors.Is(err, mcpxpolicy.ErrNotFound), errors.Is(err, mcpxpolicy.ErrApprovalExpired):
		h.render(w, http.StatusNotFound, gonePage{ID: id, Expired: errors.Is(err, mcpxpolicy.ErrApprovalExpired),
			CSRF: h.keys.csrf(h.keys.session(r, h.opts.Now()))})
		return
	case errors.Is(err, mcpxpolicy.ErrMismatch):
		h.plain(w, http.StatusConflict, "the call changed since the page showed it: nothing was approved; reload the page")
		return
	case errors.Is(err, mcpxpolicy.ErrApprovalDeclined):
		h.plain(w, http.StatusConflict, "this request was declined already; a declined request stays declined")
		return
	case err != nil:
		h.storeError(w, err)
		return
	}
	h.remember(answer{At: h.opts.Now(), ID: req.ID, Server: req.Server, Tool: req.Tool, SHA256: req.SHA256, State: req.State, Remote: r.RemoteAddr})
	h.opts.Logger.Info("approval answered on the approvals page", "id", req.ID, "state", req.State, "server", req.Server,
		"tool", req.Tool, "sha256", req.SHA256, "remote", r.RemoteAddr)
	http.Redirect(w, r, Path+"/"+id+"?answered="+string(req.State), http.StatusSeeOther)
}

func (h *Handler) remember(a answer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.history = append([]answer{a}, h.history...)
	if len(h.history) > MaxHistory {
		h.history = h.history[:MaxHistory]
	}
}

func (h *Handler) recent() []answer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]answer(nil), h.history...)
}

func (h *Handler) storeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	msg := "the approval store failed: " + err.Error()
	if errors.Is(err, mcpxpolicy.ErrUnreadable) {
		status = http.StatusServiceUnavailable
		msg = "the approval store cannot be used: " + err.Error()
		if hint := mcpxpolicy.Hint(err); hint != "" {
			msg += " (" + hint + ")"
		}
	}
	h.opts.Logger.Error("approvals page", "err", err)
	h.plain(w, status, msg)
}
