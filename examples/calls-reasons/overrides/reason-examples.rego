# Small, clock-independent overrides used to produce the OverrideDeny and
# OverrideAsk examples in docs/reasons/ (the worked example with tests is
# examples/overrides/).
package mcpx.overrides

import data.mcpx.lib.call

deny contains {
	"code": "EnvFileWrite",
	"message": sprintf("%s would write %s; .env files hold credentials and are never written by agents", [call.label, json.marshal(input.args.path)]),
	"path": input.args.path,
} if {
	call.write
	is_string(input.args.path)
	regex.match(`(^|/)\.env(\.[^/]*)?$`, input.args.path)
}

ask contains {
	"code": "CIConfigChange",
	"message": sprintf("%s changes CI configuration (%s); a person reviews CI changes", [call.label, json.marshal(input.args.path)]),
	"path": input.args.path,
} if {
	call.write
	is_string(input.args.path)
	startswith(input.args.path, "/workspace/.github/")
}
