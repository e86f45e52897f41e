# METADATA
# title: Tool patterns
# description: |
#   A pattern set (ADR 0001) indexes exact tool names in an object and keeps
#   globs and regexes as RE2 (globs anchored by the compiler), so a lookup is
#   one object access plus one regex.match per distinct non-exact pattern.
package mcpx.lib.patterns

# values returns the values of every pattern in ps that matches name.
values(ps, name) := {v | some v in object.get(object.get(ps, "exact", {}), name, [])} | {v |
	some r in object.get(ps, "regex", [])
	regex.match(r.re, name)
	some v in r.values
}

# matches is true when some pattern in ps that carries values matches name
# (what count(values(ps, name)) > 0 says, without building the set).
matches(ps, name) if count(object.get(object.get(ps, "exact", {}), name, [])) > 0

matches(ps, name) if {
	some r in object.get(ps, "regex", [])
	regex.match(r.re, name)
	count(r.values) > 0
}
