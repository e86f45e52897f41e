# METADATA
# title: Example operator overrides
# description: |
#   A worked example of docs/overrides.md. Overrides can only
#   add findings, so they only tighten what the seven built-in steps decide:
#   - GitMetadataWrite (deny): no write touches a .git directory, for anyone;
#   - NotMaintainer (ask): a write by a caller not in group "maintainers"
#     (or by an unidentified caller) needs a person's confirmation;
#   - OutsideOfficeHours (ask): a write outside Mon–Fri 09:00–18:00 in
#     Europe/Berlin needs a person's confirmation.
package mcpx.overrides

import data.mcpx.lib.call

# _path_args are the argument keys that carry a file path for the
# filesystem server's write tools (write_file, edit_file, move_file, …).
_path_args := {"path", "source", "destination"}

# A .git path segment anywhere catches /workspace/.git/config, nested
# repositories (/workspace/lib/.git/HEAD) and traversal
# (/workspace/a/../.git/hooks/pre-commit) alike.
deny contains {
	"code": "GitMetadataWrite",
	"message": sprintf("%s would write %s (argument %s) inside a .git directory; repository metadata is changed only by git itself", [call.label, json.marshal(p), key]),
	"argument": key,
	"path": p,
} if {
	call.write
	some key in _path_args
	p := input.args[key]
	is_string(p)
	".git" in split(p, "/")
}

# input.principal is optional: a caller the gateway could not identify is
# not a maintainer, so its writes ask too.
_maintainer if "maintainers" in object.get(object.get(input, "principal", {}), "groups", [])

default _who := "an unidentified caller"

_who := sprintf("principal %s", [json.marshal(input.principal.id)]) if is_string(input.principal.id)

ask contains {
	"code": "NotMaintainer",
	"message": sprintf("%s is a write by %s, who is not in group maintainers; a person confirms writes by non-maintainers", [call.label, _who]),
	"group": "maintainers",
} if {
	call.write
	not _maintainer
}

_office_tz := "Europe/Berlin"

# time.now_ns is the evaluation time; tests pin it with `with time.now_ns as …`.
_now := [time.now_ns(), _office_tz]

_office_hours if {
	time.weekday(_now) in {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}
	[hour, _, _] := time.clock(_now)
	hour >= 9
	hour < 18
}

ask contains {
	"code": "OutsideOfficeHours",
	"message": sprintf("%s is a write outside office hours (Mon–Fri 09:00–18:00 %s); a person confirms it", [call.label, _office_tz]),
	"timezone": _office_tz,
} if {
	call.write
	not _office_hours
}
