package hashring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/docshard/docshard/resolver"
)

// DotNetResolver is the .NET DocumentDB SDK's HashPartitionResolver as
// Json.NET serialised it (the "serialise the resolver and save it" advice of
// its documentation). Members other than these three (the key extractor,
// which is code) are ignored.
type DotNetResolver struct {
	PartitionKeyPropertyName          string   `json:"PartitionKeyPropertyName"`
	CollectionLinks                   []string `json:"CollectionLinks"`
	NumberOfVirtualNodesPerCollection int      `json:"NumberOfVirtualNodesPerCollection"`
}

// FromDotNet builds the hash resolver that places every key exactly where
// the .NET SDK's serialised HashPartitionResolver in data put it. The
// .NET ring hashed each collection's link with String.GetHashCode, whose
// value depends on whether the process was 64-bit or 32-bit, so the caller
// must say which: flavour is "x64" or "x86" (or "dotnet-x64", "dotnet-x86").
// Links are kept verbatim (a trailing slash changes the ring); no
// NumberOfVirtualNodesPerCollection means the SDK's default, 128. Errors
// name the member. Cost: New's.
func FromDotNet(data []byte, flavour string) (*Resolver, error) {
	hash := flavour
	if !strings.HasPrefix(hash, "dotnet-") {
		hash = "dotnet-" + hash
	}
	if hash != FlavourDotnetX64 && hash != FlavourDotnetX86 {
		return nil, resolver.Invalid("flavour", flavour, `want "x64" or "x86": the .NET SDK placed keys differently in 64-bit and 32-bit processes, so say which ran it`)
	}
	var d DotNetResolver
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		return nil, resolver.Invalid("", nil, fmt.Sprintf("not the JSON of a .NET HashPartitionResolver: %v", err))
	}
	if len(d.CollectionLinks) == 0 {
		return nil, resolver.Invalid("CollectionLinks", nil, "missing or empty")
	}
	if d.NumberOfVirtualNodesPerCollection < 0 {
		return nil, resolver.Invalid("NumberOfVirtualNodesPerCollection", d.NumberOfVirtualNodesPerCollection, "must be positive")
	}
	if d.PartitionKeyPropertyName == "" {
		return nil, resolver.Invalid("PartitionKeyPropertyName", nil, "missing: a resolver built with a key-extractor function cannot be imported (the function is code); give the property name the function read")
	}
	key, err := resolver.ParseKeyDef(propertyPath(d.PartitionKeyPropertyName))
	if err != nil {
		return nil, resolver.Invalid("PartitionKeyPropertyName", d.PartitionKeyPropertyName, err.Error())
	}
	vnodes := d.NumberOfVirtualNodesPerCollection
	if vnodes == 0 {
		vnodes = DefaultVirtualNodesLegacy
	}
	return New(d.CollectionLinks, &Options{PartitionKey: key, VirtualNodes: vnodes, Hash: hash})
}

var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// propertyPath is the partition-key path of a top-level property name:
// "/name", or quoted when the name is not a plain identifier.
func propertyPath(name string) string {
	if plainName.MatchString(name) {
		return "/" + name
	}
	return "/" + strconv.Quote(name)
}
