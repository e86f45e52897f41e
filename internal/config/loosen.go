package config

// strictness orders the values of each kind of setting, the strictest
// highest, by kind name: the orders of the settings table (settings.go).
var strictness = func() map[string]map[string]int {
	m := make(map[string]map[string]int, len(settingKinds))
	for _, k := range settingKinds {
		m[k.name] = k.order
	}
	return m
}()

// The kinds of setting whose values have a strictness order, for
// CompareStrictness.
const (
	// KindWrite is a write mode (policy.write, writePolicy): deny > ask > allow.
	KindWrite = "write"
	// KindUnknownArgs is an unknown-arguments mode: reject > warn > off.
	KindUnknownArgs = "unknownArgs"
	// KindBool is a flag whose true is the stricter value
	// (confirmDestructive): "true" > "false".
	KindBool = "bool"
	// KindEnforce is an enforcement mode (policy.enforce, a server's
	// enforce): enforce > shadow, since shadow lets a call the policy
	// refuses go ahead.
	KindEnforce = "enforce"
	// KindPin is a pinTools mode: deny > ask > off.
	KindPin = "pin"
)

// CompareStrictness compares two values of one kind of setting in the
// order the loader warns by: 1 when to is stricter than from (a
// tightening), -1 when it is less strict (a loosening), 0 when they are
// as strict. ok is false when the kind or either value is not one the
// order knows. Safe for concurrent use.
func CompareStrictness(kind, from, to string) (cmp int, ok bool) {
	order, ok := strictness[kind]
	if !ok {
		return 0, false
	}
	a, okA := order[from]
	b, okB := order[to]
	if !okA || !okB {
		return 0, false
	}
	switch {
	case b > a:
		return 1, true
	case b < a:
		return -1, true
	}
	return 0, true
}

// inForce is a setting's value before a layer, and where it came from.
type inForce struct {
	value string
	at    string // "file:line", "env $NAME", "flags" or "default"
}

func held(s *setting) inForce { return inForce{value: s.value, at: s.at.String()} }
