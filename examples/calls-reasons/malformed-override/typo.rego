# A deliberately malformed override: its findings spell "msg" instead of
# "message". They still count (docs/overrides.md): the deny stays a deny and
# the ask an ask, with override_code MalformedFinding.
package mcpx.overrides

deny contains {"code": "NoEtc", "msg": "no writes under /etc"} if startswith(input.args.path, "/etc/")

ask contains {"code": "Notes", "msg": "notes are reviewed"} if endswith(input.args.path, ".md")
