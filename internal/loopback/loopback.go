// Package loopback guards HTTP listeners bound to the loopback interface
// against DNS rebinding: a page on another site that resolves its own name
// to 127.0.0.1 must not reach a local service.
package loopback

import (
	"net"
	"net/http"
	"strings"
)

// Is reports whether a host or host:port names the loopback interface
// (localhost, 127.0.0.0/8, ::1).
func Is(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Rebound reports whether r arrived on a loopback listener under a Host
// that is not a loopback name: the mark of a DNS-rebinding request, which
// the caller refuses.
func Rebound(r *http.Request) bool {
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && Is(la.String()) && !Is(r.Host)
}
