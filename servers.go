package mcpxpolicy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// Servers returns the names of the servers the current config configures
// (its `servers:` keys), sorted. A call to any other server is decided by
// the pool's settings alone: none of a server's hidden tools, rules or
// write mode apply to it. Safe for concurrent use.
func (e *Engine) Servers() []string { return configuredServers(e.cur.Load().compiled) }

// Configured reports whether the current config has servers.NAME.
func (e *Engine) Configured(server string) bool {
	return slices.Contains(e.Servers(), server)
}

// UnconfiguredWarning is the warning for a call, a catalog or a proxy
// that names a server the config does not configure: that only the pool's
// settings apply to it, and which servers the config has.
func UnconfiguredWarning(server string, configured []string) string {
	known := "none"
	if len(configured) > 0 {
		known = strings.Join(configured, ", ")
	}
	return fmt.Sprintf("server %q is not configured (no servers.%s in the config): none of a server's hidden tools, rules or write mode apply to it, only the pool's; configured servers: %s",
		server, server, known)
}

func configuredServers(c *config.Compiled) []string {
	cfg, _ := c.Data["config"].(map[string]any)
	servers, _ := cfg["servers"].(map[string]any)
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// catalogWarnings are the warnings of a catalog that names servers the
// config does not configure, one per server, prefixed with the catalog
// file.
func catalogWarnings(c *config.Compiled, catalogPath string) []string {
	if c.Catalog == nil {
		return nil
	}
	configured := configuredServers(c)
	var out []string
	for _, s := range c.Catalog.Servers() {
		if !slices.Contains(configured, s) {
			out = append(out, catalogPath+": "+UnconfiguredWarning(s, configured))
		}
	}
	return out
}

// ArgumentRule is one argument rule that applies to a tool, as the config
// wrote it: what `proxy --publish-rules` adds to the tool's inputSchema.
type ArgumentRule = config.RuleInfo

// ArgumentRules lists the argument rules of the current config that apply
// to tool on server (the pool's and the server's). The schemas are shared:
// copy one before changing it. Safe for concurrent use.
func (e *Engine) ArgumentRules(server, tool string) []ArgumentRule {
	return e.cur.Load().compiled.RulesFor(server, tool)
}
