// Command capgen writes the capabilities file of a wrapper of store.Store
// (store/retry/capabilities_gen.go, internal/fleetsim/capabilities_gen.go)
// from the optional capabilities of package store (the exported interfaces
// of store/capabilities.go): go generate runs it in each wrapper's
// package. After adding a capability, run go generate ./... and write the
// capability's methods in each wrapper (on the type the file declares for
// it, named after the interface, lower-cased, with "Cap": patcherCap for
// Patcher); see package storecap.
package main

import (
	"log"
	"os"

	"github.com/docshard/docshard/internal/storecap"
)

func main() {
	if len(os.Args) != 5 {
		log.Fatal("usage: capgen PACKAGE TYPE STORE_CAPABILITIES_GO OUTPUT_GO")
	}
	names, err := storecap.Names(os.Args[3])
	if err != nil {
		log.Fatal(err)
	}
	text, err := storecap.Generate(os.Args[1], os.Args[2], names)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(os.Args[4], text, 0o644); err != nil {
		log.Fatal(err)
	}
}
