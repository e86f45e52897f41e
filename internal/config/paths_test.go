package config_test

import (
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// TestHandWrittenPathPrefixWarns: a pattern that reads as a path prefix on
// a path-like argument warns, at the pattern's line, when it lets ".." or
// a sibling folder through, and suggests pathWithin; guarded patterns,
// pathWithin itself, other arguments and deny-lists under not do not.
func TestHandWrittenPathPrefixWarns(t *testing.T) {
	t.Parallel()
	const head = "version: 1\nservers:\n  fs:\n    argumentRules:\n      - id: r\n        tools: [write_file]\n"
	for _, tc := range []struct {
		rule string
		want string // "" for no warning
	}{
		{"        schema:\n          properties:\n            path: {type: string, pattern: \"^/workspace/\"}\n",
			`main.yaml:9: servers.fs.argumentRules[0].schema: rule "r": schema /properties/path: pattern "^/workspace/" reads as a hand-written path prefix, and it accepts "/workspace/../etc/passwd": write pathWithin: [/workspace] instead, which cleans the path, refuses ".." and stops at a separator (docs/argument-rules.md#paths-and-urls)`},
		{"        argument: file_path\n        schema:\n          type: string\n          pattern: \"^/srv/data\"\n",
			`main.yaml:10: servers.fs.argumentRules[0].schema: rule "r": schema /: pattern "^/srv/data" reads as a hand-written path prefix, and it accepts "/srv/data/../etc/passwd" and "/srv/data-evil/x": write pathWithin: [/srv/data] instead, which cleans the path, refuses ".." and stops at a separator (docs/argument-rules.md#paths-and-urls)`},
		{"        argument: dir\n        schema:\n          pattern: \"^/srv\"\n          not: {pattern: \"(^|/)\\\\.\\\\.(/|$)\"}\n",
			`accepts "/srv-evil/x"`},
		{"        argument: path\n        schema:\n          pattern: \"^/workspace/\"\n          not: {pattern: \"(^|/)\\\\.\\\\.(/|$)\"}\n", ""},
		{"        argument: path\n        schema:\n          pattern: \"^/workspace(/|$)\"\n          not: {pattern: \"(^|/)\\\\.\\\\.(/|$)\"}\n", ""},
		{"        argument: path\n        schema: {pathWithin: [/workspace]}\n", ""},
		{"        argument: endpoint\n        schema: {pattern: \"^/api\"}\n", ""},
		{"        argument: path\n        schema: {not: {pattern: \"^/etc\"}}\n", ""},
		{"        schema:\n          properties:\n            paths: {items: {pattern: \"^/workspace/\"}}\n", `schema /properties/paths/items: pattern "^/workspace/"`},
		{"        schema:\n          patternProperties:\n            \"^(source|destination)$\": {pattern: \"^/workspace/\"}\n", `schema /patternProperties/^(source|destination)$: pattern`},
	} {
		c, err, dir := load(t, map[string]string{"main.yaml": head + tc.rule}, config.LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.rule, err)
		}
		var got []string
		for _, w := range c.Warnings {
			got = append(got, rel(dir, w.String()))
		}
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: unexpected warnings %v", tc.rule, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: warnings %q, want one holding %q", tc.rule, got, tc.want)
		}
	}
}
