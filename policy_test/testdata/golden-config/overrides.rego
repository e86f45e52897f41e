package mcpx.overrides

deny contains {"code": "NoGitDir", "message": "writes under .git are refused"} if {
	contains(input.args.path, "/.git/")
}

ask contains {"code": "Night", "message": "writes to /workspace/night need a look"} if {
	startswith(input.args.path, "/workspace/night")
}
