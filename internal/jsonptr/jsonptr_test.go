package jsonptr_test

import (
	"slices"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/jsonptr"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{"", "a", "a/b", "~", "~0", "~1", "/~/", "~01", "é/ü~"} {
		if got := jsonptr.Unescape(jsonptr.Escape(tok)); got != tok {
			t.Errorf("Unescape(Escape(%q)) = %q", tok, got)
		}
		if got := jsonptr.Tokens(jsonptr.Join("x", tok)); !slices.Equal(got, []string{"x", tok}) {
			t.Errorf("Tokens(Join(x, %q)) = %q", tok, got)
		}
		if got := jsonptr.Last(jsonptr.Append("/x", tok)); got != tok {
			t.Errorf("Last(Append(/x, %q)) = %q", tok, got)
		}
	}
}

// TestRFC6901: the examples of RFC 6901 section 5 and the order of
// unescaping (section 4: ~1 first, then ~0).
func TestRFC6901(t *testing.T) {
	t.Parallel()
	for ptr, want := range map[string][]string{
		"":       nil,
		"/foo":   {"foo"},
		"/a~1b":  {"a/b"},
		"/m~0n":  {"m~n"},
		"/~01":   {"~1"},
		"/ ":     {" "},
		"/":      {""},
		"/c%d":   {"c%d"},
		"/foo/0": {"foo", "0"},
	} {
		if got := jsonptr.Tokens(ptr); !slices.Equal(got, want) {
			t.Errorf("Tokens(%q) = %q, want %q", ptr, got, want)
		}
	}
	if got := jsonptr.Join("a/b", "m~n"); got != "/a~1b/m~0n" {
		t.Errorf("Join = %q", got)
	}
	if got := jsonptr.Join(); got != "" {
		t.Errorf("Join() = %q", got)
	}
	if got := jsonptr.Last("a~1b"); got != "a~1b" {
		t.Errorf("Last of no pointer = %q, want it as it is", got)
	}
}
