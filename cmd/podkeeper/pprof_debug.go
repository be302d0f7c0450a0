//go:build pkpprof

package main

// Built with -tags pkpprof (development only), the agent serves net/http/pprof on
// $PODKEEPER_PPROF (default 127.0.0.1:6060), for memory and CPU profiles.

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	addr := os.Getenv("PODKEEPER_PPROF")
	if addr == "" {
		addr = "127.0.0.1:6060"
	}
	go func() { _ = http.ListenAndServe(addr, nil) }()
}
