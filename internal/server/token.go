package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpx/mcpx-policy/internal/trust"
)

// MinTokenLength is the shortest bearer token ReadToken accepts.
const MinTokenLength = 16

// maxTokenFile caps what ReadToken reads: a token is short.
const maxTokenFile = 64 << 10

// TokenError is a token file ReadToken refuses: why, and what an operator
// does about it.
type TokenError struct {
	Err  error
	Hint string
}

func (e *TokenError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *TokenError) Unwrap() error { return e.Err }

// ReadToken reads the bearer token of the operator routes (serve
// --token-file): a file the operator trusts with a secret, so it is
// checked as the state dir's files are (trust.ReadTrusted, a
// secret): a regular file, owned by this process's user or by root, that
// no other user may write; exposed is the warning to print
// when other users may read it ("" otherwise). Its content, spaces
// trimmed, must be at least MinTokenLength characters. Every refusal is a
// *TokenError with a hint.
func ReadToken(path string) (token, exposed string, err error) {
	b, exposed, err := trust.ReadTrusted(path, trust.Secret, maxTokenFile)
	var se *trust.Error
	switch {
	case errors.As(err, &se):
		return "", "", &TokenError{Err: fmt.Errorf("token file %w", se), Hint: se.Hint}
	case err != nil:
		return "", "", &TokenError{Err: fmt.Errorf("token file: %w", err)}
	}
	token = strings.TrimSpace(string(b))
	if len(token) < MinTokenLength {
		return "", "", &TokenError{Err: fmt.Errorf("%s: the token is shorter than %d characters", path, MinTokenLength),
			Hint: "generate one with: (umask 077; head -c 32 /dev/urandom | base64 > " + path + ")"}
	}
	return token, exposed, nil
}
