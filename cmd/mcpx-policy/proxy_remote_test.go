package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProxyURLUsage: --url is refused, before anything is loaded or sent,
// when it would send calls in clear beyond loopback, carries a password,
// comes with a server command too, or a token flag (or --sse) comes
// without it; a token that is empty or holds a control character is
// refused without being shown.
func TestProxyURLUsage(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("  \n"), 0o600)
	spaced := filepath.Join(dir, "spaced")
	os.WriteFile(spaced, []byte("abc def-secret-part"), 0o600)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--url", "http://mcp.example.com/mcp"}, "plain http beyond loopback"},
		{[]string{"--url", "https://me:hunter2@mcp.example.com/mcp"}, "carries a user or password"},
		{[]string{"--url", "https://mcp.example.com/mcp", "--", "server"}, "not both"},
		{[]string{"--bearer-token-env", "X", "--", "server"}, "go with --url"},
		{[]string{"--sse", "--", "server"}, "--sse goes with --url"},
		{[]string{"--url", "https://mcp.example.com/mcp", "--bearer-token-file", empty}, "is empty"},
		{[]string{"--url", "https://mcp.example.com/mcp", "--bearer-token-file", spaced}, "a space or a control character"},
		{[]string{"--url", "https://mcp.example.com/mcp", "--bearer-token-file", spaced, "--bearer-token-env", "X"}, "give one of"},
		// OAuth client credentials.
		{[]string{"--oauth-token-url", "https://auth.example.com/token", "--", "server"}, "go with --url"},
		{[]string{"--url", "https://mcp.example.com/mcp", "--bearer-token-env", "X", "--oauth-token-url", "https://auth.example.com/token"}, "not both"},
		{[]string{"--url", "https://mcp.example.com/mcp", "--oauth-client-id", "c"}, "need --oauth-token-url"},
		{[]string{"--url", "https://mcp.example.com/mcp", "--oauth-token-url", "https://auth.example.com/token", "--oauth-client-secret-env", "X"}, "needs --oauth-client-id"},
		{[]string{"--url", "https://mcp.example.com/mcp", "--oauth-token-url", "https://auth.example.com/token", "--oauth-client-id", "c"}, "needs one of --oauth-client-secret-file"},
		{[]string{"--url", "https://mcp.example.com/mcp", "--oauth-token-url", "http://auth.example.com/token", "--oauth-client-id", "c", "--oauth-client-secret-file", spaced}, "plain http beyond loopback"},
		{[]string{"--url", "https://mcp.example.com/mcp", "--oauth-token-url", "https://auth.example.com/token", "--oauth-client-id", "c", "--oauth-client-secret-file", spaced}, "OAuth client secret holds a space"},
		{[]string{"--url", "https://mcp.example.com/mcp", "--oauth-token-url", "https://auth.example.com/token", "--oauth-client-id", "c", "--oauth-client-secret-file", empty}, "--oauth-client-secret-file " + empty + " is empty"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		args := append([]string{"--config", filepath.Join(dir, "none.yaml"), "--server", "s"}, c.args...)
		if code := runProxy(args, &stdout, &stderr); code != 1 {
			t.Errorf("proxy %v: exit %d; want 1", c.args, code)
		}
		out := stderr.String()
		if !strings.Contains(out, c.want) {
			t.Errorf("proxy %v: stderr does not say %q:\n%s", c.args, c.want, out)
		}
		for _, secret := range []string{"hunter2", "def-secret-part"} {
			if strings.Contains(out, secret) {
				t.Errorf("proxy %v: stderr shows %q:\n%s", c.args, secret, out)
			}
		}
	}
}
