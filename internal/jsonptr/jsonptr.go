// Package jsonptr spells JSON Pointers (RFC 6901) the one way every part
// of the module writes and reads them: violation paths, the arguments a
// recording redacts, the places a rule's argument names. It is a leaf: it
// imports only the standard library.
package jsonptr

import "strings"

var (
	escaper   = strings.NewReplacer("~", "~0", "/", "~1")
	unescaper = strings.NewReplacer("~1", "/", "~0", "~")
)

// Escape escapes one reference token: "~" becomes "~0" and "/" becomes
// "~1".
func Escape(token string) string { return escaper.Replace(token) }

// Unescape reverses Escape: "~1" becomes "/" and "~0" becomes "~", in one
// pass from the left (so "~01" is "~1", as RFC 6901 says).
func Unescape(token string) string { return unescaper.Replace(token) }

// Join is the pointer of the tokens, each escaped: "" for none, else "/"
// before each token.
func Join(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(Escape(t))
	}
	return b.String()
}

// Append is ptr with one more token, escaped.
func Append(ptr, token string) string { return ptr + "/" + Escape(token) }

// Tokens splits ptr into its reference tokens, unescaped: nil for "" (the
// whole document), and for a pointer that does not start with "/" the
// whole string as one token.
func Tokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	if ptr[0] != '/' {
		return []string{Unescape(ptr)}
	}
	parts := strings.Split(ptr[1:], "/")
	for i, p := range parts {
		parts[i] = Unescape(p)
	}
	return parts
}

// Last is the last reference token of ptr, unescaped; ptr as it is when
// it holds no "/" ("" included): it is no pointer.
func Last(ptr string) string {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return ptr
	}
	return Unescape(ptr[i+1:])
}
