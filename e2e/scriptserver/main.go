// Command scriptserver is a scripted MCP stdio server for the end-to-end
// tests of the proxy's strict decoding: it records every line it receives
// and answers from a script, reading each message as the Node and Python
// SDKs do (exact key names; of duplicate keys, the last).
//
//	scriptserver SCRIPT.json RECORD
//
// RECORD gets every line received, one per line, as received. The script:
//
//	{
//	  "tools": [<Tool>, …],     // the tools/list answer
//	  "listError": false,       // answer tools/list with a JSON-RPC error instead
//	  "listDelayMs": 0,         // wait before answering tools/list
//	  "afterListMs": 0,         // then, this long after answering it,
//	  "afterList": [<frame>, …], // send these frames (once)
//	  "swapOnCall": "NAME",      // after answering a tools/call of NAME,
//	  "swapTools": [<Tool>, …]   // list these tools from then on, and send
//	}                            // notifications/tools/list_changed
//
// initialize gets a fixed answer, tools/call a text result
// "ran NAME ARGUMENTS" naming the call as the server read it, any other
// request {}; notifications and answers are only recorded.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"sync"
	"time"
)

type script struct {
	Tools       []json.RawMessage `json:"tools"`
	ListError   bool              `json:"listError"`
	ListDelayMs int               `json:"listDelayMs"`
	AfterListMs int               `json:"afterListMs"`
	AfterList   []json.RawMessage `json:"afterList"`
	SwapOnCall  string            `json:"swapOnCall"`
	SwapTools   []json.RawMessage `json:"swapTools"`
}

var (
	outMu sync.Mutex
	out   = bufio.NewWriter(os.Stdout)
)

func send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		log.Fatal(err)
	}
	outMu.Lock()
	defer outMu.Unlock()
	out.Write(append(b, '\n'))
	out.Flush()
}

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: scriptserver SCRIPT.json RECORD")
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	var sc script
	if err := json.Unmarshal(raw, &sc); err != nil {
		log.Fatal(err)
	}
	record, err := os.OpenFile(os.Args[2], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	var afterOnce sync.Once
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			if _, err := record.Write(line); err != nil {
				log.Fatal(err)
			}
			handle(line, &sc, &afterOnce)
		}
		if err != nil {
			return
		}
	}
}

func handle(line []byte, sc *script, afterOnce *sync.Once) {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return
	}
	id, ok := m["id"]
	var method string
	json.Unmarshal(m["method"], &method)
	if !ok || method == "" {
		return
	}
	answer := func(result any) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	switch method {
	case "initialize":
		answer(map[string]any{
			"protocolVersion": "2025-06-18",
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}},
			"serverInfo":      map[string]any{"name": "scriptserver", "version": "1"},
		})
	case "tools/list":
		time.Sleep(time.Duration(sc.ListDelayMs) * time.Millisecond)
		if sc.ListError {
			send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32603, "message": "scriptserver: no tool list today"}})
		} else {
			tools := sc.Tools
			if tools == nil {
				tools = []json.RawMessage{}
			}
			answer(map[string]any{"tools": tools})
		}
		if len(sc.AfterList) > 0 {
			afterOnce.Do(func() {
				go func() {
					time.Sleep(time.Duration(sc.AfterListMs) * time.Millisecond)
					for _, f := range sc.AfterList {
						send(f)
					}
				}()
			})
		}
	case "tools/call":
		var p map[string]json.RawMessage
		json.Unmarshal(m["params"], &p)
		var name string
		json.Unmarshal(p["name"], &name)
		args := p["arguments"]
		if args == nil {
			args = json.RawMessage("{}")
		}
		answer(map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("ran %s %s", name, args)}}})
		if sc.SwapOnCall != "" && name == sc.SwapOnCall {
			sc.Tools, sc.SwapOnCall = sc.SwapTools, ""
			send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		}
	default:
		answer(map[string]any{})
	}
}
