package redact_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
)

// TestEchoedSecretPastTheCut: a secret known by its key name in any
// element of a long array — past the MaxItems a rendering shows, too — is
// replaced in a reason that echoes it (an operator's message quoting the
// arguments).
func TestEchoedSecretPastTheCut(t *testing.T) {
	var users []any
	for i := range 2 * redact.MaxItems {
		users = append(users, map[string]any{"name": fmt.Sprintf("u%d", i), "password": fmt.Sprintf("hunter%03dsecret", i)})
	}
	args := map[string]any{"users": users}
	for _, i := range []int{0, redact.MaxItems - 2, redact.MaxItems - 1, redact.MaxItems, 2*redact.MaxItems - 1} {
		secret := fmt.Sprintf("hunter%03dsecret", i)
		d := decision.Denied(decision.CallRef{Server: "s", Tool: "t"}, decision.OverrideDeny, "s.t: user "+fmt.Sprint(i)+" signs in with "+secret)
		if msg := redact.Redact(d, args).Reasons[0].Message; strings.Contains(msg, secret) {
			t.Errorf("element %d: the message shows its password: %q", i, msg)
		}
	}
}
