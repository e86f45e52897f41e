package statedir_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// TestDecodeVersioned: what every versioned state file refuses, with the
// words an operator reads in the unreadable-file error.
func TestDecodeVersioned(t *testing.T) {
	t.Parallel()
	errNewer := errors.New("newer")
	type doc struct {
		Version int      `json:"version"`
		Items   []string `json:"items"`
	}
	for _, tc := range []struct{ in, want string }{
		{"  \n", "the file is empty"},
		{`{"version": 1`, "not valid json"},
		{`{"items": []}`, "no version field"},
		{`{"version": 2, "items": []}`, "newer: file version 2, this build reads version 1"},
		{`{"version": 0, "items": []}`, "unsupported file version 0"},
		{`{"version": 1, "items": [], "extra": true}`, `unknown field "extra"`},
		{`{"version": 1, "items": ["a"]}`, ""},
	} {
		var d doc
		err := statedir.DecodeVersioned([]byte(tc.in), 1, errNewer, &d)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.in, err, tc.want)
		}
		if tc.want == "" && (d.Version != 1 || len(d.Items) != 1) {
			t.Errorf("%s: decoded %+v", tc.in, d)
		}
		if strings.HasPrefix(tc.want, "newer") && !errors.Is(err, errNewer) {
			t.Errorf("%s: %v does not match errNewer", tc.in, err)
		}
	}
}
