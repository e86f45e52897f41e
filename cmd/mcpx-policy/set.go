package main

import (
	"flag"
	"fmt"
	"strings"
)

// setFlags is the repeatable --set PATH=VALUE of the commands that load a
// config: the highest layer, above the MCPX_POLICY_* environment
// (docs/configuration.md#layering), by config path — policy.write,
// policy.confirmDestructive, policy.unknownArgs, policy.enforce,
// pool.pinTools, servers.NAME.writePolicy, servers.NAME.unknownArgs,
// servers.NAME.enforce, servers.NAME.pinTools. A later --set of the same
// path wins; an unknown path or value is a config error naming "flags".
type setFlags map[string]string

func addSetFlag(fs *flag.FlagSet) setFlags {
	s := setFlags{}
	fs.Var(s, "set", "override a setting, PATH=VALUE (repeatable; the highest layer): policy.write=deny, servers.fs.writePolicy=ask, …")
	return s
}

func (s setFlags) String() string {
	parts := make([]string, 0, len(s))
	for k, v := range s {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (s setFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want --set PATH=VALUE (policy.write=deny), got %q", v)
	}
	s[strings.TrimSpace(k)] = val
	return nil
}

// options is the map LoadOptions.Set takes, nil when no --set was given.
func (s setFlags) options() map[string]string {
	if len(s) == 0 {
		return nil
	}
	return s
}
