// Package assemble puts the static policy and a compiled config together
// into what the engine evaluates and a bundle ships. The SDK is its caller;
// the engine's and the benchmarks' tests use it to build the same policy
// the SDK builds.
package assemble

import (
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/rego"
)

// Policy is the static and compiled Rego and, under data.mcpx, the
// compiled config and "secrets", the table of secret patterns the policy
// redacts with (redact.SecretsData, the same table Go redacts with). Like
// the static Rego, the table comes with the binary: the revision names
// the config.
func Policy(c *config.Compiled) engine.Policy {
	mods := rego.Modules()
	for name, src := range c.Modules {
		mods[name] = src
	}
	data := make(map[string]any, len(c.Data)+1)
	for k, v := range c.Data {
		data[k] = v
	}
	data["secrets"] = redact.SecretsData()
	return engine.Policy{Modules: mods, Data: data, Revision: c.Revision, Schemas: c.Schemas}
}
