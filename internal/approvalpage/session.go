package approvalpage

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sessions: a person logs in once with the operator token and gets a
// session cookie, so that the token is typed once and never travels again.
// A session is stateless — the cookie holds its expiry and a random
// nonce, signed with a key derived from the token — so the page holds
// nothing per session (no footprint), sessions hold across the gateways of
// a fleet that share the token, and a new token ends every session.

// cookieName is the session cookie's name.
const cookieName = "mcpx_policy_approvals"

// keys are the secrets a Handler signs with, both derived from the token.
type keys struct {
	signing []byte // signs session cookies and form tokens
	token   [sha256.Size]byte
}

func newKeys(token string) keys {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("mcpx-policy approvals page session key v1"))
	return keys{signing: m.Sum(nil), token: sha256.Sum256([]byte(token))}
}

// tokenOK compares a token given at login with the operator token in
// constant time (over their sha256, so the length leaks neither).
func (k keys) tokenOK(given string) bool {
	sum := sha256.Sum256([]byte(strings.TrimSpace(given)))
	return subtle.ConstantTimeCompare(sum[:], k.token[:]) == 1
}

func (k keys) mac(purpose, v string) string {
	m := hmac.New(sha256.New, k.signing)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(v))
	return hex.EncodeToString(m.Sum(nil))
}

// newSession is a session cookie's value that lives until exp:
// "<unix exp>.<32 hex nonce>.<hex HMAC of both>".
func (k keys) newSession(exp time.Time) string {
	var nonce [16]byte
	rand.Read(nonce[:]) // never fails (crypto/rand)
	payload := strconv.FormatInt(exp.Unix(), 10) + "." + hex.EncodeToString(nonce[:])
	return payload + "." + k.mac("session", payload)
}

// session returns the valid session cookie value of r, or "".
func (k keys) session(r *http.Request, now time.Time) string {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	payload, sig, ok := cutLast(c.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(k.mac("session", payload))) {
		return ""
	}
	expS, _, ok := strings.Cut(payload, ".")
	if !ok {
		return ""
	}
	exp, err := strconv.ParseInt(expS, 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return ""
	}
	return c.Value
}

// csrf is the token a session's forms carry: bound to the session, so a
// page of another origin (which cannot read it) cannot make one.
func (k keys) csrf(session string) string { return k.mac("csrf", session) }

// csrfOK checks a form's token against the session's, in constant time.
func (k keys) csrfOK(session, given string) bool {
	return session != "" && hmac.Equal([]byte(given), []byte(k.csrf(session)))
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// setSession sets the session cookie: HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it), Path the page's, Secure
// when the page is served over TLS.
func setSession(w http.ResponseWriter, r *http.Request, value string, exp time.Time) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: Path, Expires: exp,
		MaxAge: int(time.Until(exp).Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// clearSession removes the session cookie.
func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Path, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}
