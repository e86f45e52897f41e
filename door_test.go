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
	module + "/internal/buildinfo":  true,
}

// TestAdaptersUseOneDoor: the CLI, the HTTP service and the proxy reach
// every internal package through mcpxpolicy, the SDK, and through nothing
// else (but the helpers recorded above). It walks `go list -deps` from
// each adapter without entering the SDK and names the import path of any
// other internal package it reaches.
func TestAdaptersUseOneDoor(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json=ImportPath,Imports,Module"}, adapters...)...)
	out, err := cmd.Output()
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
		if p.Module != nil && p.Module.Path == module {
			imports[p.ImportPath] = p.Imports
		}
	}
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
			if imp == module || !strings.HasPrefix(imp, module+"/") {
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
