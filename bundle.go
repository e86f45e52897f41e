package mcpxpolicy

import (
	"encoding/json"
	"fmt"

	"github.com/mcpx/mcpx-policy/internal/engine"
)

// BundleFiles returns the whole policy for a config as the files of a
// standard OPA bundle: ".manifest" (revision, roots ["mcpx"], rego_version
// 1), "data.json" ({"mcpx": compiled data}), the static Rego under mcpx/
// and the generated and override Rego under their compiled names. An
// override the engine would refuse (docs/overrides.md, "What overrides may
// not do") is an error here too. Package opabundle writes them as a
// folder or an archive and signs them.
func BundleFiles(opts Options) (map[string][]byte, error) {
	compiled, err := compileConfig(opts)
	if err != nil {
		return nil, err
	}
	p := policyOf(compiled)
	if err := engine.CheckOverrides(p.Modules); err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	files := map[string][]byte{}
	for name, src := range p.Modules {
		files[name] = []byte(src)
	}
	data, err := json.MarshalIndent(map[string]any{"mcpx": p.Data}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: bundle data: %w", err)
	}
	files["data.json"] = append(data, '\n')
	manifest, err := json.MarshalIndent(map[string]any{
		"revision":     p.Revision,
		"roots":        []string{"mcpx"},
		"rego_version": 1,
		"metadata":     map[string]any{"generator": "mcpx-policy"},
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	files[".manifest"] = append(manifest, '\n')
	return files, nil
}
