// Command capgen writes store/retry/capabilities_gen.go from the optional
// capabilities of package store (the exported interfaces of
// store/capabilities.go): go generate ./store/retry runs it. After adding
// a capability, run it and write the capability's methods in
// store/retry/capabilities.go (a type named after the interface,
// lower-cased, with "Cap": patcherCap for Patcher).
package main

import (
	"log"
	"os"

	"github.com/docshard/docshard/store/retry/internal/capabilities"
)

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: capgen STORE_CAPABILITIES_GO OUTPUT_GO")
	}
	names, err := capabilities.Names(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	text, err := capabilities.Generate(names)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(os.Args[2], text, 0o644); err != nil {
		log.Fatal(err)
	}
}
