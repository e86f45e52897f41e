package engine

import (
	"sync"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// A gateway's refusals repeat their scalar values: a flag that must be
// false, a mode outside the enum, a count over its maximum. What the
// refusal builder computes for such a value — the package's violations
// (the Explainer's walk, checked against santhosh's verdict) and their
// rendering for the rule — depends on nothing but the rule, the package,
// the pointer and the value, so it is kept per scalar value, as the
// predicates keep santhosh's verdicts (predicates.valid). A value that is
// not a scalar, or a string longer than maxScalarKey bytes, is computed
// per call. The memo holds at most memoSize findings and starts over when
// full, so it keeps the values a gateway sees now.

// findingKey is a rule's value: the rule id, its pointer and the scalar
// (its package inside).
type findingKey struct {
	id, pointer string
	value       scalarKey
}

// finding is what a rule's value makes: its violations (none when
// valid), or a difference (santhosh and the Explainer disagree: the
// Rego decides); and, rendered once, the reason's parts.
type finding struct {
	vs         []schemarego.Violation
	difference bool

	once    sync.Once
	phrases []string
	out     []decision.Violation
	origin  string
	ok      bool
}

// findings is the memo of findings.
type findings struct {
	mu sync.RWMutex
	m  map[findingKey]*finding
}

func (f *findings) get(k findingKey) *finding {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.m[k]
}

// put keeps fd for k and returns the finding kept (another goroutine's if
// it was first).
func (f *findings) put(k findingKey, fd *finding) *finding {
	f.mu.Lock()
	defer f.mu.Unlock()
	if prev := f.m[k]; prev != nil {
		return prev
	}
	if f.m == nil || len(f.m) >= memoSize {
		f.m = make(map[findingKey]*finding)
	}
	f.m[k] = fd
	return fd
}

// rendered is the finding's reason parts for rule id (ruleParts), computed
// once.
func (fd *finding) rendered(r *refusals, id string) ([]string, []decision.Violation, string, bool) {
	fd.once.Do(func() {
		fd.phrases, fd.out, fd.origin, fd.ok = r.ruleParts(id, fd.vs)
	})
	return fd.phrases, fd.out, fd.origin, fd.ok
}
