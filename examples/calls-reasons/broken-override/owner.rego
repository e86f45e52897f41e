# A deliberately buggy override: both definitions of _owner match a write_file
# call on fs and disagree, which is an evaluation error (conflicting values for
# a complete rule) at decision time. The engine fails closed: PolicyError.
package mcpx.overrides

_owner := "storage-team" if input.server == "fs"

_owner := "platform-team" if startswith(input.tool.name, "write_")

deny contains {"code": "Unowned", "message": "every call needs an owning team"} if not _owner
