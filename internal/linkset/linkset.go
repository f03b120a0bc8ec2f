// Package linkset holds what the resolver kinds do with their lists of
// collection links: join several into one, each collection once, and check
// that a list names each collection once.
package linkset

import (
	"fmt"
	"strings"

	"github.com/docshard/docshard/link"
	"github.com/docshard/docshard/resolver"
)

// Union returns the links of all lists, each collection once, in
// first-seen order: links that differ only by a leading or trailing slash
// name one collection, and the first spelling is kept.
func Union(lists ...[]string) []string {
	var n int
	for _, l := range lists {
		n += len(l)
	}
	out := make([]string, 0, n)
	seen := make(map[string]struct{}, n)
	for _, l := range lists {
		for _, s := range l {
			id := strings.Trim(s, "/")
			if _, ok := seen[id]; ok {
				continue
			}
			seen[id] = struct{}{}
			out = append(out, s)
		}
	}
	return out
}

// CheckDistinct checks that links is not empty, that each is a
// collection link, and that no collection appears twice (links that differ
// only by a leading or trailing slash name one collection). The error is a
// *resolver.ConfigError for field, naming the index: "collections[3]".
func CheckDistinct(field string, links []string) error {
	if len(links) == 0 {
		return resolver.Invalid(field, nil, "must name at least one collection")
	}
	seen := make(map[string]int, len(links))
	for i, l := range links {
		if err := resolver.ValidateLink(l); err != nil {
			return resolver.InField(fmt.Sprintf("%s[%d]", field, i), err)
		}
		id, _ := link.Canonical(l)
		if j, dup := seen[id]; dup {
			return resolver.Invalid(fmt.Sprintf("%s[%d]", field, i), l, fmt.Sprintf("duplicate link (also %s[%d] %q)", field, j, links[j]))
		}
		seen[id] = i
	}
	return nil
}
