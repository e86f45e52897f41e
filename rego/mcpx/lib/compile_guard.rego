# METADATA
# title: Compile guard
# description: |
#   Not part of any decision: nothing reads this package. OPA v1.22's type
#   checker asks, for every rule, which rules a `with` replaces; when no
#   module has a `with` on a rule the answer is an empty set that it does not
#   keep, so it walks every module again for every rule, and loading a large
#   bundle grows with the square of its size (200 servers and 2,000 rules:
#   27 s on a stock OPA server, 2.8 s with this file). One `with` on a rule
#   here makes the set non-empty, so it is computed once. See
#   docs/decisions/0004-performance.md.
package mcpx.lib.compile_guard

one := 1

replaced if one == 2 with data.mcpx.lib.compile_guard.one as 2
