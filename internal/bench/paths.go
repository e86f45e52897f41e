package bench

import (
	"fmt"
	"maps"
	"math/rand/v2"

	"github.com/mcpx/mcpx-policy/decision"
)

// The path form of a workload, for what a path-checked call costs
// (docs/performance.md, "Path-checked calls"): the same config, catalog
// and calls, but every rule that confines "path" with a regular
// expression (pattern "^/(workspace|tmp)/") confines it with pathWithin
// instead. The two accept and refuse the same generated paths, so the
// two forms decide every generated call alike (TestPathFormDecidesAlike)
// and their figures compare the same work.

// workspacePattern is the regular expression of the workspace rules (see
// rule), and workspaceRoots the roots that mean the same for the paths
// the workload generates.
const workspacePattern = "^/(workspace|tmp)/"

var workspaceRoots = []any{"/workspace", "/tmp"}

// PathForm returns a copy of w whose workspace rules use pathWithin. Its
// shape's name gets "-paths" appended. It panics if w has no such rule.
func (w *Workload) PathForm() *Workload {
	out := *w
	out.Shape.Name += "-paths"
	out.Rules = make([]Rule, len(w.Rules))
	n := 0
	for i, r := range w.Rules {
		out.Rules[i] = r
		props, _ := r.Schema["properties"].(map[string]any)
		path, _ := props["path"].(map[string]any)
		if path["pattern"] != workspacePattern {
			continue
		}
		p := maps.Clone(path)
		delete(p, "pattern")
		p["pathWithin"] = workspaceRoots
		s := maps.Clone(r.Schema)
		s["properties"] = map[string]any{"path": p}
		out.Rules[i].Schema = s
		n++
	}
	if n == 0 {
		panic("bench: the workload has no workspace rule to write in path form")
	}
	return &out
}

// pathTricks are paths a prefix check lets through and pathWithin
// refuses; %d is the call's number.
var pathTricks = []string{
	"/workspace/../etc/cron.d/x%d",
	"/workspace/./../etc/passwd%d",
	"/workspace//../etc/passwd%d",
	"/workspace/a/../../etc/passwd%d",
	"/workspace-evil/x%d",
	"/tmp/../etc/shadow%d",
}

// TrickCall is call i of w with its path replaced by one of the tricks:
// a call every path-form rule refuses.
func (w *Workload) TrickCall(i int) decision.Call {
	c := w.Call(i)
	args := maps.Clone(c.Args)
	rng := rand.New(rand.NewPCG(uint64(i), 0x74726963))
	args["path"] = fmt.Sprintf(pathTricks[rng.IntN(len(pathTricks))], i)
	c.Args = args
	return c
}
