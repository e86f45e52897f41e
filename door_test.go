package mcpxpolicy_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/mcpx/mcpx-policy"

// adapters are the packages that reach the policy only through the SDK.
var adapters = []string{"./cmd/...", "./internal/server", "./internal/proxy"}

// sdk are the SDK's packages: the door (the module's root) and its public
// packages — the value types, the MCP gateway's answers, the bundle
// writer. An adapter may import any of them.
var sdk = map[string]bool{
	module:                true,
	module + "/decision":  true,
	module + "/mcpgate":   true,
	module + "/opabundle": true,
}

// rendering are the internal packages a public package of the SDK other
// than the root may reach: the renderings and the redaction beneath them,
// which hold no state and decide nothing. The engine, the config and the
// stores are the root's alone.
var rendering = map[string]bool{
	module + "/internal/render":    true,
	module + "/internal/redact":    true,
	module + "/internal/regexneed": true,
	module + "/internal/jsonptr":   true,
}

// adapterHelpers are the internal packages an adapter may import besides
// the SDK: the adapters cmd wires together and their own HTTP and wire
// helpers, none of which holds a policy fact
// (docs/decisions/0011-one-door.md). They are held to the same rule.
var adapterHelpers = map[string]bool{
	module + "/internal/server":     true,
	module + "/internal/proxy":      true,
	module + "/internal/metrics":    true,
	module + "/internal/loopback":   true,
	module + "/internal/strictjson": true,
	module + "/internal/jsonptr":    true, // RFC 6901 spelling, which strictjson's errors use
	module + "/internal/trust":      true, // the checks of a file an operator trusts (token, signing key)
	module + "/internal/netcap":     true, // the listeners' cap on open connections
	module + "/internal/buildinfo":  true, // the running build (version, revision), which holds no policy fact
}

// TestAdaptersUseOneDoor: the CLI, the HTTP service and the proxy reach
// every internal package through the SDK, and through nothing else (but
// the helpers recorded above). It walks `go list -deps` from each adapter
// without entering the SDK and names the import path of any other
// internal package it reaches.
func TestAdaptersUseOneDoor(t *testing.T) {
	t.Parallel()
	imports := goList(t, true, adapters...)
	var roots []string
	for path := range imports {
		if strings.HasPrefix(path, module+"/cmd/") || adapterHelpers[path] {
			roots = append(roots, path)
		}
	}
	if len(roots) < len(adapters) {
		t.Fatalf("go list found only %v", roots)
	}
	// via[p] is the package that imports p on the path found first.
	via := map[string]string{}
	queue := roots
	var bad []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range imports[p] {
			if sdk[imp] || !strings.HasPrefix(imp, module+"/") {
				continue // the SDK is the door; the rest is not ours
			}
			if _, seen := via[imp]; seen {
				continue
			}
			via[imp] = p
			if strings.Contains(imp, "/internal/") && !adapterHelpers[imp] {
				bad = append(bad, imp+" (imported by "+p+")")
				continue
			}
			queue = append(queue, imp)
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("an adapter reaches %s around mcpxpolicy: give the SDK the name it needs", b)
	}
}

// TestOnlyTheRootReachesTheEngine: of the SDK's packages, only the root
// — the door — reaches the engine, the config and the stores; its public
// packages reach the renderings at most (rendering), so that a call from
// any adapter goes down through the root and back. It walks their imports
// without entering the root.
func TestOnlyTheRootReachesTheEngine(t *testing.T) {
	t.Parallel()
	var pkgs []string
	for p := range sdk {
		if p != module {
			pkgs = append(pkgs, p)
		}
	}
	sort.Strings(pkgs)
	imports := goList(t, false, pkgs...)
	seen := map[string]bool{}
	queue := pkgs
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range imports[p] {
			if imp == module || seen[imp] || !strings.HasPrefix(imp, module+"/") {
				continue
			}
			seen[imp] = true
			if strings.Contains(imp, "/internal/") && !rendering[imp] {
				t.Errorf("a public package of the SDK reaches %s (imported by %s): only the root may", imp, p)
				continue
			}
			queue = append(queue, imp)
		}
	}
}

// goList is the imports of every package pkgs depend on, by import path,
// from `go list -deps`; ours only keeps the module's packages.
func goList(t *testing.T, ours bool, pkgs ...string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps", "-json=ImportPath,Imports,Module"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Module     *struct{ Path string }
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if !ours || (p.Module != nil && p.Module.Path == module) {
			imports[p.ImportPath] = p.Imports
		}
	}
	return imports
}
