package mcpx.lib.compile_guard_test

import data.mcpx.lib.compile_guard

test_guard_is_inert if {
	compile_guard.one == 1
	compile_guard.replaced
}
