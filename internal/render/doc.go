// Package render turns one decision into the native form of each surface
// that asks for it: an HTTP status and JSON body for a daemon, a
// CallToolResult (or, for a hidden tool, the JSON-RPC error of an unknown
// tool) for MCP, human text for a terminal, and for an ask the exact call a
// person must confirm.
//
// Every function here is pure: it reads its arguments, touches no clock, no
// file and no network, and is safe for concurrent use. The package imports
// only decision and the standard library; the MCP wire shapes are
// declared here with the field names the MCP Go SDK v1.8.0 puts on the wire,
// so a proxy built on the SDK copies them field for field.
//
// Every rendering is redacted: argument values, violation values, details
// and messages go through the same redaction (by key name and by value
// shape) and long values are cut with their full size shown. See
// docs/surfaces.md.
package render
