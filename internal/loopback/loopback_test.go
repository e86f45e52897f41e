package loopback_test

import (
	"testing"

	"github.com/mcpx/mcpx-policy/internal/loopback"
)

func TestIs(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:8282": true, "127.0.0.1:80": true, "127.1.2.3": true,
		"[::1]:8282": true, "::1": true, "evil.example:8282": false, "10.0.0.1": false, "": false,
	} {
		if got := loopback.Is(host); got != want {
			t.Errorf("Is(%q) = %v; want %v", host, got, want)
		}
	}
}
