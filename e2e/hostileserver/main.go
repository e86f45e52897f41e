// Command hostileserver is the hostile-peer kit's MCP server
// (internal/hostile) on stdio, for the end-to-end tests that run it behind
// the built proxy:
//
//	hostileserver SCRIPT.json [EVENTS]
//
// SCRIPT.json is a hostile.Script (tools, tasks, storms, endless pages,
// delays, forged frames, huge results); EVENTS, when given, gets one line
// per event (a call received, a task's status), written before the frame
// that reveals it.
package main

import (
	"encoding/json"
	"log"
	"os"

	"github.com/mcpx/mcpx-policy/internal/hostile"
)

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		log.Fatal("usage: hostileserver SCRIPT.json [EVENTS]")
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	var sc hostile.Script
	if err := json.Unmarshal(raw, &sc); err != nil {
		log.Fatal(err)
	}
	var opts []hostile.ServerOption
	if len(os.Args) == 3 {
		f, err := os.OpenFile(os.Args[2], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			log.Fatal(err)
		}
		opts = append(opts, hostile.WithEvents(f))
	}
	if err := hostile.NewServer(sc, os.Stdout, opts...).Serve(os.Stdin); err != nil {
		log.Fatal(err)
	}
}
