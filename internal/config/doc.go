// Package config turns operator configuration into what the policy reads:
// it loads the layered YAML configuration (docs/configuration.md), validates it strictly,
// and compiles it into the data document under data.mcpx, the generated
// argument-rule packages and the operator override modules (ADR 0001).
//
// Every problem in the configuration is a *ConfigError naming the file and
// line; Load collects all of them and returns them together as
// ConfigErrors. Nothing in this package is global state: Load and
// CheckCatalog are safe for concurrent use, and a Compiled value is
// read-only once returned.
package config
